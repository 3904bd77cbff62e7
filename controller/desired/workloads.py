"""The component workloads: master and worker StatefulSets, the client DaemonSet (SPEC §2).

Decisions where SPEC is silent:
- StatefulSets use ``podManagementPolicy: Parallel``: cache members find each other through the
  headless Service (which publishes not-ready addresses), so ordered start-up only slows them down.
- Name lengths: a Dataset name has at most 42 characters, so ``{name}-worker`` has at most 49 and the
  ``controller-revision-hash`` label the StatefulSet puts on its pods (``{sts}-{hash}``) still fits 63.
"""

from __future__ import annotations

from typing import Any, Literal

from controller.desired.labels import component_labels, namespaced_metadata, selector_labels
from controller.desired.pods import pod_template
from controller.desired.scope import Scope


def statefulset(scope: Scope, component: Literal["master", "worker"]) -> dict[str, Any] | None:
    config = scope.component(component)
    if config is None:
        return None
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": namespaced_metadata(scope, config.name, component_labels(scope, component)),
        "spec": {
            "replicas": config.replicas,
            "serviceName": config.service.name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector_labels(scope, component)},
            "template": pod_template(scope, component),
        },
    }


def client_daemonset(scope: Scope) -> dict[str, Any] | None:
    config = scope.component("client")
    if config is None:
        return None
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": namespaced_metadata(scope, config.name, component_labels(scope, "client")),
        "spec": {
            "selector": {"matchLabels": selector_labels(scope, "client")},
            "template": pod_template(scope, "client"),
        },
    }
