"""What holds a deletion back, on the local cluster with the controller and the webhook running: a
Dataset stays while pods use it through injection (no PVC in them), saying who holds it; once the
last user goes, so does the Dataset."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess, wait_until_gone
from tests.e2e.test_controller import Fluid, bound, dataset, runtime
from tests.e2e.wait import as_json, eventually


@pytest.fixture
def fl(k8s: client.ApiClient, namespace: str, controller: ControllerProcess) -> Fluid:
    return Fluid(k8s, namespace)


def injected_pod(fl: Fluid, name: str, datasets: str) -> dict[str, Any]:
    pod = fl.core.create_namespaced_pod(
        fl.ns,
        {
            "metadata": {
                "name": name,
                "labels": {names.LABEL_INJECT: "true"},
                "annotations": {names.ANNOTATION_DATASET: datasets},
            },
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
        },
    )
    created: dict[str, Any] = as_json(pod)
    return created


def test_a_clientless_dataset_stays_while_an_injected_pod_uses_it(fl: Fluid, webhook: WebhookProcess) -> None:
    for name in ("demo", "demo2"):
        fl.create(dataset(name))
        fl.create(runtime(name))
    for name in ("demo", "demo2"):
        eventually(bound(fl, name), f"Dataset {name} Bound", timeout=30)
    pod = injected_pod(fl, "two", "demo,demo2")
    volumes = [v["name"] for v in pod["spec"].get("volumes", [])]
    assert names.runtime_config_configmap("demo2") in volumes, "the webhook injected the pod"

    fl.delete("datasets", "demo2")
    eventually(
        lambda: fl.condition("datasets", "demo2").get("reason") == "DatasetInUse", "DatasetInUse condition"
    )
    message = fl.condition("datasets", "demo2")["message"]
    assert "1 pod(s)" in message, message
    assert ": two;" in message, message
    eventually(lambda: any("DatasetInUse" in e and "two" in e for e in fl.events("demo2")), "an Event")
    held = fl.get("datasets", "demo2")
    assert held["metadata"].get("deletionTimestamp")
    assert names.DATASET_FINALIZER in held["metadata"]["finalizers"]
    # The runtime config the pod reads is still there while it runs.
    fl.configmap("demo2")

    fl.core.delete_namespaced_pod("two", fl.ns, grace_period_seconds=0)
    wait_until_gone(fl.get, "datasets", "demo2", what="Dataset demo2 deleted once pod two is gone")
    wait_until_gone(fl.get, "cacheruntimes", "demo2", what="its CacheRuntime deleted")
    assert fl.bound("demo"), "the other Dataset is untouched"
