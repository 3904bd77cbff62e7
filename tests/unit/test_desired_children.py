"""desired_children: the set of children, their names, owner references, labels, the ConfigMap, and
byte-stability (SPEC §2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.desired import Children
from kubectl_fluid.api import names
from kubectl_fluid.runtimeconfig import build_runtime_config, render_json, render_scoped_sh, render_sh
from tests.unit.desired_samples import (
    CLIENTLESS_RUNTIME,
    CURVINE_CLASS,
    DATASET,
    FUSE_RUNTIME,
    MOONCAKE_CLASS,
    NAMESPACE,
    UID,
    build,
    clientless,
    fuse,
    models,
    with_spec,
)

OWNER = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntime",
    "name": "ds1",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


def _kinds_and_names(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"]["name"]) for o in objects]


def test_clientless_children_in_apply_order() -> None:
    children = clientless()
    assert _kinds_and_names(children.namespaced()) == [
        ("ConfigMap", "fluid-runtime-config-ds1"),
        ("Service", "svc-ds1-master"),
        ("Service", "svc-ds1-worker"),
        ("StatefulSet", "ds1-master"),
        ("StatefulSet", "ds1-worker"),
        ("PersistentVolumeClaim", "ds1"),
    ]
    assert children.daemonset is None
    assert (children.pv["kind"], children.pv["metadata"]["name"]) == ("PersistentVolume", "team-a-ds1")


def test_fuse_children_include_the_client_daemonset_and_the_class_configmaps() -> None:
    children = fuse()
    assert _kinds_and_names(children.namespaced()) == [
        ("ConfigMap", "fluid-runtime-config-ds1"),
        ("ConfigMap", "curvine-config"),
        ("Service", "svc-ds1-master"),
        ("Service", "svc-ds1-worker"),
        ("StatefulSet", "ds1-master"),
        ("StatefulSet", "ds1-worker"),
        ("DaemonSet", "ds1-client"),
        ("PersistentVolumeClaim", "ds1"),
    ]


def test_only_enabled_components_get_workloads_and_services() -> None:
    runtime = {**CLIENTLESS_RUNTIME, "spec": {**CLIENTLESS_RUNTIME["spec"], "master": {"disabled": True}}}
    children = build(DATASET, runtime, MOONCAKE_CLASS)
    assert _kinds_and_names(list(children.statefulsets)) == [("StatefulSet", "ds1-worker")]
    assert _kinds_and_names(list(children.services)) == [("Service", "svc-ds1-worker")]


def test_services_only_where_the_class_asks_for_one() -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, "topology.worker.service", None)
    children = build(DATASET, CLIENTLESS_RUNTIME, runtime_class)
    assert _kinds_and_names(list(children.services)) == [("Service", "svc-ds1-master")]
    master, worker = children.statefulsets
    assert master["spec"]["serviceName"] == "svc-ds1-master"
    assert "serviceName" not in worker["spec"]
    # A client that asks for one gets it too.
    runtime_class = with_spec(CURVINE_CLASS, "topology.client.service", {"headless": {}})
    assert [s["metadata"]["name"] for s in build(DATASET, FUSE_RUNTIME, runtime_class).services][-1] == (
        "svc-ds1-client"
    )


def test_a_class_without_a_client_makes_the_runtime_clientless_whatever_the_runtime_says() -> None:
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.client", {"options": {"x": "y"}})
    children = build(DATASET, runtime, MOONCAKE_CLASS)
    assert children.daemonset is None
    assert children.pv["spec"]["csi"]["volumeAttributes"][names.VOLUME_ATTR_CLIENTLESS] == "true"
    assert "client" not in json.loads(children.configmap["data"]["runtime.json"])


@pytest.mark.parametrize("children", [clientless(), fuse()], ids=["clientless", "fuse"])
def test_every_namespaced_child_is_owned_by_the_runtime(children: Children) -> None:
    for obj in children.namespaced():
        assert obj["metadata"]["namespace"] == NAMESPACE
        shared = any(obj is extra for extra in children.extra_configmaps)
        # The class's ConfigMaps are shared by its runtimes: one owner among equals.
        assert obj["metadata"]["ownerReferences"] == [{**OWNER, "controller": not shared}]
    # Cluster-scoped: no namespace, and no owner (the Dataset finalizer removes it).
    assert "namespace" not in children.pv["metadata"]
    assert "ownerReferences" not in children.pv["metadata"]


@pytest.mark.parametrize("children", [clientless(), fuse()], ids=["clientless", "fuse"])
def test_every_child_is_a_complete_object(children: Children) -> None:
    for obj in [*children.namespaced(), children.pv]:
        assert obj["apiVersion"] in ("v1", "apps/v1")
        assert obj["kind"]
        assert obj["metadata"]["name"]
        assert obj.get("spec") or obj.get("data")


def test_common_labels_on_every_child_and_pod_template() -> None:
    children = fuse()
    common = {
        "app.kubernetes.io/name": "curvinefs",
        "app.kubernetes.io/instance": "ds1",
        "app.kubernetes.io/managed-by": "fluid-controller",
        "fluid.io/dataset-id": "team-a-ds1",
    }
    own = [o for o in children.namespaced() if not any(o is e for e in children.extra_configmaps)]
    for obj in [*own, children.pv]:
        assert obj["metadata"]["labels"].items() >= common.items()
    for child, component in [
        (children.configmap, None),
        (children.pvc, None),
        (children.pv, None),
        (children.services[0], "master"),
        (children.services[1], "worker"),
        (children.statefulsets[0], "master"),
        (children.statefulsets[1], "worker"),
        (children.daemonset, "client"),
    ]:
        assert child is not None
        labels = child["metadata"]["labels"]
        assert labels.get("app.kubernetes.io/component") == component
        if component is not None:
            assert labels["cacheruntime.fluid.io/name"] == "ds1"
            assert labels["cacheruntime.fluid.io/component-name"] == f"ds1-{component}"
        if "template" in child.get("spec", {}):
            pod_labels = child["spec"]["template"]["metadata"]["labels"]
            assert pod_labels.items() >= labels.items()


def test_selectors_are_upstreams_two_labels_and_match_pods_and_services() -> None:
    children = fuse()
    workloads = [*children.statefulsets, children.daemonset]
    for workload, component in zip(workloads, ["master", "worker", "client"], strict=True):
        assert workload is not None
        selector = workload["spec"]["selector"]["matchLabels"]
        assert selector == {
            "cacheruntime.fluid.io/name": "ds1",
            "cacheruntime.fluid.io/component-name": f"ds1-{component}",
        }
        pod_labels = workload["spec"]["template"]["metadata"]["labels"]
        assert pod_labels.items() >= selector.items()
    for service, statefulset in zip(children.services, children.statefulsets, strict=True):
        assert service["spec"] == {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": statefulset["spec"]["selector"]["matchLabels"],
        }
        assert statefulset["spec"]["serviceName"] == service["metadata"]["name"]


@pytest.mark.parametrize(
    ("runtime", "runtime_class"),
    [(CLIENTLESS_RUNTIME, MOONCAKE_CLASS), (FUSE_RUNTIME, CURVINE_CLASS)],
    ids=["clientless", "fuse"],
)
def test_configmap_data_is_the_pure_renderers_output(
    runtime: dict[str, Any], runtime_class: dict[str, Any]
) -> None:
    children = build(DATASET, runtime, runtime_class)
    config = build_runtime_config(*models(DATASET, runtime, runtime_class), NAMESPACE)
    assert children.configmap["data"] == {
        "runtime.json": render_json(config),
        "runtime.sh": render_sh(config),
        "runtime-scoped.sh": render_scoped_sh(config, "ds1"),
    }
    assert children.configmap["metadata"]["name"] == "fluid-runtime-config-ds1"
    assert "app.kubernetes.io/component" not in children.configmap["metadata"]["labels"]


def test_the_secrets_to_check_are_the_mounted_ones_with_their_keys() -> None:
    # local-cred belongs to a local:// mount: not mounted, not checked.
    assert clientless().secret_keys() == {"b.token": ["t"], "s3cred": ["access-key", "secret-key"]}
    runtime_class = with_spec(
        MOONCAKE_CLASS, "topology.master.dependencies", {"secretMount": {"enabled": False}}
    )
    runtime_class = with_spec(
        runtime_class, "topology.worker.dependencies", {"secretMount": {"enabled": False}}
    )
    assert build(DATASET, CLIENTLESS_RUNTIME, runtime_class).secret_keys() == {}


def test_statefulset_spec() -> None:
    master, worker = clientless().statefulsets
    assert (master["spec"]["replicas"], worker["spec"]["replicas"]) == (1, 2)
    assert master["spec"]["podManagementPolicy"] == "Parallel"
    assert master["spec"]["serviceName"] == "svc-ds1-master"
    assert fuse().statefulsets[0]["spec"]["replicas"] == 3


@pytest.mark.parametrize(
    ("runtime", "runtime_class"),
    [(CLIENTLESS_RUNTIME, MOONCAKE_CLASS), (FUSE_RUNTIME, CURVINE_CLASS)],
    ids=["clientless", "fuse"],
)
def test_two_builds_are_byte_identical(runtime: dict[str, Any], runtime_class: dict[str, Any]) -> None:
    def dump(children: Children) -> str:
        return json.dumps([*children.namespaced(), children.pv], sort_keys=True)

    assert dump(build(DATASET, runtime, runtime_class)) == dump(build(DATASET, runtime, runtime_class))


def test_a_config_whose_scoped_form_is_over_the_limits_keeps_its_runtime_sh() -> None:
    """runtime-scoped.sh's names are longer: a config that only just fits runtime.sh's limits gets
    its ConfigMap without the scoped form, never without runtime.sh."""
    from kubectl_fluid.runtimeconfig.limits import RUNTIME_SH_MAX_BYTES

    def children_with(pad: int) -> Children:
        runtime = json.loads(json.dumps(CLIENTLESS_RUNTIME))
        # Two variables: one may not pass MAX_ARG_STRLEN (128 KiB), the script 256 KiB.
        runtime["spec"].setdefault("master", {})["options"] = {"pad": "x" * (pad // 2)}
        runtime["spec"].setdefault("worker", {})["options"] = {"pad": "x" * (pad - pad // 2)}
        return build(DATASET, runtime, MOONCAKE_CLASS)

    size = len(children_with(0).configmap["data"]["runtime.sh"].encode())
    near = children_with(RUNTIME_SH_MAX_BYTES - size - 40).configmap["data"]
    assert len(near["runtime.sh"].encode()) <= RUNTIME_SH_MAX_BYTES
    assert "runtime-scoped.sh" not in near
    assert "runtime-scoped.sh" in children_with(1000).configmap["data"]
