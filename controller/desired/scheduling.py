"""Where worker pods may run, as upstream places them (``transform_worker.go``):

- Exclusive placement (the default, also ``""``): no two workers of any Exclusive or Shared dataset
  share a node (required anti-affinity on ``fluid.io/dataset``, per hostname);
- Shared: workers spread from other workers where they can (preferred, weight 50) and never join an
  Exclusive one (required anti-affinity on ``fluid.io/dataset-placement: Exclusive``);
- always a preference (weight 100) for the nodes where the dataset's FUSE runs
  (``fluid.io/f-{ns}-{name}: "true"``);
- the Dataset's ``nodeAffinity.required`` terms: taken as they are when the template requires
  nothing, else every template term is combined with every dataset term (their expressions ANDed).

Pod anti-affinity terms without namespaces apply within the pod's namespace, as upstream's do.
The worker pods carry ``fluid.io/dataset: {ns}-{name}`` and ``fluid.io/dataset-placement``.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.desired.podspec import Json
from controller.desired.scope import Scope
from kubectl_fluid.api import names

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def placement(scope: Scope) -> str:
    return names.PLACEMENT_EXCLUSIVE if scope.dataset.spec.is_exclusive() else names.PLACEMENT_SHARED


def worker_labels(scope: Scope) -> dict[str, str]:
    return {
        names.LABEL_DATASET: names.dataset_id(scope.namespace, scope.name),
        names.LABEL_DATASET_PLACEMENT: placement(scope),
    }


def apply_worker_affinity(scope: Scope, pod: Json) -> None:
    affinity = pod.setdefault("affinity", {})
    anti = affinity.setdefault("podAntiAffinity", {})
    if placement(scope) == names.PLACEMENT_EXCLUSIVE:
        anti.setdefault(_REQUIRED, []).append(_term(names.LABEL_DATASET, "Exists"))
    else:
        anti.setdefault(_PREFERRED, []).append(
            {"weight": 50, "podAffinityTerm": _term(names.LABEL_DATASET, "Exists")}
        )
        anti.setdefault(_REQUIRED, []).append(
            _term(names.LABEL_DATASET_PLACEMENT, "In", [names.PLACEMENT_EXCLUSIVE])
        )
    node = affinity.setdefault("nodeAffinity", {})
    fuse_nodes = {
        "key": names.fuse_node_label(scope.namespace, scope.name),
        "operator": "In",
        "values": [names.TRUE],
    }
    node.setdefault(_PREFERRED, []).append({"weight": 100, "preference": {"matchExpressions": [fuse_nodes]}})
    required = scope.dataset.spec.node_affinity.required if scope.dataset.spec.node_affinity else None
    dataset_terms = (required or {}).get("nodeSelectorTerms") or []
    if dataset_terms:
        node[_REQUIRED] = _combine(node.get(_REQUIRED), dataset_terms)


def _term(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    return {"labelSelector": {"matchExpressions": [expression]}, "topologyKey": names.LABEL_HOSTNAME}


def _combine(template: dict[str, Any] | None, dataset_terms: list[Any]) -> dict[str, Any]:
    template_terms = (template or {}).get("nodeSelectorTerms") or []
    if not template_terms:
        return {"nodeSelectorTerms": copy.deepcopy(dataset_terms)}
    combined = []
    for term in template_terms:
        for extra in dataset_terms:
            merged = copy.deepcopy(term)
            merged["matchExpressions"] = [
                *(term.get("matchExpressions") or []),
                *copy.deepcopy(extra.get("matchExpressions") or []),
            ]
            combined.append(merged)
    return {**(template or {}), "nodeSelectorTerms": combined}
