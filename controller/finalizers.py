"""The JSON patches that put one of the controller's finalizers on an object or take it off, and
their sending.

Both test the resourceVersion the cache saw: a write made since fails the ``test``, and the key comes
back with backoff to read the cache afresh, rather than adding twice or removing another's entry by
its index. The patches are pure; ``send`` is the one edge, its request given by the caller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from controller import metrics
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import Resource

Request = Callable[..., Awaitable[Any]]


def has(obj: dict[str, Any], finalizer: str) -> bool:
    return finalizer in (obj["metadata"].get("finalizers") or [])


def adding(obj: dict[str, Any], finalizer: str) -> list[dict[str, Any]]:
    meta = obj["metadata"]
    test = {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}
    if meta.get("finalizers"):
        return [test, {"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}]
    return [test, {"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}]


def removing(obj: dict[str, Any], finalizer: str) -> list[dict[str, Any]]:
    meta = obj["metadata"]
    index = meta["finalizers"].index(finalizer)
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
        {"op": "remove", "path": f"/metadata/finalizers/{index}"},
    ]


async def send(request: Request, resource: Resource, obj: dict[str, Any], ops: list[dict[str, Any]]) -> Any:
    """The object as the server answers the patch, or None when it is gone."""
    meta = obj["metadata"]
    try:
        updated = await request(
            "PATCH",
            resource.object_path(meta.get("namespace"), meta["name"]),
            body=ops,
            content_type=http.JSON_PATCH,
        )
    except http.ApiError as e:
        if e.code == 404:
            return None
        raise
    metrics.WRITES.labels("patch", resource.plural).inc()
    return updated
