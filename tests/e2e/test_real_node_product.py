"""The product deployed exactly as users deploy it, onto a real node: ``kubectl apply -k manifests/``
on a cluster of its own whose one node is a real, untainted kubelet (as a user's nodes are), the
product's image imported into its containerd (the manifests' ``IfNotPresent``). The controller runs in
its pod, elects a leader and reconciles a Dataset into its runtime ConfigMap through the kubernetes
Service; the webhook bootstraps its certificate from inside its pod and the API server calls it at
its pod's address on the node's bridge (aggregator routing).

Skipped, saying why, where a real node cannot run or the image cannot be built."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import localcluster
from kubectl_fluid.api import names
from localcluster import realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.users_cluster import users_cluster as cluster_of_a_user
from tests.e2e.users_cluster import why_no_users_cluster
from tests.e2e.wait import eventually

NAMESPACE = "fluid-system"


@pytest.fixture(scope="module")
def users_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[localcluster.Cluster]:
    reason = why_no_users_cluster()
    if reason:
        pytest.skip(reason)
    with cluster_of_a_user(tmp_path_factory.mktemp("users-cluster")) as cluster:
        yield cluster


def get(kubeconfig: Path, *args: str) -> dict[str, object]:
    return json.loads(kubectl(kubeconfig, "get", "-o", "json", *args))  # type: ignore[no-any-return]


def lease_holder(kubeconfig: Path, name: str) -> str | None:
    spec: dict[str, str] = get(kubeconfig, "-n", NAMESPACE, "lease", name)["spec"]  # type: ignore[assignment]
    return spec.get("holderIdentity")


def pods(kubeconfig: Path, app: str) -> list[dict[str, object]]:
    listed = get(kubeconfig, "-n", NAMESPACE, "pods", "-l", f"app.kubernetes.io/name={app}")
    return listed["items"]  # type: ignore[return-value]


def ready(pod: dict[str, object]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])  # type: ignore[attr-defined]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_the_product_deployed_with_its_manifests_runs_on_the_real_node(
    users_cluster: localcluster.Cluster,
) -> None:
    kc = users_cluster.kubeconfig
    t0 = time.monotonic()
    kubectl(kc, "apply", "-k", str(MANIFESTS))

    # The controller: its pods on the real node, one of them the Lease's holder.
    controllers = eventually(
        lambda: (ps := pods(kc, "fluid-controller")) and any(ready(p) for p in ps) and ps,
        "a fluid-controller pod Ready on the real node",
        timeout=240,
    )
    assert {p["spec"]["nodeName"] for p in controllers} == {f"{realnodes.NAME_PREFIX}0"}
    names_ = {p["metadata"]["name"] for p in controllers}
    lease = eventually(
        lambda: lease_holder(kc, "fluid-controller"),
        "the controller's Lease held",
        timeout=120,
    )
    assert lease in names_, (lease, names_)
    print(f"controller leader {lease} {time.monotonic() - t0:.0f}s after apply -k")

    # It reconciles a Dataset into its runtime ConfigMap: nothing else in this cluster could.
    kubectl(kc, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml"))
    kubectl(kc, "apply", "-f", str(MANIFESTS / "samples" / "dataset-mooncake.yaml"))
    configmap = names.runtime_config_configmap("demo")
    data = eventually(
        lambda: get(kc, "-n", "default", "configmap", configmap).get("data"),
        f"ConfigMap default/{configmap} written by the controller in its pod",
        timeout=120,
    )
    assert "runtime.sh" in data  # type: ignore[operator]
    print(f"runtime ConfigMap {time.monotonic() - t0:.0f}s after apply -k")

    # The webhook: certificate bootstrapped in its pod (the caBundle patched), then called by the API
    # server at its pod's address: a labelled pod, created dry-run, comes back mutated.
    eventually(
        lambda: any(ready(p) for p in pods(kc, "fluid-webhook")),
        "a fluid-webhook pod Ready on the real node",
        timeout=240,
    )
    hooks = get(kc, "mutatingwebhookconfiguration", "fluid-pod-admission-webhook")["webhooks"]
    assert all(h["clientConfig"].get("caBundle") for h in hooks)  # type: ignore[attr-defined]
    app = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "app",
            "namespace": "default",
            "labels": {names.LABEL_INJECT: "true"},
            "annotations": {names.ANNOTATION_DATASET: "demo"},
        },
        "spec": {"containers": [{"name": "app", "image": realnodes.busybox_image("1.35.0")}]},
    }

    def admitted() -> dict[str, object]:
        out = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(app))
        return json.loads(out)  # type: ignore[no-any-return]

    mutated = eventually(admitted, "the API server calling the webhook at its pod", timeout=60)
    volumes = [v["name"] for v in mutated["spec"]["volumes"]]
    assert configmap in volumes, volumes
    print(f"webhook mutating {time.monotonic() - t0:.0f}s after apply -k")
    # The CSI controller: the driver Ready and the real csi-provisioner beside it holding its Lease
    # (it elects only once it has the driver's name over their shared socket).
    eventually(
        lambda: any(ready(p) for p in pods(kc, "fluid-csi-controller")),
        "the fluid-csi-controller pod Ready (driver and csi-provisioner)",
        timeout=180,
    )
    holder = eventually(
        lambda: lease_holder(kc, names.CSI_DRIVER.replace(".", "-")),
        "csi-provisioner's Lease held",
        timeout=120,
    )
    print(f"csi-provisioner leader {holder} {time.monotonic() - t0:.0f}s after apply -k")
    # What else the install set brought up here, for the record (the node DaemonSet is not asserted).
    print(kubectl(kc, "get", "pods", "-A", "-o", "wide"))
