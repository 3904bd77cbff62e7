"""Cache placement on a real node with Curvine's own class (SPEC §7, issue 31): the product deployed
from its image by ``kubectl apply -k manifests/`` labels the node where Curvine's worker runs with
upstream's cache-node labels; Curvine's test pod, not pinned to any node, is admitted by the real
webhook with a preference for that node, runs there through the Dataset's PVC and reads what it
wrote; the runtime deleted, the labels go.

One real node is enough for what only a real node shows (the product's image, its RBAC, Curvine's
worker and client): the scheduler's choice between nodes is tested on kwok nodes
(tests/e2e/test_cache_placement.py), where it is fast. Skipped, saying why, where a real node cannot
run, an image cannot be built or Curvine's files are not there."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid.api import names
from localcluster import realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_real_node_curvine_fluid import (
    APPS,
    CLASS,
    NAME,
    SAMPLE_TEXT,
    SYSTEM,
    TEST_POD,
    WORKER,
    dataset_on_demand,
    why_not,
)
from tests.e2e.test_real_node_product import get, ready
from tests.e2e.users_cluster import users_cluster
from tests.e2e.wait import eventually

NODE = f"{realnodes.NAME_PREFIX}0"


@pytest.fixture(scope="module")
def kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    reason = why_not()
    if reason:
        pytest.skip(reason)
    with users_cluster(tmp_path_factory.mktemp("cache-placement-cluster"), nodes=1) as cluster:
        yield cluster.kubeconfig


def node_labels(kc: Path) -> dict[str, str]:
    node: dict[str, Any] = get(kc, "node", NODE)
    return dict(node["metadata"].get("labels") or {})


def cache_labels(kc: Path) -> dict[str, str]:
    mine = {
        names.cache_runtime_node_label(APPS, NAME),
        names.cache_node_label(APPS, NAME),
        names.cache_total_capacity_label(APPS, NAME),
        names.LABEL_DATASET_NUM,
        names.LABEL_EXCLUSIVE,
    }
    return {k: v for k, v in node_labels(kc).items() if k in mine}


def labelled_as(kc: Path, wanted: dict[str, str]) -> bool:
    """True when the node's cache labels are ``wanted``; else an error naming what it has."""
    found = cache_labels(kc)
    if found != wanted:
        raise AssertionError(f"{NODE}'s cache labels: {found}")
    return True


def test_curvines_worker_node_is_labelled_and_its_test_pod_prefers_it(kc: Path) -> None:
    kubectl(kc, "apply", "-k", str(MANIFESTS))  # the default install, unchanged
    kubectl(kc, "-n", SYSTEM, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=5m")
    kubectl(kc, "apply", "-f", str(CLASS))
    t0 = time.monotonic()
    apply_objects(kc, *dataset_on_demand())
    kubectl(kc, "-n", APPS, "wait", "--for=condition=Ready", f"cacheruntime/{NAME}", "--timeout=300s")
    assert get(kc, "-n", APPS, "pod", WORKER)["spec"]["nodeName"] == NODE
    wanted = {
        names.cache_runtime_node_label(APPS, NAME): "true",
        names.cache_node_label(APPS, NAME): "true",
        names.cache_total_capacity_label(APPS, NAME): "0B",
        names.LABEL_DATASET_NUM: "1",
        # Curvine's Dataset is placement: Shared, so no fluid_exclusive.
    }
    eventually(lambda: labelled_as(kc, wanted), f"{NODE} labelled as Curvine's worker's node", timeout=60)
    print(f"applied to labelled: {time.monotonic() - t0:.1f}s")

    # Curvine's test pod as it is, but for a short grace period: no node named, the webhook steers it.
    body: dict[str, Any] = yaml.safe_load(TEST_POD.read_text())
    body["metadata"].update(namespace=APPS)
    body["spec"]["terminationGracePeriodSeconds"] = 1
    assert "nodeSelector" not in body["spec"]
    assert "nodeName" not in body["spec"]
    apply_objects(kc, body)
    name = body["metadata"]["name"]
    stored = get(kc, "-n", APPS, "pod", name)
    preferred = stored["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred == [
        {
            "weight": 100,
            "preference": {
                "matchExpressions": [
                    {"key": names.cache_node_label(APPS, NAME), "operator": "In", "values": ["true"]}
                ]
            },
        }
    ]
    eventually(lambda: ready(get(kc, "-n", APPS, "pod", name)), f"pod {name} Ready", timeout=300, interval=1)
    assert get(kc, "-n", APPS, "pod", name)["spec"]["nodeName"] == NODE
    eventually(
        lambda: SAMPLE_TEXT in kubectl(kc, "-n", APPS, "exec", name, "--", "cat", "/data/test-file.txt"),
        "the test pod reading what it wrote through the Dataset's PVC",
        timeout=60,
        interval=1,
    )

    # The runtime goes (the pod first: the Dataset's deletion would wait for it): the labels go.
    kubectl(kc, "-n", APPS, "delete", "pod", name, "--wait=true", "--timeout=120s")
    kubectl(kc, "-n", APPS, "delete", "cacheruntime", NAME, "--wait=false")
    eventually(lambda: labelled_as(kc, {}), f"{NODE}'s cache labels gone with the runtime", timeout=120)


def apply_objects(kc: Path, *objects: dict[str, Any]) -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    kubectl(kc, "apply", "-f", "-", stdin=json.dumps(body))
