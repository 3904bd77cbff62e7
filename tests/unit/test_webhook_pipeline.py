"""One admission end to end (SPEC §4), on the bench's AdmissionReview among others."""

from __future__ import annotations

import copy
from typing import Any

from kubectl_fluid.api import names
from tests.unit.webhook_samples import (
    NS,
    dataset_pvc,
    default_profile,
    injection_pod,
    ready_lookup,
    review_pod,
)
from webhook.lookup import RecordingLookup, StaticLookup
from webhook.patch import apply_patch
from webhook.pipeline import NO_DATASET_WARNING, NO_FLUID_PVC_WARNING, Outcome, admit
from webhook.profile import load_profile

PROFILE = default_profile()


def _admit(pod: dict[str, Any], lookup: Any, profile: Any = PROFILE) -> Outcome:
    before = copy.deepcopy(pod)
    outcome = admit(pod, NS, lookup, profile)
    assert pod == before, "admission must not change the pod it was given"
    if outcome.patch is not None:
        assert apply_patch(pod, outcome.patch) == outcome.mutated
    return outcome


def test_review_json_gets_both_datasets() -> None:
    pod = review_pod()
    outcome = _admit(pod, ready_lookup("ds1", "ds2"))
    assert outcome.result == "mutated"
    assert outcome.group == "clientless"
    assert outcome.datasets == ["ds1", "ds2"]
    assert outcome.plugins_run == ["RuntimeConfigInjector", "MountPropagationInjector"]
    assert outcome.warnings == []
    assert outcome.denied is None
    assert outcome.patch is not None
    paths = [op["path"] for op in outcome.patch]
    assert paths[0] == "/metadata/labels/done.sidecar.fluid.io~1inject"
    # Appended where the lists exist, added whole where they do not.
    assert paths.count("/spec/volumes/-") == 2
    assert paths.count("/spec/containers/0/env/-") == 4
    assert paths.count("/spec/containers/0/volumeMounts/-") == 2
    assert {"/spec/containers/1/env", "/spec/initContainers/0/volumeMounts"} <= set(paths)
    assert all(op["op"] == "add" for op in outcome.patch)

    mutated = apply_patch(pod, outcome.patch)
    for container in [*mutated["spec"]["containers"], *mutated["spec"]["initContainers"]]:
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        assert mounts["fluid-runtime-config-ds2"] == {
            "name": "fluid-runtime-config-ds2",
            "mountPath": "/etc/fluid/config/ds2/",
            "readOnly": True,
        }
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["FLUID_RUNTIME_CONFIG_PATH_ds1"] == env["FLUID_RUNTIME_CONFIG_PATH_DS1"]
        assert env["FLUID_RUNTIME_CONFIG_PATH_ds1"] == "/etc/fluid/config/ds1/runtime.sh"
    assert mutated["spec"]["volumes"][0]["name"] == "kube-api-access-abcde"


def test_second_admission_of_the_result_is_a_no_op() -> None:
    lookup = ready_lookup("ds1", "ds2")
    first = _admit(review_pod(), lookup)
    assert first.patch is not None
    again = _admit(apply_patch(review_pod(), first.patch), lookup)
    assert again.result == "unchanged"
    assert again.patch is None
    # Checked again all the same (issue 27, item 9): the done label skips nothing.
    assert again.plugins_run == ["RuntimeConfigInjector", "MountPropagationInjector"]


def test_reinvoked_after_another_webhook_added_a_container_it_gets_the_config_and_nothing_else_changes() -> (
    None
):
    """reinvocationPolicy IfNeeded: the API server calls us again with our own patch applied and a
    later webhook's container added; only that container lacks the mount and the env."""
    lookup = ready_lookup("ds1", "ds2")
    first = _admit(review_pod(), lookup)
    assert first.mutated is not None
    later = copy.deepcopy(first.mutated)
    later["spec"]["containers"].append({"name": "late", "image": "x"})
    later["spec"]["initContainers"].append({"name": "fluid-fuse-late", "image": "x"})
    again = _admit(later, lookup)
    assert again.result == "mutated"
    assert again.patch is not None
    assert {op["path"] for op in again.patch} == {"/spec/containers/2/env", "/spec/containers/2/volumeMounts"}
    assert again.mutated is not None
    late = again.mutated["spec"]["containers"][2]
    assert late["volumeMounts"] == first.mutated["spec"]["containers"][0]["volumeMounts"][-2:]
    assert {e["name"] for e in late["env"]} == {
        env for ds in ("ds1", "ds2") for env in names.runtime_config_env_names(ds)
    }
    assert _admit(again.mutated, lookup).patch is None


def test_our_volume_as_the_api_server_defaults_it_is_left_as_it_is() -> None:
    """After a webhook's patch the API server sets a configMap volume's defaultMode (0644); on
    reinvocation that volume is ours and right, not a change to undo."""
    lookup = ready_lookup("ds1")
    first = _admit(injection_pod("ds1"), lookup)
    assert first.mutated is not None
    defaulted = copy.deepcopy(first.mutated)
    for volume in defaulted["spec"]["volumes"]:
        volume["configMap"]["defaultMode"] = 0o644
    assert _admit(defaulted, lookup).patch is None


def test_a_pod_created_with_the_done_label_is_still_checked_and_given_what_it_lacks() -> None:
    done = {names.LABEL_INJECT_DONE: names.TRUE}
    refused = _admit(injection_pod("ds9", labels=done), ready_lookup("ds1"))
    assert refused.denied == f'dataset "ds9" not found in namespace "{NS}"'
    given = _admit(injection_pod("ds1", labels=done), ready_lookup("ds1"))
    assert given.mutated is not None
    assert [v["name"] for v in given.mutated["spec"]["volumes"]] == ["fluid-runtime-config-ds1"]
    assert {op["path"] for op in given.patch or []} == {
        "/spec/volumes",
        "/spec/containers/0/env",
        "/spec/containers/0/volumeMounts",
    }


def test_without_the_done_label_the_plugins_still_change_nothing_more() -> None:
    lookup = ready_lookup("ds1", "ds2")
    first = _admit(review_pod(), lookup)
    assert first.mutated is not None
    stripped = copy.deepcopy(first.mutated)
    del stripped["metadata"]["labels"][names.LABEL_INJECT_DONE]
    again = _admit(stripped, lookup)
    assert again.patch == [
        {"op": "add", "path": "/metadata/labels/done.sidecar.fluid.io~1inject", "value": "true"}
    ]


def test_label_without_dataset_is_admitted_unchanged_with_a_warning() -> None:
    outcome = _admit(injection_pod(None), StaticLookup())
    assert outcome.result == "unchanged"
    assert outcome.warnings == [NO_DATASET_WARNING]
    assert "fluid.io/inject=true" in NO_DATASET_WARNING
    assert "set annotation fluid.io/dataset" in NO_DATASET_WARNING
    assert _admit(injection_pod(" , "), StaticLookup()).warnings == [NO_DATASET_WARNING]


def test_refusals_carry_the_message_and_no_patch() -> None:
    outcome = _admit(injection_pod("ds1,ds9"), ready_lookup("ds1"))
    assert outcome.result == "denied"
    assert outcome.denied == 'dataset "ds9" not found in namespace "team-a"'
    assert outcome.patch is None
    assert outcome.plugins_run == ["RuntimeConfigInjector"]

    foreign = _admit(injection_pod("other/ds1"), ready_lookup("ds1"))
    assert foreign.denied is not None
    assert 'namespace "team-a"' in foreign.denied
    assert foreign.plugins_run == []


def test_pvc_datasets_are_injected_too() -> None:
    pod = injection_pod("ds1", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "ds2"}}])
    outcome = _admit(pod, ready_lookup("ds1", "ds2", extra=(dataset_pvc("ds2"),)))
    assert outcome.datasets == ["ds1", "ds2"]
    assert outcome.mutated is not None
    assert [v["name"] for v in outcome.mutated["spec"]["volumes"]] == [
        "d",
        "fluid-runtime-config-ds1",
        "fluid-runtime-config-ds2",
    ]


def test_serverful_pod_with_a_fluid_pvc() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "app", "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "ds1"}}],
        },
    }
    outcome = _admit(pod, StaticLookup([dataset_pvc("ds1")]))
    assert outcome.group == "serverful"
    assert outcome.plugins_run == [
        "MountPropagationInjector",
        "RequireNodeWithFuse",
        "NodeAffinityWithCache",
        "DatasetUsageInjector",
    ]
    preferred = {
        "weight": 100,
        "preference": {
            "matchExpressions": [{"key": f"fluid.io/s-{NS}-ds1", "operator": "In", "values": ["true"]}]
        },
    }
    assert outcome.patch == [
        {"op": "add", "path": "/metadata/annotations", "value": {"fluid.io/datasets-in-use": "ds1"}},
        {
            "op": "add",
            "path": "/spec/containers/0/volumeMounts/0/mountPropagation",
            "value": "HostToContainer",
        },
        {
            "op": "add",
            "path": "/spec/affinity",
            "value": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred]}},
        },
    ]


def test_group_without_plugins_for_the_case_leaves_the_pod_alone() -> None:
    outcome = _admit({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}}, StaticLookup())
    assert outcome.group == "serverful"
    assert outcome.result == "unchanged"
    # Propagation looks (the pod mounts nothing of the driver) and changes nothing.
    assert outcome.plugins_run == ["MountPropagationInjector"]
    profile, _ = load_profile("plugins:\n  clientless:\n    withDataset: []\n")
    assert _admit(review_pod(), ready_lookup("ds1", "ds2"), profile).result == "unchanged"


def test_misses_are_recorded_for_the_server_to_fetch() -> None:
    pod = injection_pod("ds1,ds2", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "ds3"}}])
    recording = RecordingLookup(ready_lookup("ds1"))
    assert admit(pod, NS, recording, PROFILE).denied is not None
    assert recording.misses == [("pvc", NS, "ds3"), ("dataset", NS, "ds2")]


def _serverful(volumes: list[dict[str, Any]], mounts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "labels": {names.LABEL_FUSE_SERVERFUL_INJECT: names.TRUE}},
        "spec": {"containers": [{"name": "app", "volumeMounts": mounts}], "volumes": volumes},
    }


def test_a_pod_asking_for_propagation_gets_it_on_fluid_pvc_mounts_only() -> None:
    pod = _serverful(
        [
            {"name": "d", "persistentVolumeClaim": {"claimName": "ds1"}},
            {"name": "s", "persistentVolumeClaim": {"claimName": "scratch"}},
        ],
        [{"name": "d", "mountPath": "/data"}, {"name": "s", "mountPath": "/scratch"}],
    )
    outcome = _admit(pod, StaticLookup([dataset_pvc("ds1")]))
    assert outcome.group == "serverful"
    assert outcome.warnings == []
    assert outcome.mutated is not None
    assert outcome.mutated["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "d", "mountPath": "/data", "mountPropagation": "HostToContainer"},
        {"name": "s", "mountPath": "/scratch"},
    ]


def test_a_pod_asking_for_propagation_without_a_fluid_pvc_is_admitted_unchanged_with_a_warning() -> None:
    pod = _serverful([{"name": "s", "persistentVolumeClaim": {"claimName": "scratch"}}], [])
    outcome = _admit(pod, StaticLookup([dataset_pvc("ds1")]))
    assert outcome.result == "unchanged"
    assert outcome.warnings == [NO_FLUID_PVC_WARNING]
    assert "fuse.serverful.fluid.io/inject=true" in NO_FLUID_PVC_WARNING
    # Datasets named by annotation alone do not count as mounts: the warning stays.
    pod["metadata"]["annotations"] = {names.ANNOTATION_DATASET: "ds1"}
    outcome = _admit(pod, StaticLookup([dataset_pvc("ds1")]))
    assert outcome.warnings == [NO_FLUID_PVC_WARNING]
    assert outcome.plugins_run == [
        "MountPropagationInjector",
        "RequireNodeWithFuse",
        "NodeAffinityWithCache",
        "DatasetUsageInjector",
    ]
