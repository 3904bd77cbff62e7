"""Which cache-node labels go on which node (controller/cachelabels.py), in upstream's names."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller import cachelabels
from controller.cachenodes import runtime_of, trim_worker_pod
from kubectl_fluid.api import names


def pod(
    node: str | None, *, deleting: bool = False, phase: str = "Running", placement: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": "ns", "labels": {names.LABEL_CACHERUNTIME_NAME: "ds"}}
    if placement:
        meta["labels"][names.LABEL_DATASET_PLACEMENT] = placement
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


def test_upstreams_label_names_for_a_cache_runtime() -> None:
    assert names.cache_runtime_node_label("default", "hbase") == "fluid.io/s-cache-default-hbase"
    assert names.cache_node_label("default", "hbase") == "fluid.io/s-default-hbase"
    assert names.cache_total_capacity_label("default", "hbase") == "fluid.io/s-h-cache-t-default-hbase"
    assert names.exclusive_label_value("default", "hbase") == "default_hbase"
    assert names.pod_sched_label("hbase") == "fluid.io/dataset.hbase.sched"


def test_long_names_fit_a_label_key() -> None:
    long = "d" * 63
    for key in (names.cache_runtime_node_label("n" * 63, long), names.cache_total_capacity_label("n", long)):
        assert key.startswith("fluid.io/s-")
        assert len(key.split("/", 1)[1]) <= 63


def test_sched_label_dataset_matches_upstreams_regex() -> None:
    assert names.sched_label_dataset("fluid.io/dataset.hbase.sched") == "hbase"
    assert names.sched_label_dataset("fluid.io/dataset.a.b-c.sched") == "a.b-c"
    assert names.sched_label_dataset("fluid.io/dataset..sched") == ""
    for key in (
        "fluid.io/dataset.sched",
        "fluid.io/dataset",
        "fluid.io/dataset.x_y.sched",
        "x/dataset.a.sched",
    ):
        assert names.sched_label_dataset(key) is None


def test_worker_nodes_are_those_of_live_bound_pods() -> None:
    pods = [pod("n1"), pod("n2"), pod(None), pod("n3", deleting=True), pod("n4", phase="Failed"), pod("n1")]
    assert cachelabels.worker_nodes(pods) == {"n1", "n2"}


def test_placement_is_exclusive_unless_the_workers_say_shared() -> None:
    assert cachelabels.is_exclusive([])
    assert cachelabels.is_exclusive([pod("n", placement="Exclusive")])
    assert not cachelabels.is_exclusive([pod("n", placement="Shared")])


def test_label_sets_upstreams_labels_and_counts_the_dataset() -> None:
    change = cachelabels.label("n1", {}, "default", "hbase", exclusive=True)
    assert change is not None
    assert change.labels == {
        "fluid.io/s-cache-default-hbase": "true",
        "fluid.io/s-default-hbase": "true",
        "fluid.io/s-h-cache-t-default-hbase": "0B",
        "fluid.io/dataset-num": "1",
        "fluid_exclusive": "default_hbase",
    }
    shared = cachelabels.label("n1", {"fluid.io/dataset-num": "2"}, "default", "hbase", exclusive=False)
    assert shared is not None
    assert shared.labels["fluid.io/dataset-num"] == "3"
    assert "fluid_exclusive" not in shared.labels
    on_node = {k: v for k, v in change.labels.items() if v is not None}
    assert cachelabels.label("n1", on_node, "default", "hbase", exclusive=True) is None  # already


def test_unlabel_takes_only_its_own_marks_off() -> None:
    assert cachelabels.unlabel("n1", {"fluid.io/dataset-num": "1"}, "default", "hbase") is None
    on_node = {
        "fluid.io/s-cache-default-hbase": "true",
        "fluid.io/s-default-hbase": "true",
        "fluid.io/s-h-cache-t-default-hbase": "0B",
        "fluid.io/dataset-num": "2",
        "fluid_exclusive": "other_ds",
        "kubernetes.io/hostname": "n1",
    }
    change = cachelabels.unlabel("n1", on_node, "default", "hbase")
    assert change is not None
    assert change.labels == {
        "fluid.io/s-cache-default-hbase": None,
        "fluid.io/s-default-hbase": None,
        "fluid.io/s-h-cache-t-default-hbase": None,
        "fluid.io/dataset-num": "1",
    }
    last = cachelabels.unlabel(
        "n1", {**on_node, "fluid.io/dataset-num": "1", "fluid_exclusive": "default_hbase"}, "default", "hbase"
    )
    assert last is not None
    assert last.labels["fluid.io/dataset-num"] is None
    assert last.labels["fluid_exclusive"] is None


def test_merge_patch_is_guarded_by_the_resource_version() -> None:
    change = cachelabels.Change("n1", {"a": "1", "b": None})
    assert change.merge_patch("42") == {
        "metadata": {"resourceVersion": "42", "labels": {"a": "1", "b": None}}
    }


def apply(labels: dict[str, str], change: cachelabels.Change | None) -> dict[str, str]:
    out = dict(labels)
    for key, value in (change.labels if change else {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


datasets = st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True)


@given(datasets, st.data())
def test_the_count_follows_the_datasets_on_the_node(labelled: list[str], data: st.DataObject) -> None:
    """Labelling and unlabelling in any order, twice or not, leaves dataset-num equal to the number of
    datasets on the node (absent at 0), and no mark of a dataset that left."""
    node: dict[str, str] = {}
    on: set[str] = set()
    steps = data.draw(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.booleans()), max_size=20))
    for ds in labelled:
        steps.insert(0, (ds, True))
    for ds, add in steps:
        if add:
            node = apply(node, cachelabels.label("n", node, "ns", ds, exclusive=False))
            on.add(ds)
        else:
            node = apply(node, cachelabels.unlabel("n", node, "ns", ds))
            on.discard(ds)
        assert node.get(names.LABEL_DATASET_NUM) == (str(len(on)) if on else None)
        assert {k for k in node if k.startswith("fluid.io/s-cache-")} == {
            f"fluid.io/s-cache-ns-{d}" for d in on
        }


@given(st.sets(st.sampled_from("abcdef")), st.sets(st.sampled_from("abcdef")))
def test_plan_is_the_difference(desired: set[str], labelled: set[str]) -> None:
    add, remove = cachelabels.plan(desired, labelled)
    assert set(add) == desired - labelled
    assert set(remove) == labelled - desired
    assert add == sorted(add)
    assert remove == sorted(remove)


def test_a_worker_pod_is_trimmed_to_what_placement_reads() -> None:
    full = pod("n1", placement="Shared")
    full["metadata"]["labels"]["other"] = "x"
    full["metadata"]["uid"] = "u"
    full["spec"]["containers"] = [{"name": "c"}]
    full["status"]["conditions"] = [{"type": "Ready"}]
    trim_worker_pod(full)
    assert full == {
        "metadata": {
            "name": "w",
            "namespace": "ns",
            "labels": {names.LABEL_CACHERUNTIME_NAME: "ds", names.LABEL_DATASET_PLACEMENT: "Shared"},
        },
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    assert runtime_of(full) == ("ns", "ds")
    assert runtime_of({"metadata": {"namespace": "ns", "labels": {}}}) is None
