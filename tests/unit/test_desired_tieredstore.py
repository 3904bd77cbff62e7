"""Tiered-store levels of worker and client pods: upstream's volumes, paths and names, the memory
quota added to existing memory requests and limits, and upstream's refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_fluid.runtimeconfig import RuntimeConfigError
from tests.unit.desired_samples import (
    CLIENTLESS_RUNTIME,
    DATASET,
    MOONCAKE_CLASS,
    build,
    clientless,
    fuse,
    main_container,
    pod,
    with_spec,
)

LEVELS = "spec.worker.tieredStore.levels"


def worker(levels: list[dict[str, Any]], resources: dict[str, Any] | None = None) -> dict[str, Any]:
    runtime = with_spec(CLIENTLESS_RUNTIME, LEVELS, levels)
    runtime = with_spec(runtime, "spec.worker.resources", resources)
    return build(DATASET, runtime, MOONCAKE_CLASS).statefulsets[1]


def tiers(workload: dict[str, Any] | None) -> tuple[list[Any], list[Any]]:
    volumes = [v for v in pod(workload)["volumes"] if v["name"].startswith("tiered-store-")]
    mounts = [m for m in main_container(workload)["volumeMounts"] if m["name"].startswith("tiered-store-")]
    return volumes, mounts


def test_each_medium_gets_upstreams_volume_and_path() -> None:
    volumes, mounts = tiers(clientless().statefulsets[1])
    assert volumes == [
        {"name": "tiered-store-level-0-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}},
        {"name": "tiered-store-level-1-index-0", "emptyDir": {"sizeLimit": "2Gi", "medium": "Memory"}},
        {"name": "tiered-store-level-2-index-0", "hostPath": {"path": "/mnt/ssd"}},
        {"name": "tiered-store-level-2-index-1", "hostPath": {"path": "/mnt/hdd"}},
        {"name": "tiered-store-level-3-index-0", "emptyDir": {"sizeLimit": "1Gi"}},
    ]
    root = "/etc/fluid/mount/tiered-store"
    assert mounts == [
        {"name": "tiered-store-level-0-memory", "mountPath": "/dev/shm"},
        {"name": "tiered-store-level-1-index-0", "mountPath": f"{root}/level-1-index-0-emptydir"},
        {"name": "tiered-store-level-2-index-0", "mountPath": f"{root}/level-2-index-0-hostpath"},
        {"name": "tiered-store-level-2-index-1", "mountPath": f"{root}/level-2-index-1-hostpath"},
        {"name": "tiered-store-level-3-index-0", "mountPath": f"{root}/level-3-index-0-emptydir"},
    ]


def test_the_paths_mounted_are_the_paths_runtime_json_announces() -> None:
    for children, component in ((clientless(), "worker"), (fuse(), "client")):
        workload = children.statefulsets[1] if component == "worker" else children.daemonset
        announced = [
            p
            for level in json.loads(children.configmap["data"]["runtime.json"])[component][
                "tieredStoreLevels"
            ]
            for p in level["mountPaths"]
        ]
        assert announced == [m["mountPath"] for m in tiers(workload)[1]]


def test_a_host_path_level_keeps_its_type() -> None:
    volumes, _ = tiers(
        worker([{"hostPath": {"paths": ["/d"], "quotas": ["1Gi"], "type": "DirectoryOrCreate"}}])
    )
    assert volumes == [
        {"name": "tiered-store-level-0-index-0", "hostPath": {"path": "/d", "type": "DirectoryOrCreate"}}
    ]


def test_memory_quotas_add_to_existing_non_zero_memory_only() -> None:
    levels = [
        {"processMemory": {"quota": "1024Mi"}},
        {"emptyDir": {"quota": "1500Mi", "medium": "Memory"}},
        {"emptyDir": {"quota": "5Gi"}},
    ]
    resources = {"requests": {"memory": "2Gi", "cpu": "1"}, "limits": {"memory": "4Gi"}}
    # As upstream's edge-case run: 2Gi + 1Gi + 1500Mi and 4Gi + 1Gi + 1500Mi; the disk emptyDir adds nothing.
    assert main_container(worker(levels, resources))["resources"] == {
        "requests": {"memory": "4572Mi", "cpu": "1"},
        "limits": {"memory": "6620Mi"},
    }
    # No memory limit: none is made up; a zero request stays zero.
    resources = {"requests": {"memory": "0"}, "limits": {"cpu": "2"}}
    assert main_container(worker(levels, resources))["resources"] == {
        "requests": {"memory": "0"},
        "limits": {"cpu": "2"},
    }
    assert "resources" not in main_container(worker(levels))


def test_the_sum_keeps_the_format_of_the_request() -> None:
    resources = {"limits": {"memory": "1G"}}
    assert main_container(worker([{"processMemory": {"quota": "1Gi"}}], resources))["resources"] == {
        "limits": {"memory": "2073741824"}
    }


def test_no_levels_no_tier_volumes() -> None:
    assert tiers(worker([])) == ([], [])
    # A level with no medium: nothing in the pod (runtime.json still lists it, as upstream's).
    assert tiers(worker([{"high": "0.9"}])) == ([], [])


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        (
            [{"processMemory": {"quota": "1Gi"}}, {"processMemory": {"quota": "1Gi"}}],
            "RuntimeTieredStore should have only one ProcessMemoryMediumSource for all levels",
        ),
        (
            [
                {"emptyDir": {"quota": "1Gi"}},
                {"processMemory": {"quota": "1Gi"}, "emptyDir": {"quota": "1Gi"}},
            ],
            "only one storage medium can be specified per level at index 1, but found 2",
        ),
        ([{"processMemory": {"quota": "0"}}], "process memory quota cannot be zero at level index 0"),
        (
            [{"emptyDir": {"quota": "0Gi"}}],
            "emptyDir quota cannot be zero for empty dir medium source at level index 0",
        ),
        (
            [{"hostPath": {"paths": ["/a", "/b"], "quotas": ["1Gi"]}}],
            "number of paths and quotas must be equal at level index 0",
        ),
    ],
)
def test_upstreams_refusals(levels: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(RuntimeConfigError) as error:
        worker(levels)
    # The runtime config's build checks the levels, before any pod is built.
    assert message in str(error.value)
    assert LEVELS in str(error.value)
    assert error.value.reason == "InvalidTieredStore"


def test_the_master_has_no_tiered_store() -> None:
    assert tiers(clientless().statefulsets[0]) == ([], [])
