"""Upstream's edge-case run (the digest's synthetic fixture run through upstream's own transform):
the same inputs give the facts upstream's code showed."""

from __future__ import annotations

import copy
from typing import Any

from controller.desired.scope import make_scope
from controller.desired.workloads import client_daemonset, statefulset
from tests.unit.desired_samples import main_container, models, pod
from tests.unit.upstream_samples import EDGE_DATASET, EDGE_RUNTIME

# The runtime config's tests share these inputs; the workloads' view adds pod metadata and a uid
# (only an object read back from the API server has one).
DATASET: dict[str, Any] = EDGE_DATASET
RUNTIME: dict[str, Any] = copy.deepcopy(EDGE_RUNTIME)
RUNTIME["metadata"]["uid"] = "rt-uid"
RUNTIME["spec"]["podMetadata"] = {"labels": {"top": "ignored"}}
RUNTIME["spec"]["master"]["podMetadata"] = {"labels": {"mine": "yes"}}


def template(name: str, **spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "base:1", **spec}]}}


CLASS: dict[str, Any] = {
    "metadata": {"name": "edge"},
    "fileSystemType": "edgefs",
    "topology": {
        "master": {
            "options": {"o": "class", "c": "class"},
            "template": {
                "metadata": {"labels": {"tpl": "1"}},
                **template("master", env=[{"name": "TEMPLATE_ENV", "value": "t"}]),
            },
        },
        "worker": {
            "service": {"headless": {}},
            "dependencies": {"secretMount": {"enabled": False}},
            "template": template("worker", resources={"limits": {"memory": "8Gi"}}),
        },
        "client": {"dependencies": {"secretMount": {"enabled": True}}, "template": template("client")},
    },
}


def workloads() -> tuple[Any, Any, Any]:
    """The three workloads alone: the PV of a FUSE runtime names the master's Service and port, and
    upstream's fixture has neither, which this product refuses (tests/unit/test_desired_storage.py)."""
    scope = make_scope(*models(DATASET, RUNTIME, CLASS), "ns1")
    return statefulset(scope, "master"), statefulset(scope, "worker"), client_daemonset(scope)


def test_the_master() -> None:
    master, _, _ = workloads()
    container = main_container(master)
    assert [e["name"] for e in container["env"]][6:] == ["TEMPLATE_ENV", "USER_ENV"]
    assert container["env"][5] == {"name": "FLUID_RUNTIME_COMPONENT_SVC_NAME"}  # no Service: empty
    assert (container["image"], container["imagePullPolicy"], container["args"]) == (
        "img:v2",
        "Always",
        ["x"],
    )
    assert container["resources"] == {"limits": {"memory": "1Gi"}}  # no tiered store: not increased
    labels = master["spec"]["template"]["metadata"]["labels"]
    assert (labels["tpl"], labels["mine"]) == ("1", "yes")
    assert "top" not in labels
    assert master["spec"]["replicas"] == 3
    assert "serviceName" not in master["spec"]


def test_the_worker() -> None:
    _, worker, _ = workloads()
    assert main_container(worker)["resources"] == {
        "requests": {"memory": "4572Mi"},
        "limits": {"memory": "6620Mi"},
    }
    assert [v["name"] for v in pod(worker)["volumes"]] == [
        "tiered-store-level-0-memory",
        "tiered-store-level-1-index-0",
        "tiered-store-level-1-index-1",
        "tiered-store-level-2-index-0",
        "fluid-runtime-edge-config",
        "extra",
    ]
    assert pod(worker)["volumes"][1] == {
        "name": "tiered-store-level-1-index-0",
        "hostPath": {"path": "/d1", "type": "DirectoryOrCreate"},
    }


def test_the_client() -> None:
    _, _, client = workloads()
    secrets = [v["name"] for v in pod(client)["volumes"] if "secret" in v]
    assert secrets == [
        "cache-mnt-secret-a-very-long-secret-name-that-goes-beyo666faac1",
        "cache-mnt-secret-s2",
    ]
    assert pod(client)["tolerations"] == [{"key": "t", "operator": "Exists"}]
    assert pod(client)["nodeSelector"] == {"fluid.io/f-ns1-edge": "true"}
