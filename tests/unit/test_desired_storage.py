"""The dataset PV and PVC (SPEC §2, §5), for clientless and FUSE runtimes."""

from __future__ import annotations

from typing import Any

from controller.compare import contains
from controller.desired.storage import kept_volume_source
from tests.unit.desired_samples import (
    CLIENTLESS_RUNTIME,
    CURVINE_CLASS,
    DATASET,
    FUSE_RUNTIME,
    MOONCAKE_CLASS,
    build,
    clientless,
    fuse,
    with_spec,
)


def test_clientless_pv() -> None:
    pv = clientless().pv
    assert pv["metadata"]["name"] == "team-a-ds1"
    assert pv["spec"] == {
        "capacity": {"storage": "100Pi"},
        "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "fluid",
        "claimRef": {"namespace": "team-a", "name": "ds1"},
        "csi": {
            "driver": "curvine.csi.fluid.io",
            "volumeHandle": "team-a-ds1",
            "volumeAttributes": {"dataset-name": "ds1", "dataset-namespace": "team-a", "clientless": "true"},
        },
    }


def test_fuse_pv_names_the_runtime_and_its_clients_target_path() -> None:
    attributes = fuse().pv["spec"]["csi"]["volumeAttributes"]
    # Upstream's attributes (SPEC §7): the runtime's client serves it; no masters for a FUSE of ours.
    assert attributes == {
        "dataset-name": "ds1",
        "dataset-namespace": "team-a",
        "fluid_path": "/runtime-mnt/cache/team-a/ds1/cache-fuse",
        "mount_type": attributes["mount_type"],
        "runtime_namespace": "team-a",
        "runtime_name": "ds1",
    }
    assert attributes["mount_type"]


def _legacy(pv: dict[str, Any], **csi: Any) -> dict[str, Any]:
    attributes = {"dataset-name": "ds1", "dataset-namespace": "team-a", "master-addrs": "m:8995"}
    old = {"driver": "curvine.csi.fluid.io", "volumeHandle": "team-a-ds1", "volumeAttributes": attributes}
    return {**pv, "spec": {**pv["spec"], "csi": {**old, **csi}}}


def test_a_pv_made_before_with_master_addrs_keeps_its_source() -> None:
    desired = fuse().pv
    existing = _legacy(desired)
    kept = kept_volume_source(desired, existing)
    assert kept["spec"]["csi"] == existing["spec"]["csi"]
    assert contains(existing, kept)  # nothing to write: the controller does not fight over it
    assert kept_volume_source(desired, None) is desired
    assert kept_volume_source(desired, desired) is desired


def test_a_runtime_that_lost_its_client_replaces_a_legacy_pv() -> None:
    desired = clientless().pv
    assert kept_volume_source(desired, _legacy(desired)) is desired


def test_pvc_binds_to_its_pv_only() -> None:
    for children in (clientless(), fuse()):
        pvc, pv = children.pvc, children.pv
        assert pvc["metadata"]["name"] == "ds1"
        assert pvc["metadata"]["labels"]["fluid.io/s-team-a-ds1"] == "true"
        assert pvc["metadata"]["labels"]["fluid.io/dataset-id"] == "team-a-ds1"
        assert pvc["spec"] == {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "100Pi"}},
            "storageClassName": "fluid",
            "volumeName": pv["metadata"]["name"],
        }
        assert pv["spec"]["claimRef"] == {"namespace": "team-a", "name": pvc["metadata"]["name"]}
        assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"]


def test_access_modes_default_to_read_only_many() -> None:
    dataset = with_spec(DATASET, "spec.accessModes", None)
    children = build(dataset, CLIENTLESS_RUNTIME, MOONCAKE_CLASS)
    assert children.pv["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert children.pvc["spec"]["accessModes"] == ["ReadOnlyMany"]


def test_disabling_the_client_of_a_fuse_class_makes_it_clientless() -> None:
    runtime = with_spec(FUSE_RUNTIME, "spec.client.disabled", True)
    children = build(DATASET, runtime, CURVINE_CLASS)
    assert children.daemonset is None
    assert children.pv["spec"]["csi"]["volumeAttributes"]["clientless"] == "true"
    assert "master-addrs" not in children.pv["spec"]["csi"]["volumeAttributes"]


MASTER_PORTS = "topology.master.template.spec.containers.0.ports"


def test_a_fuse_pv_needs_no_master_port_nor_service() -> None:
    runtime_class = with_spec(with_spec(CURVINE_CLASS, MASTER_PORTS, []), "topology.master.service", None)
    attributes = build(DATASET, FUSE_RUNTIME, runtime_class).pv["spec"]["csi"]["volumeAttributes"]
    assert "master-addrs" not in attributes
    assert attributes["runtime_name"] == "ds1"


def test_clientless_class_needs_no_master_port() -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, MASTER_PORTS, [])
    assert build(DATASET, CLIENTLESS_RUNTIME, runtime_class).pv["spec"]["csi"]["volumeAttributes"][
        "clientless"
    ]
