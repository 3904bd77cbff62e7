"""What holds a deletion back, on the local cluster with the controller and the webhook running: a
Dataset stays while pods use it through injection (no PVC in them), and a CacheRuntimeClass stays
while CacheRuntimes name it, each saying who holds it; once the last user goes, so does the object."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess, wait_until_gone
from tests.e2e.test_controller import GROUP, VERSION, Fluid, bound, dataset, runtime
from tests.e2e.wait import as_json, eventually

CLASSES = "cacheruntimeclasses"


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


@pytest.fixture
def own_class(fl: Fluid) -> Iterator[str]:
    """A copy of the mooncake sample under a name of this test's own; deleted afterwards."""
    name = f"g-{fl.ns}"[:63]
    sample = cast(dict[str, Any], fl.custom.get_cluster_custom_object(GROUP, VERSION, CLASSES, "mooncake"))
    body = {k: v for k, v in sample.items() if k not in ("metadata", "status")}
    fl.custom.create_cluster_custom_object(GROUP, VERSION, CLASSES, {**body, "metadata": {"name": name}})
    yield name
    try:
        fl.custom.delete_cluster_custom_object(GROUP, VERSION, CLASSES, name)
    except client.ApiException as e:
        if e.status != 404:
            raise


def class_meta(fl: Fluid, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = fl.custom.get_cluster_custom_object(GROUP, VERSION, CLASSES, name)["metadata"]
    return meta


def class_events(fl: Fluid, name: str) -> list[str]:
    # Events about a cluster-scoped object live in the default namespace.
    events = fl.core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items
    return [f"{e.type} {e.reason}: {e.message}" for e in events]


def test_a_runtime_class_in_use_stays_until_its_last_runtime_goes(fl: Fluid, own_class: str) -> None:
    fl.create(dataset("a1"))
    fl.create(runtime("a1", runtime_class=own_class))
    fl.create(dataset("a2"))
    fl.create(runtime("a2", runtime_class=own_class))
    for name in ("a1", "a2"):
        eventually(bound(fl, name), f"Dataset {name} Bound", timeout=30)
    eventually(
        lambda: names.RUNTIME_CLASS_FINALIZER in (class_meta(fl, own_class).get("finalizers") or []),
        "the class's finalizer while runtimes use it",
    )

    fl.custom.delete_cluster_custom_object(GROUP, VERSION, CLASSES, own_class)
    users = f"{fl.ns}/a1, {fl.ns}/a2"
    eventually(
        lambda: fl.condition("cacheruntimes", "a1").get("reason") == "RuntimeClassDeleting",
        "the runtime's Ready condition says its class is being deleted",
    )
    condition = fl.condition("cacheruntimes", "a1")
    assert condition["status"] == "False"
    assert f'"{own_class}" is being deleted' in condition["message"]
    assert users in condition["message"]
    eventually(
        lambda: any("RuntimeClassInUse" in e and users in e for e in class_events(fl, own_class)),
        "an Event on the class naming its runtimes",
    )
    assert class_meta(fl, own_class).get("deletionTimestamp"), "the class waits"
    assert fl.bound("a1"), "its Datasets stay bound meanwhile"
    assert fl.bound("a2")

    fl.delete("datasets", "a1")  # takes its runtime with it
    wait_until_gone(fl.get, "cacheruntimes", "a1", what="runtime a1 deleted")
    eventually(
        lambda: any(f"1 CacheRuntime(s) that use it: {fl.ns}/a2;" in e for e in class_events(fl, own_class)),
        "the class now held by a2 alone",
    )
    fl.delete("cacheruntimes", "a2")
    wait_until_gone(
        fl.custom.get_cluster_custom_object, GROUP, VERSION, CLASSES, own_class, what="the class deleted"
    )


def test_a_runtime_class_nobody_uses_goes_at_once(fl: Fluid, own_class: str) -> None:
    fl.create(dataset("b1"))
    fl.create(runtime("b1", runtime_class=own_class))
    eventually(lambda: fl.bound("b1"), "Dataset b1 Bound", timeout=30)
    eventually(
        lambda: names.RUNTIME_CLASS_FINALIZER in (class_meta(fl, own_class).get("finalizers") or []),
        "the class's finalizer while b1 uses it",
    )
    fl.patch("cacheruntimes", "b1", {"spec": {"runtimeClassName": "mooncake"}})
    eventually(
        lambda: names.RUNTIME_CLASS_FINALIZER not in (class_meta(fl, own_class).get("finalizers") or []),
        "the finalizer removed once no runtime names the class",
    )
    fl.custom.delete_cluster_custom_object(GROUP, VERSION, CLASSES, own_class)
    wait_until_gone(
        fl.custom.get_cluster_custom_object, GROUP, VERSION, CLASSES, own_class, what="the class deleted"
    )
