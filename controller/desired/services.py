"""Headless Services (SPEC §2), only for the components whose class sets ``service.headless``, as
upstream makes them: ``svc-{name}-{component}``, ``clusterIP: None``, ``publishNotReadyAddresses`` (cache
members must resolve each other while they start; readiness often waits for the cluster to form)
and a selector on the component's pods.

Like upstream's, they declare no ports: a headless Service gives every pod a stable DNS name
(``{pod}.svc-{name}-{component}``) without them, and clients dial the ports they know from the
runtime config.
"""

from __future__ import annotations

from typing import Any

from controller.desired.labels import component_labels, namespaced_metadata, selector_labels
from controller.desired.scope import Scope
from kubectl_fluid.api import names


def headless_service(scope: Scope, component: names.Component) -> dict[str, Any] | None:
    service = scope.service_name(component)
    if not service:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": namespaced_metadata(scope, service, component_labels(scope, component)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector_labels(scope, component),
        },
    }
