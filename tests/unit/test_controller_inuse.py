"""Who holds back a deletion (controller/inuse.py): the pods that use a Dataset by each of its three
ways, the runtimes that name a class, and messages that list a few names and the count."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.classguard import guard_step
from controller.inuse import (
    SHOWN,
    ClassIndex,
    class_in_use_message,
    dataset_in_use_message,
    dataset_users,
    pvc_users,
    shown,
    uses_dataset,
)
from kubectl_fluid.api import names


def pod(
    name: str,
    volumes: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    phase: str = "Running",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"volumes": volumes or []},
        "status": {"phase": phase},
    }


def injected(name: str, dataset: str) -> dict[str, Any]:
    """A clientless pod as the webhook's default profile leaves it: the ConfigMap volume, no
    datasets-in-use annotation, no PVC."""
    cm = names.runtime_config_configmap(dataset)
    return pod(name, [{"name": cm, "configMap": {"name": cm}}])


def claiming(name: str, claim: str) -> dict[str, Any]:
    return pod(name, [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])


def test_a_pod_uses_a_dataset_by_its_pvc_its_injected_config_or_the_webhooks_record() -> None:
    assert uses_dataset(claiming("a", "demo2"), "demo2")
    assert uses_dataset(injected("b", "demo2"), "demo2")
    assert uses_dataset(pod("c", annotations={names.ANNOTATION_DATASETS_IN_USE: "demo, demo2"}), "demo2")
    assert not uses_dataset(injected("d", "demo"), "demo2")
    assert not uses_dataset(pod("e", annotations={names.ANNOTATION_DATASETS_IN_USE: "demo20"}), "demo2")
    assert not uses_dataset(pod("f", annotations={names.ANNOTATION_DATASET: "demo2"}), "demo2")
    assert not uses_dataset(claiming("g", "other"), "demo2")


def test_the_runtimes_own_pods_are_not_users_though_they_mount_its_config() -> None:
    master = injected("demo2-master-0", "demo2")
    master["metadata"]["labels"] = {names.LABEL_CACHERUNTIME_NAME: "demo2"}
    assert not uses_dataset(master, "demo2")
    other = injected("x-master-0", "demo2")
    other["metadata"]["labels"] = {names.LABEL_CACHERUNTIME_NAME: "x"}
    assert uses_dataset(other, "demo2")


def test_finished_pods_use_nothing() -> None:
    for phase in ("Succeeded", "Failed"):
        assert not uses_dataset({**injected("a", "ds"), "status": {"phase": phase}}, "ds")
        assert pvc_users([{**claiming("a", "ds"), "status": {"phase": phase}}], "ds") == []
    assert uses_dataset({**injected("a", "ds"), "status": {}}, "ds")  # Pending: no phase yet


def test_the_dataset_users_are_sorted_names_and_the_pvc_users_only_those_that_mount_it() -> None:
    pods = [injected("two", "demo2"), claiming("one", "demo2"), injected("zed", "demo"), pod("bare")]
    assert dataset_users(pods, "demo2") == ["one", "two"]
    assert pvc_users(pods, "demo2") == ["one"]


def test_a_class_is_used_by_the_runtimes_that_name_it_as_the_watch_tells() -> None:
    index = ClassIndex()
    assert index.update(("b", "x"), "mooncake") is None
    assert index.update(("a", "y"), "mooncake") is None
    assert index.update(("a", "z"), "curvine") is None
    assert index.users("mooncake") == ["a/y", "b/x"]
    assert index.update(("b", "x"), "curvine") == "mooncake"  # moved to another class
    assert index.update(("a", "y"), None) == "mooncake"  # deleted
    assert index.users("mooncake") == []
    assert index.users("curvine") == ["a/z", "b/x"]
    assert index.users("gone") == []


@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("xy"), st.sampled_from([None, "c1", "c2"]))))
def test_the_index_holds_each_runtimes_last_word(events: list[tuple[str, str, str | None]]) -> None:
    index = ClassIndex()
    last: dict[tuple[str, str], str | None] = {}
    for namespace, name, cls in events:
        assert index.update((namespace, name), cls) == last.get((namespace, name))
        last[(namespace, name)] = cls
    for cls in ("c1", "c2"):
        assert index.users(cls) == sorted(f"{ns}/{n}" for (ns, n), c in last.items() if c == cls)


@given(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True), min_size=1, max_size=20, unique=True))
def test_shown_lists_a_few_names_and_counts_the_rest(items: list[str]) -> None:
    text = shown(items)
    for item in items[:SHOWN]:
        assert item in text
    if len(items) > SHOWN:
        assert text.endswith(f" and {len(items) - SHOWN} more ({len(items)})")
    else:
        assert text == ", ".join(items)


def test_the_messages_name_the_object_the_users_their_count_and_what_to_do() -> None:
    message = dataset_in_use_message("demo2", ["two"])
    assert message.startswith("deletion waits for 1 pod(s) that use Dataset demo2")
    assert ": two;" in message
    assert "delete those pods" in message
    message = class_in_use_message("mooncake", ["ns/a", "ns/b"])
    assert '"mooncake" is being deleted' in message
    assert "2 CacheRuntime(s)" in message
    assert "ns/a, ns/b;" in message
    assert "runtimeClassName" in message


@given(st.booleans(), st.booleans(), st.lists(st.just("ns/rt"), max_size=2))
def test_a_class_is_held_exactly_while_runtimes_use_it(deleting: bool, held: bool, users: list[str]) -> None:
    step = guard_step(deleting, held, users)
    # After the step, the finalizer is on iff the class is used (or it could not be added any more).
    after = {"add": True, "remove": False}.get(step or "", held)
    assert after == bool(users) or (deleting and users and not held)
    assert (step == "hold") == (deleting and held and bool(users))
