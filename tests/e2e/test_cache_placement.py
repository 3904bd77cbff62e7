"""Cache placement on the local cluster (SPEC §7, issue 31): the nodes of a runtime's workers carry
upstream's cache-node labels, which follow the workers (scaled, gone with the runtime), and the real
kube-scheduler places an app pod using the Dataset's PVC on a worker's node when it has room, on
another node when it has none, and only there when the pod requires it.

kwok nodes are enough here: what is tested is the labels, the webhook's affinity and the real
scheduler's placement, not the cache's data path (tests/e2e/test_real_node_curvine_fluid.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess
from tests.e2e.test_controller import Fluid, dataset, runtime
from tests.e2e.wait import as_json, eventually


@pytest.fixture
def fl(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess, webhook: WebhookProcess
) -> Fluid:
    return Fluid(k8s, namespace)


def worker_nodes(fl: Fluid, name: str) -> set[str]:
    pods = fl.core.list_namespaced_pod(
        fl.ns, label_selector=f"{names.LABEL_CACHERUNTIME_COMPONENT}={names.component_name(name, 'worker')}"
    )
    return {
        str(p.spec.node_name) for p in pods.items if p.spec.node_name and not p.metadata.deletion_timestamp
    }


def labelled_nodes(fl: Fluid, name: str) -> set[str]:
    selector = names.cache_runtime_node_label(fl.ns, name)
    return {str(n.metadata.name) for n in fl.core.list_node(label_selector=selector).items}


def node_labels(fl: Fluid, node: str) -> dict[str, str]:
    return dict(fl.core.read_node(node).metadata.labels or {})


def cache_labels(fl: Fluid, node: str, name: str) -> dict[str, str]:
    mine = {
        names.cache_runtime_node_label(fl.ns, name),
        names.cache_node_label(fl.ns, name),
        names.cache_total_capacity_label(fl.ns, name),
    }
    labels = node_labels(fl, node)
    return {k: v for k, v in labels.items() if k in mine}


def app(name: str, claim: str, cpu: str = "1", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def scheduled_on(fl: Fluid, pod: str) -> str | None:
    found: str | None = fl.core.read_namespaced_pod(pod, fl.ns).spec.node_name
    return found


def unschedulable(fl: Fluid, pod: str) -> bool:
    conditions = fl.core.read_namespaced_pod(pod, fl.ns).status.conditions or []
    return any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in conditions)


def cached(fl: Fluid, name: str) -> set[str]:
    """A Dataset and its runtime of one worker, Bound, the worker's node labelled: that node."""
    fl.create(dataset(name))
    fl.create(runtime(name, worker={"replicas": 1}))
    eventually(lambda: fl.bound(name), f"Dataset {name} Bound", timeout=30)
    nodes = eventually(lambda: worker_nodes(fl, name), f"a worker of {name} scheduled", timeout=60)
    eventually(lambda: labelled_nodes(fl, name) == nodes, f"the worker's node {nodes} labelled", timeout=30)
    return nodes


def filler(node: str) -> dict[str, Any]:
    """A pod bound to ``node`` by name (past the scheduler) asking for every CPU it has: the scheduler
    then finds no room there for a pod asking for one."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"filler-{node}"[:63]},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "f", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "32"}}}
            ],
        },
    }


def test_the_nodes_of_the_workers_are_labelled_and_the_labels_follow_them(fl: Fluid) -> None:
    (node,) = cached(fl, "cp")
    # Upstream's names, fluid.io/s-cache-{ns}-{name} and so on (a long namespace shortened to fit).
    assert cache_labels(fl, node, "cp") == {
        names.cache_runtime_node_label(fl.ns, "cp"): "true",
        names.cache_node_label(fl.ns, "cp"): "true",
        names.cache_total_capacity_label(fl.ns, "cp"): "0B",
    }
    labels = node_labels(fl, node)
    assert labels[names.LABEL_EXCLUSIVE] == names.exclusive_label_value(
        fl.ns, "cp"
    )  # the Dataset's placement: Exclusive by default
    assert int(labels[names.LABEL_DATASET_NUM]) >= 1

    # Two workers, two nodes (Exclusive: one a node): both labelled; back to one, the other unlabelled.
    fl.patch("cacheruntimes", "cp", {"spec": {"worker": {"replicas": 2}}})

    def both() -> set[str]:
        found = worker_nodes(fl, "cp")
        return found if len(found) == 2 else set()

    two = eventually(both, "two workers", timeout=60)
    eventually(lambda: labelled_nodes(fl, "cp") == two, f"both nodes {two} labelled", timeout=30)
    fl.patch("cacheruntimes", "cp", {"spec": {"worker": {"replicas": 1}}})
    eventually(lambda: len(worker_nodes(fl, "cp")) == 1, "one worker again", timeout=60)
    eventually(
        lambda: labelled_nodes(fl, "cp") == worker_nodes(fl, "cp"), "the left node unlabelled", timeout=30
    )
    (left,) = two - worker_nodes(fl, "cp")
    assert cache_labels(fl, left, "cp") == {}
    assert node_labels(fl, left).get(names.LABEL_EXCLUSIVE) != names.exclusive_label_value(fl.ns, "cp")

    # The runtime deleted: every label goes, though the Dataset stays.
    fl.delete("cacheruntimes", "cp")
    eventually(lambda: not labelled_nodes(fl, "cp"), "no node labelled once the runtime is gone", timeout=60)
    for n in two:
        assert cache_labels(fl, n, "cp") == {}
        assert node_labels(fl, n).get(names.LABEL_EXCLUSIVE) != names.exclusive_label_value(fl.ns, "cp")


def test_an_app_pod_goes_to_the_cache_node_when_it_has_room_and_elsewhere_when_not(fl: Fluid) -> None:
    (cache_node,) = cached(fl, "pl")
    eventually(lambda: fl.core.read_namespaced_persistent_volume_claim("pl", fl.ns), "PVC pl")

    def admitted_with_affinity() -> bool:
        dry = as_json(fl.core.create_namespaced_pod(fl.ns, app("dry", "pl"), dry_run="All"))
        return bool((dry["spec"].get("affinity") or {}).get("nodeAffinity") or {})

    eventually(admitted_with_affinity, "the webhook to know PVC pl", timeout=30)
    fl.core.create_namespaced_pod(fl.ns, app("near", "pl"))
    stored = as_json(fl.core.read_namespaced_pod("near", fl.ns))
    preferred = stored["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred == [
        {
            "weight": 100,
            "preference": {
                "matchExpressions": [
                    {"key": names.cache_node_label(fl.ns, "pl"), "operator": "In", "values": ["true"]}
                ]
            },
        }
    ]
    assert eventually(lambda: scheduled_on(fl, "near"), "near scheduled", timeout=60) == cache_node

    # The cache node full: a preferring pod goes elsewhere; a requiring one waits for room there.
    fl.core.create_namespaced_pod(fl.ns, filler(cache_node))
    fl.core.create_namespaced_pod(fl.ns, app("far", "pl"))
    far = eventually(lambda: scheduled_on(fl, "far"), "far scheduled", timeout=60)
    assert far != cache_node
    required = {names.pod_sched_label("pl"): names.SCHED_REQUIRED}
    fl.core.create_namespaced_pod(fl.ns, app("must", "pl", labels=required))
    eventually(
        lambda: unschedulable(fl, "must"), "must Unschedulable while its cache node is full", timeout=60
    )
    assert scheduled_on(fl, "must") is None
    fl.core.delete_namespaced_pod(f"filler-{cache_node}"[:63], fl.ns, grace_period_seconds=0)
    assert (
        eventually(lambda: scheduled_on(fl, "must"), "must scheduled once there is room", timeout=90)
        == cache_node
    )

    # Asking to require a dataset the pod does not mount is refused, with the reason.
    with pytest.raises(client.ApiException) as refused:
        fl.core.create_namespaced_pod(
            fl.ns, app("wrong", "pl", labels={names.pod_sched_label("other"): "required"})
        )
    assert 'dataset \\"other\\"' in str(refused.value.body) or 'dataset "other"' in str(refused.value.body)


def test_a_pod_waits_for_a_node_where_its_fuse_may_run(fl: Fluid) -> None:
    """RequireNodeWithFuse: the runtime's client.nodeSelector is required of the app pod, so it never
    lands on a node where the client (its FUSE) may not start."""
    pool = f"e2e.fluid.io/fuse-pool-{fl.ns[-6:]}"  # this test's own node label
    fl.create(dataset("fz"))
    fl.create(
        runtime("fz", runtime_class="curvine", clientless=False, client={"nodeSelector": {pool: "yes"}})
    )
    eventually(lambda: fl.bound("fz"), "Dataset fz Bound", timeout=30)
    eventually(lambda: fl.core.read_namespaced_persistent_volume_claim("fz", fl.ns), "PVC fz")

    def admitted_with_requirement() -> bool:
        dry = as_json(fl.core.create_namespaced_pod(fl.ns, app("dry", "fz"), dry_run="All"))
        return bool(
            ((dry["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
        )

    eventually(admitted_with_requirement, "the webhook to know runtime fz and PVC fz", timeout=30)
    fl.core.create_namespaced_pod(fl.ns, app("fuse-app", "fz"))
    stored = as_json(fl.core.read_namespaced_pod("fuse-app", fl.ns))
    required = stored["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": pool, "operator": "In", "values": ["yes"]}]}]
    }
    eventually(
        lambda: unschedulable(fl, "fuse-app"),
        "fuse-app Unschedulable: no node may run its client",
        timeout=60,
    )
    node = sorted(str(n.metadata.name) for n in fl.core.list_node().items)[-1]
    fl.core.patch_node(node, {"metadata": {"labels": {pool: "yes"}}})
    try:
        assert eventually(lambda: scheduled_on(fl, "fuse-app"), "fuse-app scheduled", timeout=90) == node
    finally:
        fl.core.patch_node(node, {"metadata": {"labels": {pool: None}}})


def test_a_runtime_deleted_while_no_controller_ran_is_unlabelled_when_one_leads(
    fl: Fluid, controller: ControllerProcess
) -> None:
    nodes = cached(fl, "gone")
    controller.stop()
    try:
        fl.delete("cacheruntimes", "gone")
        eventually(lambda: not worker_nodes(fl, "gone"), "the worker collected with its runtime", timeout=60)
        assert labelled_nodes(fl, "gone") == nodes  # nobody took them off
    finally:
        controller.start()
        controller.wait_ready()
    # The Dataset outlived its runtime (its finalizer holds it): its key, settled at lead, unlabels.
    eventually(lambda: not labelled_nodes(fl, "gone"), "the labels gone once a controller leads", timeout=60)
