"""Serverful/serverless plugins (SPEC §4): MountPropagationInjector and DatasetUsageInjector."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_fluid.api import names
from tests.unit.webhook_samples import NS, dataset_pvc
from webhook.lookup import StaticLookup
from webhook.plugins import Context, Plugin
from webhook.plugins.dataset_usage import DatasetUsageInjector
from webhook.plugins.mount_propagation import MountPropagationInjector
from webhook.podedit import working_copy

LOOKUP = StaticLookup(
    [
        dataset_pvc("ds1"),
        {"kind": "PersistentVolumeClaim", "metadata": {"namespace": NS, "name": "plain"}},
    ]
)


def _run(plugin: Plugin, pod: dict[str, Any], datasets: list[str]) -> dict[str, Any]:
    before = copy.deepcopy(pod)
    work = working_copy(pod)
    plugin.mutate(work, Context(NS, datasets, LOOKUP))
    assert pod == before
    return work


def _serverful_pod(
    mounts: list[dict[str, Any]], init_mounts: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "app", "volumeMounts": mounts},
            {"name": "fluid-fuse", "volumeMounts": mounts},
        ],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "ds1"}},
            {"name": "plain", "persistentVolumeClaim": {"claimName": "plain"}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    if init_mounts is not None:
        spec["initContainers"] = [{"name": "init", "volumeMounts": init_mounts}]
    return {"metadata": {}, "spec": spec}


def test_mounts_of_fluid_pvcs_get_host_to_container() -> None:
    mounts = [
        {"name": "data", "mountPath": "/data"},
        {"name": "plain", "mountPath": "/plain"},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "data", "mountPath": "/data2", "subPath": "x", "mountPropagation": "None"},
    ]
    work = _run(
        MountPropagationInjector(), _serverful_pod(mounts, [{"name": "data", "mountPath": "/d"}]), ["ds1"]
    )
    app, fuse = work["spec"]["containers"]
    assert app["volumeMounts"] == [
        {"name": "data", "mountPath": "/data", "mountPropagation": "HostToContainer"},
        {"name": "plain", "mountPath": "/plain"},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "data", "mountPath": "/data2", "subPath": "x", "mountPropagation": "HostToContainer"},
    ]
    assert fuse["volumeMounts"] == mounts  # FUSE sidecars are left to whoever injects them
    assert work["spec"]["initContainers"][0]["volumeMounts"] == [
        {"name": "data", "mountPath": "/d", "mountPropagation": "HostToContainer"}
    ]


@pytest.mark.parametrize("mode", ["HostToContainer", "Bidirectional"])
def test_existing_propagation_that_already_reaches_the_container_is_kept(mode: str) -> None:
    pod = _serverful_pod([{"name": "data", "mountPath": "/data", "mountPropagation": mode}])
    assert _run(MountPropagationInjector(), pod, ["ds1"]) == pod


def test_no_fluid_pvc_no_change() -> None:
    pod = _serverful_pod([{"name": "plain", "mountPath": "/plain"}])
    pod["spec"]["volumes"] = pod["spec"]["volumes"][1:]
    assert _run(MountPropagationInjector(), pod, []) == pod


def _in_use(pod: dict[str, Any]) -> Any:
    return pod["metadata"].get("annotations", {}).get(names.ANNOTATION_DATASETS_IN_USE)


@pytest.mark.parametrize(
    ("existing", "datasets", "expected"),
    [
        (None, ["ds2", "ds1"], "ds1,ds2"),
        ("ds3", ["ds1"], "ds1,ds3"),
        (" ds3 ,ds1,", ["ds1"], "ds1,ds3"),
        ("ds1,ds2", ["ds1"], "ds1,ds2"),
        (None, [], None),
        ("", [], ""),
    ],
)
def test_datasets_in_use_is_the_sorted_union(
    existing: str | None, datasets: list[str], expected: str | None
) -> None:
    pod: dict[str, Any] = {"metadata": {}, "spec": {}}
    if existing is not None:
        pod["metadata"]["annotations"] = {names.ANNOTATION_DATASETS_IN_USE: existing}
    work = _run(DatasetUsageInjector(), pod, datasets)
    assert _in_use(work) == expected
    assert _run(DatasetUsageInjector(), work, datasets) == work
