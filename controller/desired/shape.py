"""The shape of the open objects the controller merges into: a class's pod template, a Dataset's
node affinity.

The CRDs keep them as open objects (the API server validates the workload built from them), so a
template can carry a string where a list belongs. The paths the controller reads or changes are
checked first, so such input is refused with the path at fault instead of failing mid-build.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from controller.desired.errors import INVALID_RUNTIME_CLASS, SpecError

_CONTAINER: Final = (
    ("[]", dict),
    ("[].env", list),
    ("[].env[]", dict),
    ("[].volumeMounts", list),
    ("[].volumeMounts[]", dict),
    ("[].args", list),
    ("[].ports", list),
    ("[].resources", dict),
    ("[].resources.limits", dict),
    ("[].resources.requests", dict),
)
_NODE_SELECTOR: Final = (
    ("nodeSelectorTerms", list),
    ("nodeSelectorTerms[]", dict),
    ("nodeSelectorTerms[].matchExpressions", list),
)
_NODE_AFFINITY: Final = "spec.affinity.nodeAffinity"
_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
TEMPLATE_PATHS: Final[tuple[tuple[str, type], ...]] = (
    ("metadata", dict),
    ("metadata.labels", dict),
    ("metadata.annotations", dict),
    ("spec", dict),
    ("spec.nodeSelector", dict),
    ("spec.tolerations", list),
    ("spec.volumes", list),
    ("spec.volumes[]", dict),
    ("spec.containers", list),
    *((f"spec.containers{p}", k) for p, k in _CONTAINER),
    ("spec.initContainers", list),
    *((f"spec.initContainers{p}", k) for p, k in _CONTAINER),
    ("spec.affinity", dict),
    ("spec.affinity.podAntiAffinity", dict),
    (f"spec.affinity.podAntiAffinity.{_REQUIRED}", list),
    (f"spec.affinity.podAntiAffinity.{_PREFERRED}", list),
    (_NODE_AFFINITY, dict),
    (f"{_NODE_AFFINITY}.{_PREFERRED}", list),
    (f"{_NODE_AFFINITY}.{_REQUIRED}", dict),
    *((f"{_NODE_AFFINITY}.{_REQUIRED}.{p}", k) for p, k in _NODE_SELECTOR),
)
NODE_SELECTOR_PATHS: Final = _NODE_SELECTOR


def check_template_shape(template: dict[str, Any], where: str) -> None:
    check_shape(template, TEMPLATE_PATHS, where, INVALID_RUNTIME_CLASS)


def check_shape(obj: Any, paths: tuple[tuple[str, type], ...], where: str, reason: str) -> None:
    for path, kind in paths:
        for at, value in _find(obj, path.replace("[]", ".[]").split("."), ""):
            if value is not None and not isinstance(value, kind):
                what = "an object" if kind is dict else "a list"
                raise SpecError(f"{where}: {at} must be {what}", reason)


def _find(obj: Any, parts: list[str], at: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of every node ``parts`` names below ``obj``; ``[]`` is each item of a list.
    Nodes below one of the wrong type are not visited (its own check reports it)."""
    if not parts:
        yield at, obj
        return
    head, rest = parts[0], parts[1:]
    if head == "[]":
        if isinstance(obj, list):
            for i, item in enumerate(obj):
                yield from _find(item, rest, f"{at}[{i}]")
    elif isinstance(obj, dict) and head in obj:
        yield from _find(obj[head], rest, f"{at}.{head}" if at else head)
