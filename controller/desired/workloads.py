"""The component workloads: master and worker StatefulSets, the client DaemonSet (SPEC §2).

Upstream runs master and worker as AdvancedStatefulSets; this product keeps apps/v1 StatefulSets
with what upstream sets on them: replicas, ``podManagementPolicy: Parallel`` (cache members find each
other through the headless Service, so ordered start-up only slows them down), the selector on the
two ``cacheruntime.fluid.io`` labels, and ``serviceName`` only when the component has a Service.

Name lengths: a Dataset name has at most 42 characters, so ``{name}-worker`` has at most 49 and the
``controller-revision-hash`` label the StatefulSet puts on its pods (``{sts}-{hash}``) still fits 63.
"""

from __future__ import annotations

from typing import Any, Literal

from controller.desired.labels import component_labels, namespaced_metadata, selector_labels
from controller.desired.pods import pod_template
from controller.desired.scope import Scope
from kubectl_fluid.api import names


def statefulset(scope: Scope, component: Literal["master", "worker"]) -> dict[str, Any] | None:
    if not scope.enabled(component):
        return None
    spec: dict[str, Any] = {"replicas": scope.spec(component).replica_count() or 0}
    service = scope.service_name(component)
    if service:
        spec["serviceName"] = service
    spec |= {
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": selector_labels(scope, component)},
        "template": pod_template(scope, component),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": namespaced_metadata(
            scope, names.component_name(scope.name, component), component_labels(scope, component)
        ),
        "spec": spec,
    }


def client_daemonset(scope: Scope) -> dict[str, Any] | None:
    if not scope.enabled("client"):
        return None
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": namespaced_metadata(
            scope, names.component_name(scope.name, "client"), component_labels(scope, "client")
        ),
        "spec": {
            "selector": {"matchLabels": selector_labels(scope, "client")},
            "template": pod_template(scope, "client"),
        },
    }
