"""Headless Services of master and worker (SPEC §2): stable DNS for the StatefulSet pods.

``publishNotReadyAddresses`` is set because cache members must resolve each other while they are
still starting (readiness often waits for the cluster to form). A component without ports still gets
its Service: the StatefulSet's ``serviceName`` needs it for the pods' DNS records.
"""

from __future__ import annotations

from typing import Any, Literal

from controller.desired.labels import component_labels, namespaced_metadata, selector_labels
from controller.desired.ports import service_ports, template_ports
from controller.desired.scope import Scope


def headless_service(scope: Scope, component: Literal["master", "worker"]) -> dict[str, Any] | None:
    config = scope.component(component)
    if config is None:
        return None
    spec: dict[str, Any] = {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": selector_labels(scope, component),
    }
    ports = service_ports(template_ports(scope, component))
    if ports:
        spec["ports"] = ports
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": namespaced_metadata(scope, config.service.name, component_labels(scope, component)),
        "spec": spec,
    }
