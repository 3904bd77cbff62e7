"""Pod templates of the cache components: container, env, ports, volumes (SPEC §2)."""

from __future__ import annotations

import json
from typing import Any

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

CONFIG_MOUNT = {"name": "fluid-runtime-config", "mountPath": "/etc/fluid/config", "readOnly": True}
CONFIG_VOLUME = {"name": "fluid-runtime-config", "configMap": {"name": "fluid-runtime-config-ds1"}}


def _pod(workload: dict[str, Any] | None) -> dict[str, Any]:
    assert workload is not None
    pod: dict[str, Any] = workload["spec"]["template"]["spec"]
    return pod


def _container(workload: dict[str, Any] | None) -> dict[str, Any]:
    (container,) = _pod(workload)["containers"]
    return dict(container)


def _workloads() -> list[tuple[str, dict[str, Any]]]:
    children = fuse()
    assert children.daemonset is not None
    return [
        ("master", children.statefulsets[0]),
        ("worker", children.statefulsets[1]),
        ("client", children.daemonset),
        ("master", clientless().statefulsets[0]),
        ("worker", clientless().statefulsets[1]),
    ]


@pytest.mark.parametrize(("component", "workload"), _workloads())
def test_every_workload_gets_the_fluid_env_and_the_config_mount(
    component: str, workload: dict[str, Any]
) -> None:
    container = _container(workload)
    assert container["name"] == component
    assert container["env"][:4] == [
        {"name": "FLUID_DATASET_NAME", "value": "ds1"},
        {"name": "FLUID_DATASET_NAMESPACE", "value": "team-a"},
        {"name": "FLUID_RUNTIME_CONFIG_PATH", "value": "/etc/fluid/config/runtime.json"},
        {"name": "FLUID_RUNTIME_COMPONENT_TYPE", "value": component},
    ]
    assert CONFIG_MOUNT in container["volumeMounts"]
    assert CONFIG_VOLUME in _pod(workload)["volumes"]


@pytest.mark.parametrize(("component", "workload"), _workloads())
def test_volumes_and_mounts_are_sorted_and_match(component: str, workload: dict[str, Any]) -> None:
    volumes = _pod(workload)["volumes"]
    mounts = _container(workload)["volumeMounts"]
    assert [v["name"] for v in volumes] == sorted(v["name"] for v in volumes)
    assert [m["mountPath"] for m in mounts] == sorted(m["mountPath"] for m in mounts)
    assert {v["name"] for v in volumes} == {m["name"] for m in mounts}


def test_component_env_follows_the_fluid_env() -> None:
    env = _container(clientless().statefulsets[1])["env"]
    assert env[4:] == [{"name": "LOG_LEVEL", "value": "debug"}]


def test_secret_volumes_are_deduplicated_sorted_and_read_only() -> None:
    pod = _pod(clientless().statefulsets[0])
    secrets = [v for v in pod["volumes"] if "secret" in v]
    assert secrets == [
        # Secret names may hold dots, volume names may not.
        {
            "name": "fluid-secret-b-token-1f739f60",
            "secret": {"secretName": "b.token", "items": [{"key": "t", "path": "t"}]},
        },
        {
            "name": "fluid-secret-s3cred",
            "secret": {
                "secretName": "s3cred",
                "items": [
                    {"key": "access-key", "path": "access-key"},
                    {"key": "secret-key", "path": "secret-key"},
                ],
            },
        },
    ]
    mounts = [m for m in _container(clientless().statefulsets[0])["volumeMounts"] if "secret" in m["name"]]
    assert mounts == [
        {
            "name": "fluid-secret-b-token-1f739f60",
            "mountPath": "/etc/fluid/secrets/b.token",
            "readOnly": True,
        },
        {"name": "fluid-secret-s3cred", "mountPath": "/etc/fluid/secrets/s3cred", "readOnly": True},
    ]


def test_secret_files_are_where_runtime_json_points() -> None:
    children = clientless()
    mounts = _container(children.statefulsets[0])["volumeMounts"]
    volumes = {v["name"]: v for v in _pod(children.statefulsets[0])["volumes"]}
    files = {
        f"{m['mountPath']}/{item['path']}"
        for m in mounts
        if "secret" in volumes[m["name"]]
        for item in volumes[m["name"]]["secret"]["items"]
    }
    runtime_json = children.configmap["data"]["runtime.json"]
    referenced = {
        path for mount in json.loads(runtime_json)["mounts"] for path in mount["encryptOptions"].values()
    }
    assert referenced <= files


def test_no_secret_volumes_without_encrypt_options() -> None:
    dataset = with_spec(DATASET, "spec", {"mounts": [{"name": "m", "mountPoint": "s3://bucket"}]})
    pod = _pod(build(dataset, CLIENTLESS_RUNTIME, MOONCAKE_CLASS).statefulsets[0])
    assert pod["volumes"] == [CONFIG_VOLUME]


def test_tiered_store_volumes() -> None:
    worker = clientless().statefulsets[1]
    volumes = [v for v in _pod(worker)["volumes"] if v["name"].startswith("fluid-cache-level-")]
    # Level 0 is processMemory: no volume.
    assert volumes == [
        {"name": "fluid-cache-level-1", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
        {"name": "fluid-cache-level-2", "hostPath": {"path": "/mnt/ssd", "type": "DirectoryOrCreate"}},
        {"name": "fluid-cache-level-3", "emptyDir": {}},
    ]
    mounts = [m for m in _container(worker)["volumeMounts"] if m["name"].startswith("fluid-cache-level-")]
    assert mounts == [
        {"name": "fluid-cache-level-1", "mountPath": "/fluid/cache/level-1"},
        {"name": "fluid-cache-level-3", "mountPath": "/fluid/cache/level-3"},
        {"name": "fluid-cache-level-2", "mountPath": "/mnt/ssd"},
    ]
    # The paths runtime.json announces are the paths mounted.
    config = json.loads(clientless().configmap["data"]["runtime.json"])
    announced = {p for level in config["worker"]["tieredStoreLevels"] for p in level["mountPaths"]}
    assert announced == {m["mountPath"] for m in mounts}


def test_client_tiered_store_and_master_has_none() -> None:
    client = _pod(fuse().daemonset)
    assert {
        "name": "fluid-cache-level-0",
        "hostPath": {"path": "/var/cache/curvine", "type": "DirectoryOrCreate"},
    } in client["volumes"]
    master = _pod(clientless().statefulsets[0])
    assert not [v for v in master["volumes"] if v["name"].startswith("fluid-cache-level-")]


def test_image_command_args_runtime_first_then_class() -> None:
    children = fuse()
    client, master = _container(children.daemonset), _container(children.statefulsets[0])
    assert (client["image"], client["args"]) == ("curvine-client:0.3", ["client"])
    assert (master["image"], master["args"]) == ("curvine:0.2", ["master"])
    assert "command" not in master
    runtime = with_spec(FUSE_RUNTIME, "spec.master.command", ["/bin/run"])
    runtime = with_spec(runtime, "spec.master.args", ["--fast"])
    master = _container(build(DATASET, runtime, CURVINE_CLASS).statefulsets[0])
    assert (master["command"], master["args"]) == (["/bin/run"], ["--fast"])


def test_resources_node_selector_tolerations_from_the_runtime() -> None:
    worker = clientless().statefulsets[1]
    assert _container(worker)["resources"] == {"limits": {"memory": "8Gi"}}
    assert _pod(worker)["nodeSelector"] == {"disk": "ssd"}
    assert _pod(worker)["tolerations"] == [{"key": "cache", "operator": "Exists", "effect": "NoSchedule"}]
    # Unset: left out, as the API server would store them.
    master = clientless().statefulsets[0]
    assert "resources" not in _container(master)
    assert "nodeSelector" not in _pod(master)
    assert "tolerations" not in _pod(master)


def test_container_and_service_ports_from_the_class() -> None:
    children = fuse()
    assert _container(children.statefulsets[0])["ports"] == [
        {"containerPort": 8995, "protocol": "TCP", "name": "rpc"},
        {"containerPort": 8996, "protocol": "TCP", "name": "journal"},
        {"containerPort": 9000, "protocol": "TCP"},
    ]
    master_service, worker_service = children.services
    assert master_service["spec"]["ports"] == [
        {"name": "rpc", "port": 8995, "protocol": "TCP", "targetPort": "rpc"},
        {"name": "journal", "port": 8996, "protocol": "TCP", "targetPort": "journal"},
        {"name": "tcp-9000", "port": 9000, "protocol": "TCP", "targetPort": 9000},
    ]
    assert worker_service["spec"]["ports"] == [
        {"name": "tcp-8997", "port": 8997, "protocol": "TCP", "targetPort": 8997}
    ]
    for service in children.services:
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["publishNotReadyAddresses"] is True


def test_component_without_ports_still_gets_a_headless_service() -> None:
    worker_service = clientless().services[1]
    assert worker_service["metadata"]["name"] == "svc-ds1-worker"
    assert worker_service["spec"]["clusterIP"] == "None"
    assert "ports" not in worker_service["spec"]
    assert "ports" not in _container(clientless().statefulsets[1])


def test_no_image_names_the_component_and_both_places() -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, "topology.worker.image", None)
    with pytest.raises(RuntimeConfigError, match="worker") as error:
        build(DATASET, CLIENTLESS_RUNTIME, runtime_class)
    message = str(error.value)
    assert 'CacheRuntimeClass "mooncake"' in message
    assert "topology.worker.image" in message
    assert "spec.worker.image" in message
    # The runtime's image is enough.
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.worker.image", "mine:2")
    assert _container(build(DATASET, runtime, runtime_class).statefulsets[1])["image"] == "mine:2"


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ([{"name": "FLUID_DATASET_NAME", "value": "x"}], "set by the controller"),
        ([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}], "A appears twice"),
        ([{"value": "1"}], "needs a name"),
    ],
)
def test_bad_component_env_is_refused(env: list[dict[str, Any]], match: str) -> None:
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.worker.env", env)
    with pytest.raises(RuntimeConfigError, match=match):
        build(DATASET, runtime, MOONCAKE_CLASS)


@pytest.mark.parametrize(
    ("ports", "match"),
    [
        ([{"containerPort": 1}, {"containerPort": 1}], "port/protocol 1/TCP appears twice"),
        ([{"name": "a", "containerPort": 1}, {"name": "a", "containerPort": 2}], "port name a appears twice"),
        ([{"name": "tcp-2", "containerPort": 1}, {"containerPort": 2}], "Service port name tcp-2"),
    ],
)
def test_clashing_template_ports_are_refused(ports: list[dict[str, Any]], match: str) -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, "topology.master.ports", ports)
    with pytest.raises(RuntimeConfigError, match=match):
        build(DATASET, CLIENTLESS_RUNTIME, runtime_class)


def test_same_port_on_two_protocols_is_fine() -> None:
    ports = [
        {"name": "dns", "containerPort": 53},
        {"name": "dns-udp", "containerPort": 53, "protocol": "UDP"},
    ]
    runtime_class = with_spec(MOONCAKE_CLASS, "topology.master.ports", ports)
    assert len(build(DATASET, CLIENTLESS_RUNTIME, runtime_class).services[0]["spec"]["ports"]) == 2


def test_two_levels_on_one_path_are_refused() -> None:
    levels = [{"medium": {"hostPath": {"path": "/mnt/ssd"}}}, {"medium": {"hostPath": {"path": "/mnt/ssd"}}}]
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.worker.tieredStore", {"levels": levels})
    with pytest.raises(RuntimeConfigError, match="/mnt/ssd"):
        build(DATASET, runtime, MOONCAKE_CLASS)


def test_workloads_use_the_curvine_class_for_labels() -> None:
    assert (
        build(DATASET, FUSE_RUNTIME, CURVINE_CLASS).configmap["metadata"]["labels"]["app.kubernetes.io/name"]
        == "curvine"
    )
