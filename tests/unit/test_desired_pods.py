"""The pod template of a component: the class's template with the runtime's overrides merged in
upstream's order (labels, nodeSelector, tolerations, first container, env, first init container)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.desired.errors import SpecError
from kubectl_fluid.api import names
from tests.unit.desired_samples import (
    CLIENTLESS_RUNTIME,
    CURVINE_CLASS,
    DATASET,
    FUSE_RUNTIME,
    MOONCAKE_CLASS,
    build,
    clientless,
    fuse,
    main_container,
    pod,
    with_spec,
)

MASTER = "topology.master.template.spec.containers.0"


def injected(component: str, service: str | None) -> list[dict[str, Any]]:
    env = [
        {"name": "FLUID_DATASET_NAME", "value": "ds1"},
        {"name": "FLUID_DATASET_NAMESPACE", "value": "team-a"},
        {"name": "FLUID_RUNTIME_CONFIG_PATH", "value": "/etc/fluid/config/runtime.json"},
        {"name": "FLUID_RUNTIME_MOUNT_PATH", "value": "/runtime-mnt/cache/team-a/ds1/cache-fuse"},
        {"name": "FLUID_RUNTIME_COMPONENT_TYPE", "value": component},
    ]
    return [*env, {"name": "FLUID_RUNTIME_COMPONENT_SVC_NAME", **({"value": service} if service else {})}]


def test_env_is_the_injected_six_then_the_templates_then_the_runtimes() -> None:
    master = main_container(clientless().statefulsets[0])
    assert master["env"] == [
        *injected("master", "svc-ds1-master"),
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    worker = main_container(clientless().statefulsets[1])
    assert worker["env"] == [*injected("worker", "svc-ds1-worker"), {"name": "LOG_LEVEL", "value": "debug"}]
    # No headless Service: the variable is there, empty (the API server stores no value).
    assert main_container(fuse().daemonset)["env"] == injected("client", None)


def test_a_name_defined_twice_keeps_its_first_place_and_its_last_value() -> None:
    runtime_class = with_spec(
        MOONCAKE_CLASS, f"{MASTER}.env", [{"name": "A", "value": "t"}, {"name": "B", "value": "t"}]
    )
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.master.env", [{"name": "A", "value": "r"}])
    runtime = with_spec(
        runtime,
        "spec.master.env",
        [{"name": "A", "value": "r"}, {"name": names.ENV_DATASET_NAME, "value": "x"}],
    )
    env = main_container(build(DATASET, runtime, runtime_class).statefulsets[0])["env"]
    assert [e["name"] for e in env][:7] == [e["name"] for e in injected("master", "x")] + ["A"]
    assert env[0] == {"name": names.ENV_DATASET_NAME, "value": "x"}
    assert env[6:] == [{"name": "A", "value": "r"}, {"name": "B", "value": "t"}]


def test_an_env_entry_without_a_name_is_refused_naming_its_place() -> None:
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.worker.env", [{"value": "1"}])
    with pytest.raises(
        SpecError, match=r'CacheRuntime "ds1" spec\.worker\.env\[0\]: every env entry needs a name'
    ):
        build(DATASET, runtime, MOONCAKE_CLASS)


def test_the_first_init_container_gets_the_injected_env_before_its_own() -> None:
    runtime_class = with_spec(
        CURVINE_CLASS,
        "topology.master.template.spec.initContainers",
        [
            {"name": "a", "image": "i", "env": [{"name": "OWN", "value": "1"}]},
            {"name": "b", "image": "i", "env": [{"name": "OWN", "value": "2"}]},
        ],
    )
    init = pod(build(DATASET, FUSE_RUNTIME, runtime_class).statefulsets[0])["initContainers"]
    assert init[0]["env"] == [*injected("master", "svc-ds1-master"), {"name": "OWN", "value": "1"}]
    assert init[1]["env"] == [{"name": "OWN", "value": "2"}]  # only the first, as upstream


def test_image_needs_both_image_and_tag_and_pull_policy_is_the_runtimes() -> None:
    client = main_container(fuse().daemonset)
    assert (client["image"], client["imagePullPolicy"]) == ("curvine-client:0.3", "Always")
    runtime = with_spec(FUSE_RUNTIME, "spec.client.runtimeVersion", {"image": "other"})
    assert main_container(build(DATASET, runtime, CURVINE_CLASS).daemonset)["image"] == "curvine:0.2"
    assert "imagePullPolicy" not in main_container(fuse().statefulsets[0])


def test_args_are_replaced_and_command_is_never_changed() -> None:
    runtime_class = with_spec(CURVINE_CLASS, f"{MASTER}.command", ["/bin/run"])
    runtime = with_spec(FUSE_RUNTIME, "spec.master.args", ["--fast"])
    master = main_container(build(DATASET, runtime, runtime_class).statefulsets[0])
    assert (master["command"], master["args"]) == (["/bin/run"], ["--fast"])
    runtime = with_spec(FUSE_RUNTIME, "spec.master.args", [])  # set, even empty: replaces
    assert main_container(build(DATASET, runtime, runtime_class).statefulsets[0])["args"] == []
    assert main_container(fuse().statefulsets[0])["args"] == ["master"]


def test_resources_are_replaced_whole_when_the_runtime_sets_limits_or_requests() -> None:
    # The class's limit, in the API server's canonical form (2000000000 is stored as 2G).
    assert main_container(fuse().statefulsets[0])["resources"] == {"limits": {"memory": "2G"}}
    runtime = with_spec(FUSE_RUNTIME, "spec.master.resources", {"requests": {"cpu": "1000m"}})
    assert main_container(build(DATASET, runtime, CURVINE_CLASS).statefulsets[0])["resources"] == {
        "requests": {"cpu": "1"}
    }
    runtime = with_spec(FUSE_RUNTIME, "spec.master.resources", {"claims": []})  # neither: kept
    assert main_container(build(DATASET, runtime, CURVINE_CLASS).statefulsets[0])["resources"] == {
        "limits": {"memory": "2G"}
    }


def test_labels_and_annotations_from_the_components_pod_metadata_not_the_top_level() -> None:
    runtime_class = with_spec(
        MOONCAKE_CLASS,
        "topology.master.template.metadata",
        {"labels": {"t": "1", "x": "t"}, "annotations": {"a": "t"}},
    )
    runtime = with_spec(
        CLIENTLESS_RUNTIME, "spec.master.podMetadata", {"labels": {"x": "r"}, "annotations": {"b": "r"}}
    )
    runtime = with_spec(runtime, "spec.podMetadata", {"labels": {"top": "ignored"}})
    meta = build(DATASET, runtime, runtime_class).statefulsets[0]["spec"]["template"]["metadata"]
    assert meta["annotations"] == {"a": "t", "b": "r"}
    assert {k: meta["labels"][k] for k in ("t", "x")} == {"t": "1", "x": "r"}
    assert "top" not in meta["labels"]


def test_the_controllers_labels_win_over_the_templates() -> None:
    runtime_class = with_spec(
        MOONCAKE_CLASS,
        "topology.master.template.metadata",
        {"labels": {names.LABEL_CACHERUNTIME_NAME: "other"}},
    )
    labels = build(DATASET, CLIENTLESS_RUNTIME, runtime_class).statefulsets[0]["spec"]["template"][
        "metadata"
    ]["labels"]
    assert labels[names.LABEL_CACHERUNTIME_NAME] == "ds1"


def test_node_selector_is_the_templates_then_the_runtimes_and_tolerations_are_appended() -> None:
    runtime_class = with_spec(
        MOONCAKE_CLASS, "topology.worker.template.spec.nodeSelector", {"disk": "hdd", "zone": "a"}
    )
    runtime_class = with_spec(
        runtime_class, "topology.worker.template.spec.tolerations", [{"key": "t", "operator": "Exists"}]
    )
    dataset = with_spec(DATASET, "spec.tolerations", [{"key": "d", "operator": "Exists"}])
    worker = pod(build(dataset, CLIENTLESS_RUNTIME, runtime_class).statefulsets[1])
    assert worker["nodeSelector"] == {"disk": "ssd", "zone": "a"}
    assert [t["key"] for t in worker["tolerations"]] == ["t", "d", "cache"]
    # The Dataset's tolerations go to every component.
    master = pod(build(dataset, CLIENTLESS_RUNTIME, runtime_class).statefulsets[0])
    assert [t["key"] for t in master["tolerations"]] == ["d"]
    assert "nodeSelector" not in master


def test_the_client_runs_on_the_datasets_fuse_nodes_with_its_mount_point() -> None:
    client = pod(fuse().daemonset)
    assert client["nodeSelector"] == {"fluid.io/f-team-a-ds1": "true"}
    # The target path's folder, not the mount point (upstream's): a dead FUSE there cannot be stat'ed.
    shared = "/runtime-mnt/cache/team-a/ds1"
    assert client["volumes"][-1] == {
        "name": "fluid-cache-runtime-shared-path",
        "hostPath": {"path": shared, "type": "DirectoryOrCreate"},
    }
    assert main_container(fuse().daemonset)["volumeMounts"][-1] == {
        "name": "fluid-cache-runtime-shared-path",
        "mountPath": shared,
        "mountPropagation": "Bidirectional",
    }
    env = {e["name"]: e.get("value") for e in main_container(fuse().daemonset)["env"]}
    assert env["FLUID_RUNTIME_MOUNT_PATH"] == f"{shared}/cache-fuse"


def test_the_templates_other_fields_are_kept() -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, f"{MASTER}.readinessProbe", {"tcpSocket": {"port": 50051}})
    runtime_class = with_spec(runtime_class, "topology.master.template.spec.restartPolicy", "Always")
    master = build(DATASET, CLIENTLESS_RUNTIME, runtime_class).statefulsets[0]
    assert main_container(master)["readinessProbe"] == {"tcpSocket": {"port": 50051}}
    assert main_container(master)["ports"] == [{"name": "rpc", "containerPort": 50051}]
    assert pod(master)["restartPolicy"] == "Always"


def test_quantities_are_written_as_the_api_server_stores_them() -> None:
    runtime_class = with_spec(
        MOONCAKE_CLASS,
        "topology.master.template.spec.volumes",
        [
            {"name": "scratch", "emptyDir": {"sizeLimit": "1024Mi"}},
            {"name": "bad", "emptyDir": {"sizeLimit": "lots"}},
        ],
    )
    runtime = with_spec(
        CLIENTLESS_RUNTIME, "spec.master.resources", {"limits": {"cpu": 2, "memory": "0.5Gi"}}
    )
    master = build(DATASET, runtime, runtime_class).statefulsets[0]
    assert main_container(master)["resources"] == {"limits": {"cpu": "2", "memory": "512Mi"}}
    volumes = {v["name"]: v for v in pod(master)["volumes"]}
    assert volumes["scratch"]["emptyDir"] == {"sizeLimit": "1Gi"}
    assert volumes["bad"]["emptyDir"] == {"sizeLimit": "lots"}  # the API server says what is wrong


def test_children_do_not_alias_the_input_models() -> None:
    from controller.desired import desired_children
    from tests.unit.desired_samples import NAMESPACE, models

    dataset, runtime, runtime_class = models(DATASET, CLIENTLESS_RUNTIME, MOONCAKE_CLASS)
    children = desired_children(dataset, runtime, runtime_class, NAMESPACE)
    worker = children.statefulsets[1]
    main_container(worker)["resources"]["limits"]["memory"] = "1Ki"
    main_container(worker)["env"][-1]["value"] = "changed"
    pod(worker)["tolerations"][0]["key"] = "changed"
    main_container(children.statefulsets[0])["ports"][0]["containerPort"] = 1
    assert runtime.spec.worker.resources == {"requests": {"memory": "1Gi"}, "limits": {"memory": "8Gi"}}
    assert (runtime.spec.worker.env or [])[0]["value"] == "debug"
    assert (runtime.spec.worker.tolerations or [])[0]["key"] == "cache"
    template = (
        runtime_class.topology.master.template
        if runtime_class.topology and runtime_class.topology.master
        else None
    )
    assert template is not None
    assert template["spec"]["containers"][0]["ports"][0]["containerPort"] == 50051
