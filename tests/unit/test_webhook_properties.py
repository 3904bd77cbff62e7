"""Properties of admission over random pods: the patch reproduces the mutated pod, the given pod is
never changed (copy-on-write holds), and admitting the result again changes nothing."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_fluid.api import names
from tests.unit.webhook_samples import NS, dataset, dataset_pvc, default_profile, runtime_config
from webhook.lookup import StaticLookup
from webhook.patch import apply_patch, json_patch
from webhook.pipeline import admit

PROFILE = default_profile()
DATASETS = ["ds1", "ds-1", "ds-2", "a"]
LOOKUP = StaticLookup(
    [
        *(obj for ds in DATASETS for obj in (dataset(ds), runtime_config(ds))),
        dataset_pvc("ds1"),
        dataset_pvc("a"),
    ]
)

# Names that collide with what the injector writes, mixed with unrelated ones.
VOLUME_NAMES = ["data", "tmp", *(names.runtime_config_volume(ds) for ds in DATASETS)]
MOUNT_PATHS = ["/data", "/tmp", "/etc/fluid/config/ds1", "/etc/fluid/config/ds-1/", "/etc/fluid/config/a/"]
ENV_NAMES = ["MODE", *(env for ds in DATASETS for env in names.runtime_config_env_names(ds))]
CONTAINER_NAMES = ["app", "side", "init", "fluid-fuse", "fluid-fuse-0"]
KEY_CHARS = "ab/~01."

text = st.text("xyz~/ ", max_size=4)


def _maybe_list(element: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # Absent, null, empty or not: a patch has to add a missing parent whole.
    return st.one_of(st.just(None), st.lists(element, max_size=3))


env_var = st.fixed_dictionaries({"name": st.sampled_from(ENV_NAMES)}, optional={"value": text})
mount = st.fixed_dictionaries(
    {"name": st.sampled_from(VOLUME_NAMES), "mountPath": st.sampled_from(MOUNT_PATHS)},
    optional={"readOnly": st.booleans(), "mountPropagation": st.sampled_from(["None", "Bidirectional"])},
)
volume = st.one_of(
    st.fixed_dictionaries({"name": st.sampled_from(VOLUME_NAMES), "emptyDir": st.just({})}),
    # A claim volume keeps a name of its own: one named like an injected volume is replaced (SPEC),
    # and when that claim was the only way the pod named its dataset, a later pass rightly sees
    # none, so "the plugins are idempotent" cannot be asked of that pod.
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["data", "tmp"]),
            "persistentVolumeClaim": st.fixed_dictionaries(
                {"claimName": st.sampled_from(["ds1", "a", "plain"])}
            ),
        }
    ),
)


@st.composite
def containers(draw: st.DrawFn) -> list[dict[str, Any]]:
    result = []
    for name in draw(st.lists(st.sampled_from(CONTAINER_NAMES), max_size=3, unique=True)):
        container: dict[str, Any] = {"name": name}
        for key, element in (("env", env_var), ("volumeMounts", mount)):
            items = draw(_maybe_list(element))
            if items is not None:
                container[key] = items
        result.append(container)
    return result


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    labels = draw(st.dictionaries(st.text(KEY_CHARS, min_size=1, max_size=5), text, max_size=3))
    group_label = draw(st.sampled_from([names.LABEL_INJECT, names.LABEL_SERVERLESS_INJECT, None]))
    if group_label:
        labels[group_label] = names.TRUE
    meta: dict[str, Any] = {"generateName": "p-"}
    keep_empty_labels = draw(st.booleans())
    if labels or keep_empty_labels:
        meta["labels"] = labels
    chosen = draw(st.lists(st.sampled_from([*DATASETS, " ", ""]), max_size=4))
    annotations = draw(st.dictionaries(st.text(KEY_CHARS, min_size=1, max_size=5), text, max_size=2))
    if chosen:
        annotations[draw(st.sampled_from([names.ANNOTATION_DATASET, names.ANNOTATION_DATASETS]))] = ",".join(
            chosen
        )
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"containers": draw(containers())}
    if draw(st.booleans()):
        spec["initContainers"] = draw(containers())
    volumes = draw(_maybe_list(volume))
    if volumes is not None:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _canonical(doc: Any) -> str:
    # Strict JSON equality: key order is irrelevant, but true is not 1.
    return json.dumps(doc, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(pods())
def test_patch_reproduces_the_mutation_and_a_second_admission_is_a_no_op(pod: dict[str, Any]) -> None:
    before = copy.deepcopy(pod)
    outcome = admit(pod, NS, LOOKUP, PROFILE)
    assert pod == before
    assert outcome.denied is None
    if outcome.patch is None:
        assert outcome.mutated is None
        return
    assert outcome.patch
    mutated = apply_patch(pod, outcome.patch)
    assert _canonical(mutated) == _canonical(outcome.mutated)
    again = admit(mutated, NS, LOOKUP, PROFILE)
    assert again.patch is None, again.patch
    # Without the done label, only the label is added back.
    labels = mutated["metadata"].get("labels") or {}
    if labels.pop(names.LABEL_INJECT_DONE, None) is not None:
        ops = admit(mutated, NS, LOOKUP, PROFILE).patch
        assert ops is not None
        assert [op["path"] for op in ops] == ["/metadata/labels/done.sidecar.fluid.io~1inject"]


LATE_NAMES = ["late", "later", "fluid-fuse-late"]


@settings(max_examples=300, deadline=None)
@given(pods(), st.lists(st.sampled_from(LATE_NAMES), unique=True, min_size=1), st.booleans())
def test_reinvoked_after_containers_were_added_only_those_get_the_config(
    pod: dict[str, Any], late: list[str], done_label_first: bool
) -> None:
    """reinvocationPolicy IfNeeded (issue 27, item 9): another webhook added containers after ours;
    the second admission gives each of them (but fluid-fuse*) what the others got, and nothing
    else changes. A pod carrying the done label from the start is treated the same."""
    if done_label_first:
        pod["metadata"].setdefault("labels", {})[names.LABEL_INJECT_DONE] = names.TRUE
    first = admit(pod, NS, LOOKUP, PROFILE)
    if first.mutated is None or not first.datasets or first.group != "clientless":
        return
    later = copy.deepcopy(first.mutated)
    later["spec"]["containers"] += [{"name": name, "image": "x"} for name in late]
    again = admit(later, NS, LOOKUP, PROFILE)
    assert again.denied is None
    after = apply_patch(later, again.patch) if again.patch else later
    before = len(first.mutated["spec"]["containers"])
    assert _canonical(after["spec"]["containers"][:before]) == _canonical(first.mutated["spec"]["containers"])
    assert _canonical({**after["spec"], "containers": []}) == _canonical({**later["spec"], "containers": []})
    assert after["metadata"] == later["metadata"]
    mounts = [
        {"name": names.runtime_config_volume(ds), "mountPath": names.pod_config_dir(ds), "readOnly": True}
        for ds in first.datasets
    ]
    env = {
        env_name: names.pod_runtime_sh_path(ds)
        for ds in first.datasets
        for env_name in names.runtime_config_env_names(ds)
    }
    for container in after["spec"]["containers"][before:]:
        if container["name"].startswith(names.FUSE_CONTAINER_PREFIX):
            assert container == {"name": container["name"], "image": "x"}
        else:
            assert container["volumeMounts"] == mounts
            assert {e["name"]: e["value"] for e in container["env"]} == env
    assert admit(after, NS, LOOKUP, PROFILE).patch is None


json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text("ab~/", max_size=3))
json_doc = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text("ab~/", max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def edited(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with random edits, sharing what is not edited, as a plugin's working copy does."""
    if isinstance(doc, dict) and draw(st.booleans()):
        out = dict(doc)
        for key in list(out):
            choice = draw(st.integers(0, 3))
            if choice == 0:
                del out[key]
            elif choice == 1:
                out[key] = draw(edited(out[key]))
        out.update(draw(st.dictionaries(st.text("ab~/", max_size=3), json_doc, max_size=2)))
        return out
    if isinstance(doc, list) and draw(st.booleans()):
        items = [draw(edited(item)) if draw(st.booleans()) else item for item in doc]
        drop = draw(st.booleans())
        if items and drop:
            del items[draw(st.integers(0, len(items) - 1))]
        return items + draw(st.lists(json_doc, max_size=2))
    return draw(json_doc) if draw(st.integers(0, 4)) == 0 else doc


@settings(max_examples=500, deadline=None)
@given(st.data(), json_doc)
def test_json_patch_roundtrips_any_documents(data: st.DataObject, original: Any) -> None:
    mutated = data.draw(edited(original))
    before = _canonical(original)
    ops = json_patch(original, mutated)
    assert _canonical(apply_patch(original, ops)) == _canonical(mutated)
    assert _canonical(original) == before
    assert json_patch(mutated, mutated) == []
