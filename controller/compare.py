"""Is the object in the cluster already what we want? Deciding this locally is what keeps a steady
cluster free of writes from the controller."""

from __future__ import annotations

from typing import Any


def contains(actual: Any, desired: Any) -> bool:
    """True when every field we set in ``desired`` has the same value in ``actual``.

    Fields the API server adds (defaults, status, managedFields) are ignored, and a field we set to
    an empty value matches a missing one, because the server drops empty lists, maps and ``false``.
    Lists must match element by element: order carries meaning in containers, env and ports.
    """
    if isinstance(desired, dict):
        if not isinstance(actual, dict):
            return False
        for key, want in desired.items():
            if key not in actual:
                if want in (None, "", False, [], {}):
                    continue
                return False
            if not contains(actual[key], want):
                return False
        return True
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(desired)
            and all(contains(a, d) for a, d in zip(actual, desired, strict=True))
        )
    return bool(actual == desired and type(actual) is type(desired))
