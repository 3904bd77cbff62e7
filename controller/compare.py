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


def merge_patch(actual: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns ``actual`` into ``desired``: changed keys, nested
    objects patched key by key, and ``None`` for keys ``desired`` no longer has (a merge patch of
    ``desired`` alone would leave those in place)."""
    patch: dict[str, Any] = {key: None for key in actual if key not in desired}
    for key, want in desired.items():
        have = actual.get(key)
        if isinstance(want, dict) and isinstance(have, dict):
            nested = merge_patch(have, want)
            if nested:
                patch[key] = nested
        elif key not in actual or have != want:
            patch[key] = want
    return patch
