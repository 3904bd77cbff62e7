"""kwok nodes: fake nodes that take scheduled pods to Running without running anything. The kwok
process (part of the control plane's record), the Node objects it manages (selected by annotation, so
real nodes beside them are left alone) and their readiness. Their CSI calls are made by the kubelet
stand-in (kubeletstandin.py, started with the product's CSI node services in product.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localcluster.state import Cluster, api, start

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def start_kwok(cluster: Cluster) -> None:
    b, p, kc = Path(cluster.bin_dir), cluster.ports, str(cluster.kubeconfig)
    start(
        cluster,
        "kwok",
        [
            str(b / "kwok"),
            f"--kubeconfig={kc}",
            f"--config={b / 'stages.yaml'}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}=fake",
            "--manage-nodes-with-label-selector=",
            "--manage-single-node=",
            "--cidr=10.244.0.0/16",
            "--node-ip=10.240.0.10",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{p['kwok']}",
        ],
    )


def create(cluster: Cluster) -> None:
    """The Node objects of ``cluster.nodes``, for kwok to manage (one already there is kept)."""
    for node in cluster.nodes:
        status, body = api(cluster, "POST", "/api/v1/nodes", node_manifest(node))
        if status not in (201, 409):
            raise SystemExit(f"error: creating node {node}: HTTP {status}: {body.get('message', body)}")


def node_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        },
    }


def ready(cluster: Cluster) -> bool:
    status, body = api(cluster, "GET", "/api/v1/nodes")
    if status != 200:
        return False
    ready = {
        n["metadata"]["name"]
        for n in body.get("items", [])
        for c in n.get("status", {}).get("conditions", [])
        if c.get("type") == "Ready" and c.get("status") == "True"
    }
    return set(cluster.nodes) <= ready
