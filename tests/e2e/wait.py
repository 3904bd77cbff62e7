"""Helpers for e2e assertions: polling with a deadline that says what it waited for, and the official
client's models as plain JSON."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client

T = TypeVar("T")


def eventually(check: Callable[[], T], what: str, timeout: float = 60.0, interval: float = 0.2) -> T:
    """Call ``check`` until it returns something truthy and return that; on timeout fail with ``what``
    and the last value or error seen, so a failure explains itself."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = check()
        except Exception as e:  # the API may briefly refuse or 404 while things converge
            last = e
        else:
            if value:
                return value
            last = value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last!r}")
        time.sleep(interval)


def as_json(obj: object) -> Any:
    """An official-client model as the API's own JSON (camelCase dicts), which reads like the manifests."""
    return _SERIALIZER.sanitize_for_serialization(obj)


_SERIALIZER = client.ApiClient()
