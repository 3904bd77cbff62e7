"""The plugin's protobuf reader against the real API server: the pods it reads back, page by page,
are the JSON list's pods reduced to names and volumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

from kubectl_fluid.kube import kubeconfig as kubeconfigs
from kubectl_fluid.kube.transport import JSON_LIST, POD_NAMES_AND_VOLUMES, Api

VOLUMES: list[dict[str, Any]] = [
    {"name": "fluid-runtime-config-ds1", "configMap": {"name": "fluid-runtime-config-ds1"}},
    {"name": "data", "persistentVolumeClaim": {"claimName": "ds1"}},
    {"name": "scratch", "emptyDir": {}},
    {"name": "token", "secret": {"secretName": "s"}},
    {"name": "cm-items", "configMap": {"name": "c", "optional": True, "items": [{"key": "k", "path": "p"}]}},
]


def reduced(pod: dict[str, Any]) -> dict[str, Any]:
    """What the protobuf reader keeps of a pod, taken from its JSON."""
    volumes = []
    for volume in pod["spec"].get("volumes") or ():
        kept: dict[str, Any] = {"name": volume["name"]}
        if "configMap" in volume:
            name = volume["configMap"].get("name")
            kept["configMap"] = {"name": name} if name is not None else {}
        if "persistentVolumeClaim" in volume:
            kept["persistentVolumeClaim"] = {"claimName": volume["persistentVolumeClaim"]["claimName"]}
        volumes.append(kept)
    meta = pod["metadata"]
    return {"metadata": {"name": meta["name"], "namespace": meta["namespace"]}, "spec": {"volumes": volumes}}


def test_pods_read_in_protobuf_are_the_json_list_reduced(
    kubeconfig: Path, core: client.CoreV1Api, namespace: str
) -> None:
    for n in range(7):
        body = {
            "metadata": {"name": f"p{n}", "labels": {"app": "x"}, "annotations": {"a": "b" * n}},
            "spec": {
                "volumes": VOLUMES[: n % (len(VOLUMES) + 1)],
                "containers": [{"name": "c", "image": "busybox", "env": [{"name": "E", "value": "v"}]}],
            },
        }
        core.create_namespaced_pod(namespace, body)
    with Api(kubeconfigs.load(str(kubeconfig), None)) as api:
        path = f"/api/v1/namespaces/{namespace}/pods"
        as_json = [pod for page in api.pages(path, limit=3, codec=JSON_LIST) for pod in page]
        pages = list(api.pages(path, {"labelSelector": "app=x"}, limit=3, codec=POD_NAMES_AND_VOLUMES))
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [pod for page in pages for pod in page] == [reduced(pod) for pod in as_json]
    # The server's own volume (the ServiceAccount token's projected volume) is read and named too.
    assert any(v["name"].startswith("kube-api-access-") for v in pages[0][0]["spec"]["volumes"])
