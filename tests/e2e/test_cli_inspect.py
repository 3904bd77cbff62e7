"""``kubectl fluid inspect dataset DS`` through a real kubectl, on what the controller, the webhook, the
API server's own controllers and kwok really made: a FUSE dataset (Curvine's sample class) with its
master, worker and a client pod on a node labelled for it, a FuseMount of that client, a DataLoad run
to its end, and app pods on both paths (mounting the PVC; injected by the webhook); and a clientless
dataset beside it. ``-o json`` must agree with kubectl's own answers about the same objects."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import kubectl
from tests.e2e.test_cli_inject import (
    app_template,
    deployment,
    fl,
    kubectl_fluid,
    live_pods,
    ok,
    one_error_line,
)
from tests.e2e.test_cli_mounts import write_fusemount
from tests.e2e.test_controller import GROUP, VERSION, Fluid, dataset, runtime
from tests.e2e.test_webhook import ready_dataset
from tests.e2e.wait import eventually

__all__ = ["fl"]  # the fixture, used by name
DS = "cache"


@pytest.fixture
def client_node(fl: Fluid) -> Iterator[str]:
    """A kwok node to label for the dataset's client (the test labels it once the runtime exists, as
    the CSI node labels the node of a pod that stages the PVC: the controller takes the label off a
    node while no runtime wants it); the label is taken off afterwards (the node is the session's)."""
    node = str(fl.core.list_node().items[0].metadata.name)
    yield node
    fl.core.patch_node(node, {"metadata": {"labels": {names.fuse_node_label(fl.ns, DS): None}}})


@pytest.fixture
def fusemount(fl: Fluid, client_node: str) -> Iterator[Callable[[str], str]]:
    """Writes the FuseMount of the dataset's client on ``client_node`` as the CSI node service would
    publish it (mode client: no masters, the Dataset named); deleted afterwards (cluster-scoped)."""
    custom = client.CustomObjectsApi(fl.core.api_client)
    made: list[str] = []

    def write(pod: str) -> str:
        target = {"path": "/var/lib/kubelet/pods/x/volumes/data", "podUID": "x"}
        status = {
            "phase": "Ready",
            "refCount": 1,
            "podName": pod,
            "volumes": [{"volumeID": f"{fl.ns}-{DS}", "stagingPath": "/staging", "targets": [target]}],
        }
        made.append(
            write_fusemount(
                custom,
                client_node,
                secrets.token_hex(16),
                status,
                mode=names.CLIENT_MODE,
                dataset={"namespace": fl.ns, "name": DS},
                masterAddrs=None,
                clusterID=None,
                fsPath=names.DEFAULT_FS_PATH,
                mntPath=names.client_shared_path(fl.ns, DS),
            )
        )
        return made[-1]

    yield write
    for name in made:
        custom.delete_cluster_custom_object(GROUP, VERSION, "fusemounts", name)


def kubectl_json(kubeconfig: Path, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(kubeconfig, "get", *args, "-o", "json"))
    return found


def inspected(kubeconfig: Path, ns: str, name: str = DS) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        ok(kubectl_fluid(kubeconfig, "inspect", "dataset", name, "-n", ns, "-o", "json"))
    )
    return found


def kubectls_view(kubeconfig: Path, ns: str, fusemount: str) -> dict[str, Any]:
    """What kubectl says of the dataset's parts, in the shape of inspect's JSON (the fields compared)."""
    ds = kubectl_json(kubeconfig, "dataset", DS, "-n", ns)
    rt = kubectl_json(kubeconfig, "cacheruntime", DS, "-n", ns)
    workloads = kubectl_json(
        kubeconfig, "statefulsets,daemonsets", "-n", ns, "-l", f"{names.LABEL_CACHERUNTIME_NAME}={DS}"
    )
    pods = kubectl_json(kubeconfig, "pods", "-n", ns)["items"]
    cm = kubectl_json(kubeconfig, "configmap", names.runtime_config_configmap(DS), "-n", ns)
    pvc = kubectl_json(kubeconfig, "pvc", DS, "-n", ns)
    pv = kubectl_json(kubeconfig, "pv", names.dataset_pv(ns, DS))
    fm = kubectl_json(kubeconfig, "fusemount", fusemount)
    loads = kubectl_json(kubeconfig, "dataloads", "-n", ns)["items"]

    def replicas(w: dict[str, Any]) -> tuple[int, int]:
        if w["kind"] == "DaemonSet":
            return w["status"].get("desiredNumberScheduled", 0), w["status"].get("numberReady", 0)
        return w["spec"]["replicas"], w["status"].get("readyReplicas", 0)

    component_pods = {
        c: sorted(
            (p["metadata"]["name"], p["spec"].get("nodeName"))
            for p in pods
            if p["metadata"].get("labels", {}).get(names.LABEL_CACHERUNTIME_COMPONENT)
            == names.component_name(DS, c)
        )
        for c in names.COMPONENTS
    }
    cm_volume = names.runtime_config_configmap(DS)

    def via(p: dict[str, Any]) -> list[str]:
        volumes = p["spec"].get("volumes") or []
        injected = any(
            v["name"] == cm_volume and v.get("configMap", {}).get("name") == cm_volume for v in volumes
        )
        claimed = any(v.get("persistentVolumeClaim", {}).get("claimName") == DS for v in volumes)
        return [w for w, used in (("injected", injected), ("pvc", claimed)) if used]

    return {
        "phase": ds["status"]["phase"],
        "conditions": sorted((c["type"], c["status"]) for c in ds["status"].get("conditions", [])),
        "runtimeClass": rt["spec"]["runtimeClassName"],
        "replicas": {w["metadata"]["name"]: replicas(w) for w in workloads["items"]},
        "componentPods": component_pods,
        "configMapKeys": sorted((k, len(v.encode())) for k, v in cm["data"].items()),
        "configMapVersion": cm["metadata"]["resourceVersion"],
        "pvc": (pvc["status"]["phase"], pvc["spec"]["volumeName"]),
        "pv": (
            pv["status"]["phase"],
            f"{pv['spec']['claimRef']['namespace']}/{pv['spec']['claimRef']['name']}",
        ),
        "fuseMounts": [
            (fm["metadata"]["name"], fm["spec"]["nodeName"], fm["status"]["refCount"], fm["status"]["phase"])
        ],
        "dataLoads": sorted((d["metadata"]["name"], d["status"]["phase"]) for d in loads),
        "appPods": sorted(
            (p["metadata"]["name"], p["spec"].get("nodeName"), p["status"]["phase"], tuple(via(p)))
            for p in pods
            if via(p)
        ),
    }


def inspects_view(doc: dict[str, Any]) -> dict[str, Any]:
    """The same fields of inspect's DatasetInspection."""
    return {
        "phase": doc["dataset"]["phase"],
        "conditions": sorted((c["type"], c["status"]) for c in doc["dataset"]["conditions"]),
        "runtimeClass": doc["runtime"]["runtimeClass"],
        "replicas": {c["name"]: (c["desired"], c["ready"]) for c in doc["components"] if c["found"]},
        "componentPods": {
            c["component"]: sorted((p["name"], p["node"]) for p in c["pods"]) for c in doc["components"]
        },
        "configMapKeys": sorted((k["name"], k["size"]) for k in doc["configMap"]["keys"]),
        "configMapVersion": doc["configMap"]["resourceVersion"],
        "pvc": (doc["persistentVolumeClaim"]["phase"], doc["persistentVolumeClaim"]["volumeName"]),
        "pv": (doc["persistentVolume"]["phase"], doc["persistentVolume"]["claim"]),
        "fuseMounts": [(m["name"], m["node"], m["refCount"], m["phase"]) for m in doc["fuseMounts"]],
        "dataLoads": sorted((d["name"], d["phase"]) for d in doc["dataLoads"]),
        "appPods": sorted(
            (p["name"], p["node"], p["status"], tuple(p.get("via", []))) for p in doc["appPods"]
        ),
    }


def test_inspect_agrees_with_kubectl(
    fl: Fluid, kubeconfig: Path, client_node: str, fusemount: Callable[[str], str]
) -> None:
    fl.create(dataset(DS))
    fl.create(runtime(DS, runtime_class="curvine", clientless=False, worker={"replicas": 2}))
    eventually(lambda: fl.bound(DS), f"Dataset {DS} Bound", timeout=30)
    eventually(
        lambda: fl.core.read_namespaced_persistent_volume_claim(DS, fl.ns).status.phase == "Bound",
        "PVC bound",
    )
    fl.core.patch_node(client_node, {"metadata": {"labels": {names.fuse_node_label(fl.ns, DS): names.TRUE}}})
    [client_pod] = eventually(
        lambda: live_pods(fl, names.client_pod_selector(DS)), f"the client pod on {client_node}", timeout=60
    )
    mount = fusemount(client_pod["metadata"]["name"])

    # App pods on both paths: a Deployment mounting the PVC, and pods the webhook injects.
    reader = app_template({"app": "reader"})
    reader["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    reader["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": DS}}]
    deployment(fl, "reader", reader, replicas=2)
    injected = app_template({"app": "trainer", names.LABEL_INJECT: names.TRUE})
    injected["metadata"]["annotations"] = {names.ANNOTATION_DATASET: DS}
    deployment(fl, "trainer", injected, replicas=2)
    ok(kubectl_fluid(kubeconfig, "load", DS, "-n", fl.ns))

    def settled() -> bool:
        pods = live_pods(fl, "app in (reader,trainer)")
        loads = fl.custom.list_namespaced_custom_object(GROUP, VERSION, fl.ns, "dataloads")["items"]
        return (
            len(pods) == 4
            and all(p["status"].get("phase") == "Running" for p in pods)
            and all((d.get("status") or {}).get("phase") in ("Complete", "Failed") for d in loads)
        )

    eventually(settled, "4 app pods Running and the DataLoad ended", timeout=120)

    # kubectl's view, inspect's, kubectl's again: while nothing changed in between, they must agree.
    for _ in range(10):
        before = kubectls_view(kubeconfig, fl.ns, mount)
        doc = inspected(kubeconfig, fl.ns)
        if kubectls_view(kubeconfig, fl.ns, mount) == before:
            break
    else:
        pytest.fail("the dataset's objects kept changing while inspect read them")
    assert inspects_view(doc) == before
    assert len(before["appPods"]) == 4
    assert {v for p in before["appPods"] for v in p[3]} == {"injected", "pvc"}
    assert before["componentPods"]["client"] == [(client_pod["metadata"]["name"], client_node)]
    assert doc["unreadable"] == {}

    # The tree says the same in one line per object; wide lists the FUSE target too.
    tree = ok(kubectl_fluid(kubeconfig, "inspect", "dataset", DS, "-n", fl.ns))
    print(f"\n$ kubectl fluid inspect dataset {DS} -n {fl.ns}\n{tree}")
    first = tree.splitlines()[0].split()
    assert first[:3] == ["Dataset", f"{fl.ns}/{DS}", "Bound"]
    assert f"client: DaemonSet {DS}-client" in tree
    assert f"Pod {client_pod['metadata']['name']}" in tree
    assert "App pods" in tree
    wide = ok(kubectl_fluid(kubeconfig, "inspect", f"dataset/{DS}", "-n", fl.ns, "-o", "wide"))
    assert "/var/lib/kubelet/pods/x/volumes/data" in wide


def test_a_clientless_dataset_and_one_that_is_not_there(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "plain")
    doc = inspected(kubeconfig, fl.ns, "plain")
    client_part = next(c for c in doc["components"] if c["component"] == "client")
    assert (client_part["disabled"], client_part["found"]) == (True, False)
    master = kubectl_json(kubeconfig, "statefulset", names.component_name("plain", "master"), "-n", fl.ns)
    assert (
        next(c for c in doc["components"] if c["component"] == "master")["desired"]
        == master["spec"]["replicas"]
    )
    tree = ok(kubectl_fluid(kubeconfig, "inspect", "dataset", "plain", "-n", fl.ns))
    assert "disabled (the runtime runs none)" in tree

    missing = one_error_line(kubectl_fluid(kubeconfig, "inspect", "dataset", "nope", "-n", fl.ns))
    assert missing == (
        f'error: dataset "nope" not found in namespace "{fl.ns}"; check the name, or find its namespace '
        "with kubectl fluid datasets -A"
    )
