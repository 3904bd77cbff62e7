"""The test bed itself: a Deployment's pods are created by the controller-manager, scheduled onto nodes
by the scheduler, turned Running (by kwok on the local cluster, by a kubelet on kind), and removed
again when the Deployment goes."""

from __future__ import annotations

from typing import Any

import kr8s
from kr8s.objects import Deployment
from kubernetes import client

from tests.e2e.wait import as_json, eventually

# Preloaded on kind nodes, so the same test runs there; kwok never pulls anything.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def test_deployment_pods_run_on_kwok_nodes_and_go_away(
    kr8s_api: kr8s.Api, core: client.CoreV1Api, namespace: str
) -> None:
    labels = {"app": "smoke"}
    deployment = Deployment(
        {
            "metadata": {"name": "smoke", "namespace": namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": PAUSE_IMAGE}]},
                },
            },
        },
        api=kr8s_api,
    )
    deployment.create()

    def running_pods() -> list[dict[str, Any]]:
        pods = as_json(core.list_namespaced_pod(namespace, label_selector="app=smoke"))["items"]
        ok = [p for p in pods if p["status"].get("phase") == "Running" and p["spec"].get("nodeName")]
        return ok if len(ok) == 2 and len(pods) == 2 else []

    pods = eventually(running_pods, "2 Running pods of Deployment smoke", timeout=60)
    nodes = {n["metadata"]["name"]: n for n in as_json(core.list_node())["items"]}
    for pod in pods:
        node = nodes[pod["spec"]["nodeName"]]
        ready = [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready == ["True"], (node["metadata"]["name"], ready)
        assert pod["status"].get("podIP"), pod["metadata"]["name"]

    deployment.delete()
    eventually(
        lambda: not core.list_namespaced_pod(namespace, label_selector="app=smoke").items,
        "the Deployment's pods to be deleted",
        timeout=60,
    )
