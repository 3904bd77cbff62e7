"""Where workers run: placement anti-affinity, the FUSE-node preference, the Dataset's required node
affinity (combined with the template's), and the worker pods' dataset labels."""

from __future__ import annotations

from typing import Any

from tests.unit.desired_samples import (
    CLIENTLESS_RUNTIME,
    DATASET,
    MOONCAKE_CLASS,
    build,
    clientless,
    pod,
    with_spec,
)

DATASET_EXISTS = {
    "labelSelector": {"matchExpressions": [{"key": "fluid.io/dataset", "operator": "Exists"}]},
    "topologyKey": "kubernetes.io/hostname",
}
FUSE_NODES = {
    "weight": 100,
    "preference": {
        "matchExpressions": [{"key": "fluid.io/f-team-a-ds1", "operator": "In", "values": ["true"]}]
    },
}


def worker(dataset: dict[str, Any], runtime_class: dict[str, Any] = MOONCAKE_CLASS) -> dict[str, Any]:
    return build(dataset, CLIENTLESS_RUNTIME, runtime_class).statefulsets[1]


def test_exclusive_by_default() -> None:
    workload = clientless().statefulsets[1]
    assert pod(workload)["affinity"] == {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [DATASET_EXISTS]},
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [FUSE_NODES]},
    }
    labels = workload["spec"]["template"]["metadata"]["labels"]
    assert (labels["fluid.io/dataset"], labels["fluid.io/dataset-placement"]) == ("team-a-ds1", "Exclusive")
    assert pod(worker(with_spec(DATASET, "spec.placement", ""))) == pod(workload)


def test_shared_spreads_and_keeps_off_exclusive_workers() -> None:
    workload = worker(with_spec(DATASET, "spec.placement", "Shared"))
    assert pod(workload)["affinity"]["podAntiAffinity"] == {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": DATASET_EXISTS}
        ],
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": "fluid.io/dataset-placement", "operator": "In", "values": ["Exclusive"]}
                    ]
                },
                "topologyKey": "kubernetes.io/hostname",
            }
        ],
    }
    assert workload["spec"]["template"]["metadata"]["labels"]["fluid.io/dataset-placement"] == "Shared"


def term(*keys: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": k, "operator": "Exists"} for k in keys]}


def test_the_datasets_required_node_affinity_alone_or_combined_with_the_templates() -> None:
    dataset = with_spec(
        DATASET, "spec.nodeAffinity", {"required": {"nodeSelectorTerms": [term("d1"), term("d2")]}}
    )
    required = pod(worker(dataset))["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert required == {"nodeSelectorTerms": [term("d1"), term("d2")]}
    runtime_class = with_spec(
        MOONCAKE_CLASS,
        "topology.worker.template.spec.affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term("t1"), term("t2")]
                }
            }
        },
    )
    required = pod(worker(dataset, runtime_class))["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert required == {
        "nodeSelectorTerms": [term("t1", "d1"), term("t1", "d2"), term("t2", "d1"), term("t2", "d2")]
    }
    # The template's own preferences and anti-affinity stay, ours are appended.
    assert pod(worker(dataset, runtime_class))["affinity"]["nodeAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ] == [FUSE_NODES]


def test_only_workers_get_placement() -> None:
    master = clientless().statefulsets[0]
    assert "affinity" not in pod(master)
    assert "fluid.io/dataset" not in master["spec"]["template"]["metadata"]["labels"]
