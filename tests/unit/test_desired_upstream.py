"""Upstream's own curvine e2e manifests give the pod templates upstream's engine gives them
(tests/unit/upstream_curvine/), field for field and in order, but for the product's own labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.desired import Children
from kubectl_fluid.api import names
from tests.unit.desired_samples import build, with_spec

HERE = Path(__file__).parent / "upstream_curvine"
# The product's labels on every pod, beside upstream's.
PRODUCT_LABELS = (
    names.LABEL_APP_NAME,
    names.LABEL_APP_INSTANCE,
    names.LABEL_APP_MANAGED_BY,
    names.LABEL_APP_COMPONENT,
    names.LABEL_DATASET_ID,
)


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((HERE / name).read_text())
    return loaded


# Upstream's class declares no port; this product's PV names the master's first port (master-addrs),
# so the class gets one, and so does the template upstream would make of it.
MASTER_PORT = "topology.master.template.spec.containers.0.ports"
PORTS = [{"name": "rpc", "containerPort": 8995}]


def upstream_children() -> Children:
    dataset = with_spec(load("dataset.yaml"), "metadata.namespace", "default")
    runtime = with_spec(load("cacheruntime.yaml"), "metadata.namespace", "default")
    runtime = with_spec(runtime, "metadata.uid", "rt-uid")
    runtime_class = with_spec(load("cacheruntimeclass.yaml"), MASTER_PORT, PORTS)
    return build(dataset, runtime, runtime_class, namespace="default")


def without_empties(value: Any) -> Any:
    """Go prints empty structs (``resources: {}``) and nulls the API server would drop."""
    if isinstance(value, dict):
        kept = {k: without_empties(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [without_empties(v) for v in value]
    return value


@pytest.mark.parametrize("component", ["master", "worker", "client"])
def test_the_pod_templates_are_upstreams(component: str) -> None:
    children = upstream_children()
    workloads = {w["metadata"]["name"]: w for w in [*children.statefulsets, children.daemonset] if w}
    ours = workloads[f"curvine-demo-{component}"]["spec"]["template"]
    labels = ours["metadata"]["labels"]
    assert {k: labels.pop(k) for k in PRODUCT_LABELS} == {
        names.LABEL_APP_NAME: "curvinefs",
        names.LABEL_APP_INSTANCE: "curvine-demo",
        names.LABEL_APP_MANAGED_BY: "fluid-controller",
        names.LABEL_APP_COMPONENT: component,
        names.LABEL_DATASET_ID: "default-curvine-demo",
    }
    want = load(f"{component}-template.yaml")["PodTemplateSpec"]
    if component == "master":
        want["spec"]["containers"][0]["ports"] = PORTS
    if component == "client":
        # The one difference: the hostPath is the target path's folder, not the mount point itself
        # (controller/desired/pods.py says why).
        shared = names.client_shared_path("default", "curvine-demo")
        [volume] = [v for v in want["spec"]["volumes"] if v["name"] == names.FUSE_SHARED_PATH_VOLUME]
        volume["hostPath"]["path"] = shared
        for mount in want["spec"]["containers"][0]["volumeMounts"]:
            if mount["name"] == names.FUSE_SHARED_PATH_VOLUME:
                mount["mountPath"] = shared
    # The workload constructor's labels (3.8): upstream adds them after the transform.
    want["metadata"]["labels"] = {
        **(want["metadata"].get("labels") or {}),
        names.LABEL_CACHERUNTIME_NAME: "curvine-demo",
        names.LABEL_CACHERUNTIME_COMPONENT: f"curvine-demo-{component}",
    }
    assert without_empties(ours) == without_empties(want)


def test_the_workloads_and_services_are_upstreams() -> None:
    children = upstream_children()
    master, worker = children.statefulsets
    assert children.daemonset is not None
    for workload, component in ((master, "master"), (worker, "worker"), (children.daemonset, "client")):
        selector = {
            names.LABEL_CACHERUNTIME_NAME: "curvine-demo",
            names.LABEL_CACHERUNTIME_COMPONENT: f"curvine-demo-{component}",
        }
        assert workload["spec"]["selector"] == {"matchLabels": selector}
    assert (master["spec"]["replicas"], master["spec"]["serviceName"]) == (1, "svc-curvine-demo-master")
    assert (worker["spec"]["replicas"], worker["spec"]["serviceName"]) == (1, "svc-curvine-demo-worker")
    assert master["spec"]["podManagementPolicy"] == "Parallel"
    # The client has no Service: the class gives it no service.headless.
    assert [s["metadata"]["name"] for s in children.services] == [
        "svc-curvine-demo-master",
        "svc-curvine-demo-worker",
    ]
    for service, workload in zip(children.services, children.statefulsets, strict=True):
        assert service["spec"] == {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": workload["spec"]["selector"]["matchLabels"],
        }
    (extra,) = children.extra_configmaps
    assert extra["metadata"]["name"] == "curvine-config"
    assert extra["data"] == load("cacheruntimeclass.yaml")["extraResources"]["configMaps"][0]["data"]
