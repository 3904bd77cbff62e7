"""The standalone FUSE pod's resources and priority (issue 27): what a StorageClass may set for the
FUSE pods of its volumes, over the node service's defaults (``--fuse-resources``,
``--fuse-priority-class-name``, set by the manifests and the chart).

A FUSE pod serves every volume of its mount key on the node, so it must not be the first thing the
kubelet evicts or the kernel OOM-kills: BestEffort, it was (the JuiceFS CSI driver's most-filed
complaint about its mount pods). The keys:

- ``fuse-cpu-request``, ``fuse-cpu-limit``, ``fuse-memory-request``, ``fuse-memory-limit``:
  Kubernetes quantities, kept in their canonical form; a request above its limit is refused;
- ``fuse-priority-class-name``: a PriorityClass's name (a DNS subdomain).

They are part of the mount key when given (differently sized FUSE pods are different FUSEs; a volume
that gives none keeps the key it always had). Embedded mode runs FUSE in the node service's own
container, so there they change nothing but the key. Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from csi.model.errors import InvalidParameter
from kubectl_fluid.api import names
from kubectl_fluid.api.quantity import Quantity, QuantityError

PodSettings = tuple[tuple[str, str], ...]

# key -> (the ResourceRequirements section, the resource) it sets.
RESOURCE_PARAMS: Mapping[str, tuple[str, str]] = {
    names.PARAM_FUSE_CPU_REQUEST: ("requests", "cpu"),
    names.PARAM_FUSE_CPU_LIMIT: ("limits", "cpu"),
    names.PARAM_FUSE_MEMORY_REQUEST: ("requests", "memory"),
    names.PARAM_FUSE_MEMORY_LIMIT: ("limits", "memory"),
}
POD_PARAMS = (*RESOURCE_PARAMS, names.PARAM_FUSE_PRIORITY_CLASS)

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def normalize_pod_param(key: str, value: str) -> tuple[str, str]:
    """``(key, value)`` checked and in canonical form; InvalidParameter naming the key otherwise."""
    if key == names.PARAM_FUSE_PRIORITY_CLASS:
        if len(value) > names.DNS_SUBDOMAIN_MAX or not _DNS_SUBDOMAIN.fullmatch(value):
            raise InvalidParameter(key, f"{value!r} is not a PriorityClass name (a DNS subdomain)")
        return key, value
    try:
        quantity = Quantity.parse(value)
    except QuantityError as err:
        raise InvalidParameter(
            key, f"{value!r} is not a Kubernetes quantity (e.g. 500m, 2, 256Mi): {err}"
        ) from None
    if _amount(quantity) <= 0:
        raise InvalidParameter(key, f"must be more than zero, got {value!r}")
    return key, str(Quantity(quantity.unscaled, quantity.scale, quantity.format))


def check_pod_settings(settings: Mapping[str, str]) -> None:
    """A request above its limit, given in the same StorageClass, is refused (the API server would
    refuse the FUSE pod only at the first NodeStage, far from the StorageClass that caused it)."""
    for resource in ("cpu", "memory"):
        request = settings.get(_param("requests", resource))
        limit = settings.get(_param("limits", resource))
        if (
            request is not None
            and limit is not None
            and _amount(Quantity.parse(request)) > _amount(Quantity.parse(limit))
        ):
            raise InvalidParameter(
                _param("requests", resource),
                f"{request} is above {_param('limits', resource)} {limit}; a request cannot exceed its limit",
            )


def pod_resources(defaults: Mapping[str, Any], settings: PodSettings) -> dict[str, dict[str, str]]:
    """The FUSE container's ``resources``: the node's defaults (a ResourceRequirements), each entry a
    StorageClass sets replacing its own. A request left above a default limit takes the limit up to
    it, and a limit under a default request takes the request down: the StorageClass wins."""
    resources: dict[str, dict[str, str]] = {
        section: {k: str(v) for k, v in (defaults.get(section) or {}).items()}
        for section in ("requests", "limits")
    }
    given = dict(settings)
    for key, (section, resource) in RESOURCE_PARAMS.items():
        if key in given:
            resources[section][resource] = given[key]
    for resource in ("cpu", "memory"):
        request, limit = resources["requests"].get(resource), resources["limits"].get(resource)
        if request is None or limit is None:
            continue
        if _amount(Quantity.parse(request)) > _amount(Quantity.parse(limit)):
            if _param("requests", resource) in given:
                resources["limits"][resource] = request
            else:
                resources["requests"][resource] = limit
    return {section: entries for section, entries in resources.items() if entries}


def node_resources(text: str) -> dict[str, dict[str, str]]:
    """The node's default FUSE pod resources (``--fuse-resources``): a ResourceRequirements as JSON,
    ``{"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}}``, each value a
    positive quantity; ValueError saying what is wrong."""
    try:
        given = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"is not JSON: {err}") from None
    if not isinstance(given, dict) or set(given) - {"requests", "limits"}:
        raise ValueError('must be a JSON object with "requests" and/or "limits"')
    out: dict[str, dict[str, str]] = {}
    for section, entries in given.items():
        if not isinstance(entries, dict) or set(entries) - {"cpu", "memory"}:
            raise ValueError(f'"{section}" must map "cpu" and/or "memory" to quantities')
        for resource, value in entries.items():
            try:
                _, canonical = normalize_pod_param(_param(section, resource), str(value))
            except InvalidParameter as err:
                raise ValueError(f"{section}.{resource}: {err.message}") from None
            out.setdefault(section, {})[resource] = canonical
    for resource, request in out.get("requests", {}).items():
        limit = out.get("limits", {}).get(resource)
        if limit is not None and _amount(Quantity.parse(request)) > _amount(Quantity.parse(limit)):
            raise ValueError(f"requests.{resource} {request} is above limits.{resource} {limit}")
    return out


def priority_class(default: str | None, settings: PodSettings) -> str | None:
    return dict(settings).get(names.PARAM_FUSE_PRIORITY_CLASS, default)


def _param(section: str, resource: str) -> str:
    [key] = [k for k, where in RESOURCE_PARAMS.items() if where == (section, resource)]
    return key


def _amount(quantity: Quantity) -> Fraction:
    return Fraction(quantity.unscaled) * Fraction(10) ** quantity.scale
