"""The dataset PV and PVC (SPEC §2, §5), for clientless and FUSE runtimes."""

from __future__ import annotations

import pytest

from kubectl_fluid.runtimeconfig import RuntimeConfigError
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


def test_fuse_pv_points_at_the_master_service() -> None:
    attributes = fuse().pv["spec"]["csi"]["volumeAttributes"]
    assert attributes == {
        "dataset-name": "ds1",
        "dataset-namespace": "team-a",
        # One stable address whatever the master's replicas (3 here): a PV's source is immutable.
        "master-addrs": "svc-ds1-master.team-a.svc:8995",
        "fs-path": "/",
        "curvine-path": "/team-a/ds1",
    }


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


def test_fuse_class_without_master_port_is_refused() -> None:
    runtime_class = with_spec(CURVINE_CLASS, MASTER_PORTS, [])
    with pytest.raises(RuntimeConfigError, match="no port for its master") as error:
        build(DATASET, FUSE_RUNTIME, runtime_class)
    assert "topology.master.template.spec.containers" in str(error.value)
    assert "spec.client.disabled" in str(error.value)


def test_fuse_class_without_master_service_is_refused() -> None:
    runtime_class = with_spec(CURVINE_CLASS, "topology.master.service", None)
    with pytest.raises(RuntimeConfigError, match="gives the master none") as error:
        build(DATASET, FUSE_RUNTIME, runtime_class)
    assert "topology.master.service.headless" in str(error.value)


def test_fuse_runtime_without_master_is_refused() -> None:
    runtime = with_spec(FUSE_RUNTIME, "spec.master.disabled", True)
    with pytest.raises(RuntimeConfigError, match="master is disabled or missing"):
        build(DATASET, runtime, CURVINE_CLASS)


def test_first_master_port_is_used_across_the_containers_in_order() -> None:
    ports = [{"name": "web", "containerPort": 9000}, {"name": "rpc", "containerPort": 8995}]
    runtime_class = with_spec(CURVINE_CLASS, MASTER_PORTS, ports)
    attributes = build(DATASET, FUSE_RUNTIME, runtime_class).pv["spec"]["csi"]["volumeAttributes"]
    assert attributes["master-addrs"] == "svc-ds1-master.team-a.svc:9000"
    # A first container without ports: the next container's first port.
    containers = [
        {"name": "sidecar", "image": "s:1"},
        {"name": "master", "image": "m:1", "ports": [{"containerPort": 7000}]},
    ]
    runtime_class = with_spec(CURVINE_CLASS, "topology.master.template.spec.containers", containers)
    attributes = build(DATASET, FUSE_RUNTIME, runtime_class).pv["spec"]["csi"]["volumeAttributes"]
    assert attributes["master-addrs"] == "svc-ds1-master.team-a.svc:7000"


def test_without_a_container_port_the_port_the_master_is_probed_on_serves() -> None:
    """Curvine's own class declares no containerPort; its master's readinessProbe connects to 8995."""
    containers = [
        {"name": "master", "image": "m:1", "readinessProbe": {"tcpSocket": {"port": 8995}}},
        {"name": "side", "image": "s:1", "ports": []},
    ]
    runtime_class = with_spec(CURVINE_CLASS, "topology.master.template.spec.containers", containers)
    attributes = build(DATASET, FUSE_RUNTIME, runtime_class).pv["spec"]["csi"]["volumeAttributes"]
    assert attributes["master-addrs"] == "svc-ds1-master.team-a.svc:8995"
    # A named probe port says no number: still refused, as is a probe over HTTP.
    for probe in ({"tcpSocket": {"port": "rpc"}}, {"httpGet": {"port": 9000, "path": "/"}}):
        containers = [{"name": "master", "image": "m:1", "readinessProbe": probe}]
        runtime_class = with_spec(CURVINE_CLASS, "topology.master.template.spec.containers", containers)
        with pytest.raises(RuntimeConfigError, match="no port for its master"):
            build(DATASET, FUSE_RUNTIME, runtime_class)


def test_clientless_class_needs_no_master_port() -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, MASTER_PORTS, [])
    assert build(DATASET, CLIENTLESS_RUNTIME, runtime_class).pv["spec"]["csi"]["volumeAttributes"][
        "clientless"
    ]
