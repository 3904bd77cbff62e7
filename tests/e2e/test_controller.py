"""The controller as a process against the real API server, authenticated as its ServiceAccount with
the RBAC from manifests/: what a Dataset + CacheRuntime become, updates, a steady state with no
writes, restarts, failover, deletion, and bad input."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, cast

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import build_runtime_config, render_json, render_sh
from tests.e2e.fluid import E2E_NAMESPACE_LABEL, ControllerProcess, lease_holder, wait_until_gone
from tests.e2e.wait import as_json, eventually

GROUP, VERSION = names.GROUP, names.VERSION


def dataset(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": "Dataset",
        "metadata": {"name": name},
        "spec": {"mounts": [{"name": "default", "mountPoint": "hdfs://nn:8020/data"}], **spec},
    }


def runtime(
    name: str, runtime_class: str = "mooncake", clientless: bool = True, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"runtimeClassName": runtime_class, "master": {"replicas": 1}, **spec}
    if clientless:
        body["client"] = {"disabled": True}
    return {"apiVersion": names.API_VERSION, "kind": "CacheRuntime", "metadata": {"name": name}, "spec": body}


class Fluid:
    """The test's view of data.fluid.io objects through the official client."""

    def __init__(self, k8s: client.ApiClient, namespace: str) -> None:
        self.custom = client.CustomObjectsApi(k8s)
        self.core = client.CoreV1Api(k8s)
        self.apps = client.AppsV1Api(k8s)
        self.ns = namespace

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        plural = {"Dataset": "datasets", "CacheRuntime": "cacheruntimes"}[obj["kind"]]
        created = self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, plural, obj)
        return cast(dict[str, Any], created)

    def get(self, plural: str, name: str) -> dict[str, Any]:
        found = self.custom.get_namespaced_custom_object(GROUP, VERSION, self.ns, plural, name)
        return cast(dict[str, Any], found)

    def patch(self, plural: str, name: str, body: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.ns, plural, name, body)

    def delete(self, plural: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.ns, plural, name)

    def configmap(self, name: str) -> dict[str, Any]:
        cm: dict[str, Any] = as_json(
            self.core.read_namespaced_config_map(names.runtime_config_configmap(name), self.ns)
        )
        return cm

    def condition(self, plural: str, name: str) -> dict[str, Any]:
        status = self.get(plural, name).get("status") or {}
        return next((c for c in status.get("conditions", []) if c["type"] == names.CONDITION_READY), {})

    def bound(self, name: str) -> bool:
        return (self.get("datasets", name).get("status") or {}).get("phase") == "Bound"

    def expected_config(self, name: str) -> tuple[str, str]:
        """runtime.json and runtime.sh rendered locally, by the pure builders, from the objects as
        the API server stores them (with its defaults)."""
        ds = Dataset.model_validate(self.get("datasets", name))
        rt = CacheRuntime.model_validate(self.get("cacheruntimes", name))
        crc = CacheRuntimeClass.model_validate(
            self.custom.get_cluster_custom_object(
                GROUP, VERSION, "cacheruntimeclasses", rt.spec.runtime_class_name
            )
        )
        config = build_runtime_config(ds, rt, crc, self.ns)
        return render_json(config), render_sh(config)

    def events(self, name: str) -> list[str]:
        events = self.core.list_namespaced_event(self.ns, field_selector=f"involvedObject.name={name}").items
        return [f"{e.type} {e.reason}: {e.message}" for e in events]


@pytest.fixture
def fl(k8s: client.ApiClient, namespace: str, controller: ControllerProcess) -> Fluid:
    return Fluid(k8s, namespace)


def test_clientless_dataset_becomes_configmap_workloads_pv_pvc_and_binds(fl: Fluid) -> None:
    fl.create(dataset("ds1"))
    fl.create(
        runtime(
            "ds1",
            worker={"replicas": 2, "tieredStore": {"levels": [{"processMemory": {"quota": "1024Mi"}}]}},
        )
    )
    eventually(lambda: fl.bound("ds1"), "Dataset ds1 Bound", timeout=30)

    want_json, want_sh = fl.expected_config("ds1")
    cm = fl.configmap("ds1")
    assert cm["data"][names.RUNTIME_JSON_KEY] == want_json
    assert cm["data"][names.RUNTIME_SH_KEY] == want_sh
    owner = cm["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CacheRuntime", "ds1", True)

    sts = {s.metadata.name: s for s in fl.apps.list_namespaced_stateful_set(fl.ns).items}
    assert set(sts) == {"ds1-master", "ds1-worker"}
    assert sts["ds1-worker"].spec.replicas == 2
    assert sts["ds1-master"].spec.service_name == "svc-ds1-master"
    svcs = {s.metadata.name: s for s in fl.core.list_namespaced_service(fl.ns).items}
    assert {"svc-ds1-master", "svc-ds1-worker"} <= set(svcs)
    assert svcs["svc-ds1-master"].spec.cluster_ip == "None"
    assert fl.apps.list_namespaced_daemon_set(fl.ns).items == []  # clientless: no client DaemonSet

    pv = as_json(fl.core.read_persistent_volume(names.dataset_pv(fl.ns, "ds1")))
    assert pv["spec"]["csi"]["driver"] == names.CSI_DRIVER
    assert pv["spec"]["csi"]["volumeAttributes"]["clientless"] == "true"
    pvc = as_json(fl.core.read_namespaced_persistent_volume_claim("ds1", fl.ns))
    assert pvc["metadata"]["labels"][names.dataset_pvc_label(fl.ns, "ds1")] == "true"
    eventually(
        lambda: fl.core.read_namespaced_persistent_volume_claim("ds1", fl.ns).status.phase == "Bound",
        "PVC ds1 bound to its PV",
        timeout=60,
    )
    status = fl.get("datasets", "ds1")["status"]
    assert status["runtimes"] == [
        {"name": "ds1", "namespace": fl.ns, "category": "Accelerate", "type": "cache", "masterReplicas": 1}
    ]
    assert fl.condition("datasets", "ds1")["reason"] == "DatasetReady"
    # Ready once the master and a worker have ready pods (kwok's pods become ready quickly).
    eventually(lambda: fl.condition("cacheruntimes", "ds1").get("status") == "True", "runtime ds1 Ready")
    assert fl.get("cacheruntimes", "ds1")["status"]["valueFile"] == names.runtime_config_configmap("ds1")

    # The worker as upstream builds it, stored as the controller wrote it (quantities canonical).
    worker = as_json(sts["ds1-worker"])["spec"]["template"]
    assert worker["metadata"]["labels"][names.LABEL_DATASET_PLACEMENT] == "Exclusive"
    assert {"name": names.memory_tier_volume(0), "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}} in (
        worker["spec"]["volumes"]
    )
    assert sts["ds1-worker"].spec.selector.match_labels == {
        names.LABEL_CACHERUNTIME_NAME: "ds1",
        names.LABEL_CACHERUNTIME_COMPONENT: "ds1-worker",
    }


def test_fuse_runtime_gets_a_client_daemonset_and_fuse_pv_attributes(fl: Fluid) -> None:
    fl.create(dataset("fs1"))
    fl.create(runtime("fs1", runtime_class="curvine", clientless=False))
    eventually(lambda: fl.bound("fs1"), "Dataset fs1 Bound", timeout=30)
    assert [d.metadata.name for d in fl.apps.list_namespaced_daemon_set(fl.ns).items] == ["fs1-client"]
    attrs = fl.core.read_persistent_volume(names.dataset_pv(fl.ns, "fs1")).spec.csi.volume_attributes
    # SPEC §7: the runtime's client serves it (upstream's attributes), no masters for a FUSE of the CSI's.
    assert attrs[names.VOLUME_ATTR_FLUID_PATH] == names.target_path(fl.ns, "fs1")
    assert (attrs[names.VOLUME_ATTR_RUNTIME_NAMESPACE], attrs[names.VOLUME_ATTR_RUNTIME_NAME]) == (
        fl.ns,
        "fs1",
    )
    assert names.PARAM_MASTER_ADDRS not in (attrs or {})
    # Disabling the client removes the DaemonSet and makes the dataset clientless.
    fl.patch("cacheruntimes", "fs1", {"spec": {"client": {"disabled": True}}})
    eventually(
        lambda: not fl.apps.list_namespaced_daemon_set(fl.ns).items, "client DaemonSet removed", timeout=30
    )
    eventually(
        lambda: "CLIENT_ENABLED='false'" in fl.configmap("fs1")["data"][names.RUNTIME_SH_KEY],
        "runtime.sh without a client",
        timeout=30,
    )


def test_a_dataset_pv_made_before_spec_7_keeps_its_master_addrs(fl: Fluid) -> None:
    # An upgrade: the Dataset's PV was made by an earlier controller, naming the master (SPEC §5). A
    # PV's source is immutable; the controller keeps it rather than fight over it.
    fl.create(dataset("fs1"))
    fl.create(runtime("fs1", runtime_class="curvine", clientless=False))
    eventually(lambda: fl.bound("fs1"), "Dataset fs1 Bound", timeout=30)
    made = as_json(fl.core.read_persistent_volume(names.dataset_pv(fl.ns, "fs1")))
    text = json.dumps({"labels": made["metadata"]["labels"], "claimRef": made["spec"]["claimRef"]})
    old = json.loads(text.replace('"fs1"', '"fs2"').replace(f"{fl.ns}-fs1", f"{fl.ns}-fs2"))
    attributes = {
        names.VOLUME_ATTR_DATASET_NAME: "fs2",
        names.VOLUME_ATTR_DATASET_NAMESPACE: fl.ns,
        names.PARAM_MASTER_ADDRS: f"svc-fs2-master.{fl.ns}.svc:8995",
        names.PARAM_FS_PATH: "/",
        names.PARAM_CURVINE_PATH: f"/{fl.ns}/fs2",
    }
    legacy = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": names.dataset_pv(fl.ns, "fs2"), "labels": old["labels"]},
        "spec": {
            **{k: made["spec"][k] for k in ("capacity", "accessModes", "persistentVolumeReclaimPolicy")},
            "storageClassName": made["spec"]["storageClassName"],
            "claimRef": {k: v for k, v in old["claimRef"].items() if k in ("namespace", "name")},
            "csi": {"driver": names.CSI_DRIVER, "volumeHandle": names.dataset_volume_handle(fl.ns, "fs2"),
                    "volumeAttributes": attributes},
        },
    }  # fmt: skip
    # Its Dataset exists (a PV of no Dataset is an orphan, and deleted), its runtime comes after.
    fl.create(dataset("fs2"))
    eventually(
        lambda: names.DATASET_FINALIZER in fl.get("datasets", "fs2")["metadata"].get("finalizers", []),
        "Dataset fs2 held by the controller",
        timeout=30,
    )
    fl.core.create_persistent_volume(legacy)
    try:
        fl.create(runtime("fs2", runtime_class="curvine", clientless=False))
        eventually(lambda: fl.bound("fs2"), "Dataset fs2 Bound over its old PV", timeout=30)
        pv = fl.core.read_persistent_volume(names.dataset_pv(fl.ns, "fs2"))
        assert pv.spec.csi.volume_attributes == attributes
        assert not [e for e in fl.events("fs2") if e.startswith("Warning")]
    finally:
        fl.delete("datasets", "fs2")


def test_an_option_change_reaches_the_configmap_and_a_steady_cluster_sees_no_writes(
    fl: Fluid, controller: ControllerProcess
) -> None:
    fl.create(dataset("ds2"))
    fl.create(runtime("ds2", options={"tier": "a"}))
    eventually(lambda: fl.bound("ds2"), "Dataset ds2 Bound", timeout=30)
    started = time.monotonic()
    fl.patch("cacheruntimes", "ds2", {"spec": {"options": {"tier": "b"}}})
    eventually(
        lambda: '"tier":"b"' in fl.configmap("ds2")["data"][names.RUNTIME_JSON_KEY], "option in runtime.json"
    )
    print(f"option change reached the ConfigMap in {time.monotonic() - started:.2f}s")
    assert fl.configmap("ds2")["data"][names.RUNTIME_JSON_KEY] == fl.expected_config("ds2")[0]

    # Let this update and earlier tests' namespace deletions settle, then watch 30 s of nothing.
    quiet(fl, controller)
    before = snapshot(fl, "ds2")
    writes = controller.metric("fluid_controller_api_writes_total")
    time.sleep(30)
    assert snapshot(fl, "ds2") == before
    assert controller.metric("fluid_controller_api_writes_total") == writes


def quiet(fl: Fluid, controller: ControllerProcess, still: float = 5.0) -> None:
    """Until earlier tests' namespaces are gone (their teardown makes the controller write) and then
    the controller has written nothing for ``still`` seconds."""

    def others_gone() -> bool:
        selector = f"{E2E_NAMESPACE_LABEL}=true"
        return all(n.metadata.name == fl.ns for n in fl.core.list_namespace(label_selector=selector).items)

    eventually(others_gone, "earlier test namespaces deleted", timeout=120)
    last, since = controller.metric("fluid_controller_api_writes_total"), time.monotonic()
    deadline = since + 90
    while time.monotonic() - since < still:
        assert time.monotonic() < deadline, "the controller never stopped writing"
        time.sleep(0.5)
        now = controller.metric("fluid_controller_api_writes_total")
        if now != last:
            last, since = now, time.monotonic()


def snapshot(fl: Fluid, name: str) -> dict[str, str]:
    """resourceVersion of everything the controller writes for one dataset."""
    objs = {
        "Dataset": [fl.get("datasets", name)],
        "CacheRuntime": [fl.get("cacheruntimes", name)],
        "ConfigMap": [
            as_json(fl.core.read_namespaced_config_map(names.runtime_config_configmap(name), fl.ns))
        ],
        "PersistentVolume": [as_json(fl.core.read_persistent_volume(names.dataset_pv(fl.ns, name)))],
        "PersistentVolumeClaim": [as_json(fl.core.read_namespaced_persistent_volume_claim(name, fl.ns))],
        "StatefulSet": as_json(fl.apps.list_namespaced_stateful_set(fl.ns))["items"],
        "Service": as_json(fl.core.list_namespaced_service(fl.ns))["items"],
    }
    return {
        f"{kind}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for kind, items in objs.items()
        for o in items
    }


def test_killed_mid_reconcile_and_restarted_it_converges(fl: Fluid, controller: ControllerProcess) -> None:
    for i in range(12):
        fl.create(dataset(f"k{i}"))
        fl.create(runtime(f"k{i}"))
    # Kill -9 as soon as the first children appear: some keys are half done.
    eventually(
        lambda: (
            fl.core.list_namespaced_config_map(fl.ns, label_selector=f"{names.LABEL_APP_MANAGED_BY}").items
        ),
        "first ConfigMap",
    )
    controller.kill()
    controller.start()
    controller.wait_ready()
    for name in (f"k{i}" for i in range(12)):
        eventually(bound(fl, name), f"Dataset {name} Bound after the restart", timeout=60)
        assert fl.configmap(name)["data"][names.RUNTIME_SH_KEY] == fl.expected_config(name)[1]


def bound(fl: Fluid, name: str) -> Callable[[], bool]:
    return lambda: fl.bound(name)


def test_two_replicas_one_leads_and_the_other_takes_over(
    fl: Fluid, controller: ControllerProcess, k8s: client.ApiClient
) -> None:
    coordination = client.CoordinationV1Api(k8s)
    eventually(lambda: controller.metric("fluid_controller_is_leader") == 1, "replica a leading", timeout=30)
    standby = ControllerProcess(controller.kubeconfig, controller.log_dir, "e2e-b")
    standby.start()
    try:
        standby.wait_ready()
        time.sleep(2)
        assert lease_holder(coordination) == "e2e-a"
        assert standby.metric("fluid_controller_is_leader") == 0
        controller.kill()  # no release: the standby must wait out the lease
        eventually(lambda: lease_holder(coordination) == "e2e-b", "replica b holding the lease", timeout=20)
        fl.create(dataset("after-failover"))
        fl.create(runtime("after-failover"))
        eventually(lambda: fl.bound("after-failover"), "a new Dataset bound by the new leader", timeout=30)
    finally:
        standby.stop()
    # A clean stop releases the lease at once.
    eventually(lambda: lease_holder(coordination) == "", "the lease released", timeout=10)


def test_deleting_a_dataset_waits_for_its_pods_then_removes_children_and_pv(fl: Fluid) -> None:
    fl.create(dataset("gone"))
    fl.create(runtime("gone"))
    eventually(lambda: fl.bound("gone"), "Dataset gone Bound", timeout=30)
    fl.core.create_namespaced_pod(
        fl.ns,
        {
            "metadata": {"name": "user"},
            "spec": {
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "gone"}}],
            },
        },
    )
    fl.delete("datasets", "gone")
    eventually(
        lambda: fl.condition("datasets", "gone").get("reason") == "DatasetInUse", "DatasetInUse condition"
    )
    assert "user" in fl.condition("datasets", "gone")["message"]
    eventually(lambda: any("DatasetInUse" in e for e in fl.events("gone")), "a DatasetInUse Event")
    assert fl.get("datasets", "gone")  # still there while the pod uses the PVC

    fl.core.delete_namespaced_pod("user", fl.ns, grace_period_seconds=0)
    wait_until_gone(fl.get, "datasets", "gone", what="Dataset gone deleted")
    wait_until_gone(fl.core.read_persistent_volume, names.dataset_pv(fl.ns, "gone"), what="its PV deleted")
    wait_until_gone(fl.get, "cacheruntimes", "gone", what="its CacheRuntime deleted")
    wait_until_gone(
        fl.core.read_namespaced_config_map,
        names.runtime_config_configmap("gone"),
        fl.ns,
        what="its ConfigMap deleted",
    )
    wait_until_gone(
        fl.apps.read_namespaced_stateful_set, "gone-master", fl.ns, what="its StatefulSet deleted"
    )


def test_deleting_a_runtime_takes_its_client_and_node_labels_down_before_the_master(fl: Fluid) -> None:
    """A runtime with a client carries names.RUNTIME_FINALIZER (controller/teardown.py): deleted on its
    own, it waits while a pod uses the Dataset, then deletes the client DaemonSet and waits for the
    client pods, takes the fluid.io/f-* label off, and only then goes, the master with it. A test
    finalizer holds the client pod, so the wait is seen, not raced."""
    fl.create(dataset("order"))
    fl.create(runtime("order", runtime_class="curvine", clientless=False))
    eventually(lambda: fl.bound("order"), "Dataset order Bound", timeout=30)
    assert names.RUNTIME_FINALIZER in fl.get("cacheruntimes", "order")["metadata"]["finalizers"]
    label = names.fuse_node_label(fl.ns, "order")
    node = next(
        n.metadata.name
        for n in fl.core.list_node().items
        if "kwok.x-k8s.io/node" in (n.metadata.annotations or {})
    )
    fl.core.patch_node(node, {"metadata": {"labels": {label: "true"}}})  # as the CSI node's NodeStage does
    selector = f"{names.LABEL_CACHERUNTIME_COMPONENT}={names.component_name('order', 'client')}"

    def client_pods() -> list[Any]:
        return list(fl.core.list_namespaced_pod(fl.ns, label_selector=selector).items)

    eventually(lambda: [p.spec.node_name for p in client_pods()] == [node], "the client pod on the node")
    hold = "e2e.fluid.io/hold"
    fl.core.patch_namespaced_pod(client_pods()[0].metadata.name, fl.ns, {"metadata": {"finalizers": [hold]}})
    fl.core.create_namespaced_pod(
        fl.ns,
        {
            "metadata": {"name": "reader"},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "order"}}],
            },
        },
    )

    fl.delete("cacheruntimes", "order")
    eventually(lambda: any("DatasetInUse" in e and "reader" in e for e in fl.events("order")), "DatasetInUse")
    assert fl.apps.read_namespaced_daemon_set("order-client", fl.ns)  # the app still reads through it
    fl.core.delete_namespaced_pod("reader", fl.ns, grace_period_seconds=0)
    wait_until_gone(
        fl.apps.read_namespaced_daemon_set, "order-client", fl.ns, what="client DaemonSet deleted"
    )
    time.sleep(3)  # more than a recheck (teardown.CLIENT_GONE_RECHECK): the held client pod holds it all
    assert [p.metadata.deletion_timestamp is not None for p in client_pods()] == [True]
    assert fl.get("cacheruntimes", "order")["metadata"]["finalizers"] == [names.RUNTIME_FINALIZER]
    assert label in (fl.core.read_node(node).metadata.labels or {})
    assert fl.apps.read_namespaced_stateful_set("order-master", fl.ns).metadata.deletion_timestamp is None

    fl.core.patch_namespaced_pod(client_pods()[0].metadata.name, fl.ns, {"metadata": {"finalizers": None}})
    wait_until_gone(fl.get, "cacheruntimes", "order", what="the runtime released")
    assert label not in (fl.core.read_node(node).metadata.labels or {})
    wait_until_gone(fl.apps.read_namespaced_stateful_set, "order-master", fl.ns, what="the master collected")
    eventually(
        lambda: fl.condition("datasets", "order").get("reason") == "NoRuntime", "Dataset says NoRuntime"
    )


def test_bad_input_ends_in_conditions_and_events_not_a_crash(
    fl: Fluid, controller: ControllerProcess
) -> None:
    fl.create(runtime("orphan"))
    eventually(
        lambda: fl.condition("cacheruntimes", "orphan").get("reason") == "DatasetNotFound", "DatasetNotFound"
    )
    assert 'no Dataset "orphan"' in fl.condition("cacheruntimes", "orphan")["message"]
    eventually(lambda: any("DatasetNotFound" in e for e in fl.events("orphan")), "a DatasetNotFound Event")

    fl.create(dataset("badclass"))
    fl.create(runtime("badclass", runtime_class="no-such-class"))
    eventually(
        lambda: fl.condition("cacheruntimes", "badclass").get("reason") == "RuntimeClassNotFound",
        "RuntimeClassNotFound",
    )
    message = fl.condition("cacheruntimes", "badclass")["message"]
    assert '"no-such-class" not found' in message
    assert "mooncake" in message  # it names the classes that exist
    assert (fl.get("datasets", "badclass").get("status") or {}).get("phase") == "NotBound"
    # No ConfigMap was made: the runtime's status names none (issue 28: it named one not there).
    assert "valueFile" not in fl.get("cacheruntimes", "badclass")["status"]

    with pytest.raises(client.ApiException) as refused:
        fl.create(dataset("x" * 43))
    assert refused.value.status == 422
    assert "at most 42 characters" in str(refused.value.body)

    secret_ref = {"name": "key", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}
    fl.create(
        dataset(
            "secretive", mounts=[{"name": "m", "mountPoint": "s3://bucket/x", "encryptOptions": [secret_ref]}]
        )
    )
    fl.create(runtime("secretive"))
    eventually(
        lambda: fl.condition("cacheruntimes", "secretive").get("reason") == "SecretNotFound", "SecretNotFound"
    )
    assert 'Secret "creds"' in fl.condition("cacheruntimes", "secretive")["message"]
    fl.core.create_namespaced_secret(fl.ns, {"metadata": {"name": "creds"}, "stringData": {"token": "t"}})
    eventually(lambda: fl.bound("secretive"), "Bound once the Secret exists", timeout=60)

    assert controller.alive()
    assert "Traceback" not in controller.log.read_text()
