"""The components as upstream builds them, on the local cluster: the runtime's status follows its
workloads, workers are placed by the Dataset's placement, the client runs only on the dataset's FUSE
nodes, a class's extra ConfigMap is shared by its runtimes (and nobody else's is taken over), and
upstream's refusals become conditions and Events."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, wait_until_gone
from tests.e2e.test_controller import GROUP, VERSION, Fluid, dataset, quiet, runtime
from tests.e2e.wait import as_json, eventually


@pytest.fixture
def fl(k8s: client.ApiClient, namespace: str, controller: ControllerProcess) -> Fluid:
    return Fluid(k8s, namespace)


def component(fl: Fluid, name: str, which: str) -> dict[str, Any]:
    status: dict[str, Any] = (fl.get("cacheruntimes", name).get("status") or {}).get(which) or {}
    return status


def test_the_runtime_status_follows_its_workloads_and_then_stays_still(
    fl: Fluid, controller: ControllerProcess
) -> None:
    fl.create(dataset("st"))
    fl.create(runtime("st", worker={"replicas": 1}))
    eventually(lambda: fl.bound("st"), "Dataset st Bound", timeout=30)
    ready = {
        "phase": "Ready",
        "desiredReplicas": 1,
        "readyReplicas": 1,
        "currentReplicas": 1,
        "availableReplicas": 1,
    }
    # kwok takes the pods to Ready; the StatefulSets' status reaches the runtime's.
    eventually(lambda: component(fl, "st", "master") == ready, "master Ready in the runtime's status")
    eventually(lambda: component(fl, "st", "worker") == ready, "worker Ready in the runtime's status")
    assert component(fl, "st", "client") == {"phase": ""}  # clientless

    # Three Exclusive workers and two nodes: one per node, the third waits (upstream's placement).
    fl.patch("cacheruntimes", "st", {"spec": {"worker": {"replicas": 3}}})
    partial = {
        "phase": "PartialReady",
        "desiredReplicas": 3,
        "readyReplicas": 2,
        "currentReplicas": 3,
        "availableReplicas": 2,
        "unavailableReplicas": 1,
    }
    eventually(lambda: component(fl, "st", "worker") == partial, "worker PartialReady: 2 of 3", timeout=60)
    pods = fl.core.list_namespaced_pod(
        fl.ns, label_selector=f"{names.LABEL_CACHERUNTIME_COMPONENT}=st-worker"
    )
    nodes = sorted(p.spec.node_name for p in pods.items if p.spec.node_name)
    assert len(nodes) == 2
    assert len(set(nodes)) == 2
    assert "Unschedulable" in {c.reason for p in pods.items for c in p.status.conditions or [] if c.reason}

    # Once it all settles, no writes: status changes outside the fields reported cause none.
    quiet(fl, controller)
    writes = controller.metric("fluid_controller_api_writes_total")
    runtime_version = fl.get("cacheruntimes", "st")["metadata"]["resourceVersion"]
    time.sleep(10)
    assert controller.metric("fluid_controller_api_writes_total") == writes
    assert fl.get("cacheruntimes", "st")["metadata"]["resourceVersion"] == runtime_version


def test_shared_placement_lets_workers_of_two_datasets_share_nodes(fl: Fluid) -> None:
    for name in ("sa", "sb"):
        fl.create(dataset(name, placement="Shared"))
        fl.create(runtime(name, worker={"replicas": 2}))
    for name in ("sa", "sb"):
        eventually(
            lambda name=name: component(fl, name, "worker").get("readyReplicas") == 2,  # type: ignore[misc]
            f"both workers of {name} ready",
            timeout=60,
        )
    labels = fl.apps.read_namespaced_stateful_set("sa-worker", fl.ns).spec.template.metadata.labels
    assert labels[names.LABEL_DATASET_PLACEMENT] == "Shared"


@pytest.fixture
def node_label(core: client.CoreV1Api) -> Iterator[list[str]]:
    """Node labels a test sets (on the session's shared nodes), removed afterwards."""
    added: list[str] = []
    yield added
    for key in added:
        for node in core.list_node().items:
            if key in (node.metadata.labels or {}):
                core.patch_node(node.metadata.name, {"metadata": {"labels": {key: None}}})


def test_the_client_runs_on_the_nodes_labelled_for_its_dataset(
    fl: Fluid, core: client.CoreV1Api, node_label: list[str]
) -> None:
    fl.create(dataset("fc"))
    fl.create(runtime("fc", runtime_class="curvine", clientless=False))
    eventually(lambda: fl.bound("fc"), "Dataset fc Bound", timeout=30)
    key = names.fuse_node_label(fl.ns, "fc")
    client_ds = as_json(fl.apps.read_namespaced_daemon_set("fc-client", fl.ns))
    assert client_ds["spec"]["template"]["spec"]["nodeSelector"] == {key: "true"}
    eventually(lambda: component(fl, "fc", "client") == {"phase": "NotReady"}, "client: no node, NotReady")

    node = core.list_node().items[0].metadata.name
    node_label.append(key)
    core.patch_node(node, {"metadata": {"labels": {key: "true"}}})
    want = {
        "phase": "Ready",
        "desiredReplicas": 1,
        "readyReplicas": 1,
        "currentReplicas": 1,
        "availableReplicas": 1,
    }
    eventually(
        lambda: component(fl, "fc", "client") == want, "the client Ready on the labelled node", timeout=60
    )
    pods = fl.core.list_namespaced_pod(
        fl.ns, label_selector=f"{names.LABEL_CACHERUNTIME_COMPONENT}=fc-client"
    )
    assert [p.spec.node_name for p in pods.items] == [node]
    mounts = {m.mount_path: m for m in pods.items[0].spec.containers[0].volume_mounts}
    assert mounts[names.client_shared_path(fl.ns, "fc")].mount_propagation == "Bidirectional"


def test_the_runtime_is_ready_only_once_its_master_and_workers_have_ready_pods(
    fl: Fluid, core: client.CoreV1Api, node_label: list[str]
) -> None:
    key = f"e2e.fluid.io/r-{fl.ns}"[:76]
    fl.create(dataset("rd"))
    fl.create(runtime("rd", master={"replicas": 1, "nodeSelector": {key: "true"}}, worker={"replicas": 1}))
    eventually(lambda: fl.bound("rd"), "Dataset rd Bound: its children are in place", timeout=30)
    eventually(
        lambda: fl.condition("cacheruntimes", "rd").get("reason") == "ComponentsNotReady",
        "Ready=False while the master's pod cannot be scheduled",
    )
    condition = fl.condition("cacheruntimes", "rd")
    assert condition["status"] == "False"
    assert "master 0/1 ready" in condition["message"], condition["message"]
    assert fl.get("cacheruntimes", "rd")["status"]["valueFile"] == names.runtime_config_configmap("rd")

    node_label.append(key)
    core.patch_node(core.list_node().items[0].metadata.name, {"metadata": {"labels": {key: "true"}}})
    eventually(
        lambda: fl.condition("cacheruntimes", "rd").get("status") == "True",
        "Ready once the master's pod runs on the labelled node",
        timeout=60,
    )
    assert fl.condition("cacheruntimes", "rd")["reason"] == "Reconciled"


def owners(fl: Fluid, name: str) -> list[str]:
    cm = fl.core.read_namespaced_config_map(name, fl.ns)
    return sorted(ref.name for ref in cm.metadata.owner_references or [])


def test_a_class_configmap_is_shared_by_its_runtimes_and_goes_with_the_last(
    fl: Fluid, controller: ControllerProcess
) -> None:
    for name in ("ca", "cb"):
        fl.create(dataset(name))
        fl.create(runtime(name, runtime_class="curvine", clientless=False))
    for name in ("ca", "cb"):
        eventually(lambda name=name: fl.bound(name), f"Dataset {name} Bound", timeout=30)  # type: ignore[misc]
    eventually(lambda: owners(fl, "curvine-config") == ["ca", "cb"], "both runtimes own curvine-config")
    cm = fl.core.read_namespaced_config_map("curvine-config", fl.ns)
    assert "cluster.toml" in (cm.data or {})
    assert not any(ref.controller for ref in cm.metadata.owner_references)
    version = cm.metadata.resource_version
    quiet(fl, controller)
    assert fl.core.read_namespaced_config_map("curvine-config", fl.ns).metadata.resource_version == version

    fl.delete("datasets", "ca")
    wait_until_gone(fl.get, "cacheruntimes", "ca", what="runtime ca deleted")
    eventually(lambda: owners(fl, "curvine-config") == ["cb"], "cb alone owns curvine-config", timeout=60)
    assert fl.bound("cb")
    fl.delete("datasets", "cb")
    wait_until_gone(
        fl.core.read_namespaced_config_map, "curvine-config", fl.ns, what="curvine-config gone with cb"
    )


def test_a_configmap_of_the_class_name_made_by_someone_else_is_not_taken_over(fl: Fluid) -> None:
    fl.core.create_namespaced_config_map(
        fl.ns, {"metadata": {"name": "curvine-config"}, "data": {"mine": "1"}}
    )
    fl.create(dataset("cc"))
    fl.create(runtime("cc", runtime_class="curvine", clientless=False))
    eventually(
        lambda: fl.condition("cacheruntimes", "cc").get("reason") == "NameConflict",
        "NameConflict",
        timeout=30,
    )
    message = fl.condition("cacheruntimes", "cc")["message"]
    assert f"ConfigMap {fl.ns}/curvine-config" in message
    assert "is not managed by fluid-controller" in message
    assert fl.core.read_namespaced_config_map("curvine-config", fl.ns).data == {"mine": "1"}
    eventually(lambda: any("NameConflict" in e for e in fl.events("cc")), "a NameConflict Event")
    fl.core.delete_namespaced_config_map("curvine-config", fl.ns)
    eventually(lambda: fl.bound("cc"), "Bound once the name is free (rechecked every 30 s)", timeout=60)
    assert owners(fl, "curvine-config") == ["cc"]


@pytest.fixture
def runtime_class(fl: Fluid) -> Iterator[str]:
    """A cluster-scoped class of this test's own, deleted afterwards."""
    name = f"c-{fl.ns}"[:63]
    yield name
    try:
        fl.custom.delete_cluster_custom_object(GROUP, VERSION, "cacheruntimeclasses", name)
    except client.ApiException as e:
        if e.status != 404:
            raise


def test_upstreams_refusals_become_conditions_and_events_and_a_fix_binds(
    fl: Fluid, runtime_class: str, controller: ControllerProcess
) -> None:
    body = {
        "apiVersion": names.API_VERSION,
        "kind": "CacheRuntimeClass",
        "metadata": {"name": runtime_class},
        "fileSystemType": "testfs",
    }
    fl.custom.create_cluster_custom_object(GROUP, VERSION, "cacheruntimeclasses", body)
    fl.create(dataset("bad"))
    fl.create(runtime("bad", runtime_class=runtime_class))

    def refused(reason: str, words: str) -> None:
        eventually(
            lambda: words in fl.condition("cacheruntimes", "bad").get("message", ""), f"condition: {words}"
        )
        condition = fl.condition("cacheruntimes", "bad")
        assert (condition["status"], condition["reason"]) == ("False", reason)
        eventually(lambda: any(words in e and reason in e for e in fl.events("bad")), f"an Event: {words}")
        assert (fl.get("datasets", "bad").get("status") or {}).get("phase") == "NotBound"

    refused("InvalidRuntimeClass", "at least one component should be defined in runtimeClass")
    topology: dict[str, Any] = {"master": {"template": {"spec": {"restartPolicy": "Always"}}}}
    fl.custom.patch_cluster_custom_object(
        GROUP, VERSION, "cacheruntimeclasses", runtime_class, {"topology": topology}
    )
    refused("InvalidRuntimeClass", "component master must define at least one container")
    # The runtime's bad mount first, then the class's fix: in the other order the pair is valid for a
    # moment, the Dataset binds, and a later refusal keeps what was bound (nothing is lost).
    fl.patch(
        "cacheruntimes", "bad", {"spec": {"master": {"volumeMounts": [{"name": "v", "mountPath": "/v"}]}}}
    )
    containers: list[dict[str, Any]] = [{"name": "master", "image": "registry.k8s.io/pause:3.10"}]
    topology["master"]["template"]["spec"]["containers"] = containers
    fl.custom.patch_cluster_custom_object(
        GROUP, VERSION, "cacheruntimeclasses", runtime_class, {"topology": topology}
    )
    refused("InvalidSpec", "volume not found for volumeMount v")
    fl.patch("cacheruntimes", "bad", {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}})
    eventually(lambda: fl.bound("bad"), "Bound once the class and the runtime are fixed", timeout=30)
    master = as_json(fl.apps.read_namespaced_stateful_set("bad-master", fl.ns))["spec"]
    assert not master.get("serviceName")  # the class gives the master no Service
    assert {"name": "v", "mountPath": "/v"} in master["template"]["spec"]["containers"][0]["volumeMounts"]
    assert fl.core.list_namespaced_service(fl.ns).items == []

    # A template the API server cannot take (a quantity it cannot read): the runtime's condition says
    # so in the server's words, for the generation it saw, with an Event (issue 28: it kept an older
    # condition, the words only in the controller's log).
    containers[0]["resources"] = {"requests": {"cpu": "lots"}}
    fl.custom.patch_cluster_custom_object(
        GROUP, VERSION, "cacheruntimeclasses", runtime_class, {"topology": topology}
    )
    words = "quantities must match the regular expression"
    eventually(
        lambda: words in fl.condition("cacheruntimes", "bad").get("message", ""), f"condition: {words}"
    )
    condition = fl.condition("cacheruntimes", "bad")
    assert (condition["status"], condition["reason"]) == ("False", "InvalidStatefulSet"), condition
    assert "StatefulSet bad-master was refused" in condition["message"]
    generation = fl.get("cacheruntimes", "bad")["metadata"]["generation"]
    assert condition.get("observedGeneration") == generation
    eventually(lambda: any(words in e for e in fl.events("bad")), f"an Event: {words}")
    assert controller.alive()


def pause_class(name: str, **topology: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}
    return {
        "apiVersion": names.API_VERSION,
        "kind": "CacheRuntimeClass",
        "metadata": {"name": name},
        "fileSystemType": "testfs",
        "topology": {"master": {"template": template, **topology}},
    }


def test_a_configmap_the_class_no_longer_defines_is_released_then_deleted(
    fl: Fluid, runtime_class: str
) -> None:
    body = pause_class(
        runtime_class,
        dependencies={"extraResources": {"configMaps": [{"name": "conf", "mountPath": "/conf"}]}},
    )
    body["extraResources"] = {"configMaps": [{"name": "conf", "data": {"a": "1"}}]}
    fl.custom.create_cluster_custom_object(GROUP, VERSION, "cacheruntimeclasses", body)
    for name in ("ra", "rb"):
        fl.create(dataset(name))
        fl.create(runtime(name, runtime_class=runtime_class))
    eventually(lambda: owners(fl, "conf") == ["ra", "rb"], "both runtimes own conf", timeout=30)
    # The class changes its data: both runtimes write the new data, neither undoes the other.
    changed = {"extraResources": {"configMaps": [{"name": "conf", "data": {"a": "2"}}]}}
    fl.custom.patch_cluster_custom_object(GROUP, VERSION, "cacheruntimeclasses", runtime_class, changed)
    eventually(lambda: fl.core.read_namespaced_config_map("conf", fl.ns).data == {"a": "2"}, "conf updated")
    assert owners(fl, "conf") == ["ra", "rb"]
    # Gone from the class: the first runtime to notice lets go, the last one deletes it.
    fl.custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "cacheruntimeclasses",
        runtime_class,
        {"extraResources": None, "topology": {"master": {"dependencies": None}}},
    )
    wait_until_gone(fl.core.read_namespaced_config_map, "conf", fl.ns, what="conf deleted", timeout=30)
    for name in ("ra", "rb"):
        volumes = fl.apps.read_namespaced_stateful_set(f"{name}-master", fl.ns).spec.template.spec.volumes
        assert "conf" not in {v.config_map.name for v in volumes if v.config_map}


def test_a_service_the_class_adds_needs_the_statefulset_re_created_and_says_so(
    fl: Fluid, runtime_class: str
) -> None:
    fl.custom.create_cluster_custom_object(GROUP, VERSION, "cacheruntimeclasses", pause_class(runtime_class))
    fl.create(dataset("sv"))
    fl.create(runtime("sv", runtime_class=runtime_class))
    eventually(lambda: fl.bound("sv"), "Dataset sv Bound", timeout=30)
    fl.custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "cacheruntimeclasses",
        runtime_class,
        {"topology": {"master": {"service": {"headless": {}}}}},
    )
    eventually(
        lambda: fl.condition("cacheruntimes", "sv").get("reason") == "InvalidStatefulSet",
        "InvalidStatefulSet",
    )
    message = fl.condition("cacheruntimes", "sv")["message"]
    assert f"delete StatefulSet {fl.ns}/sv-master and the controller re-creates it" in message
    fl.apps.delete_namespaced_stateful_set("sv-master", fl.ns, propagation_policy="Orphan")
    eventually(
        lambda: fl.apps.read_namespaced_stateful_set("sv-master", fl.ns).spec.service_name == "svc-sv-master",
        "the StatefulSet re-created with its Service",
        timeout=30,
    )
    eventually(lambda: fl.condition("cacheruntimes", "sv").get("status") == "True", "Ready again", timeout=30)
    assert fl.core.read_namespaced_service("svc-sv-master", fl.ns).spec.cluster_ip == "None"
