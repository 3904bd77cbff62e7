"""The watch cache holds objects without ``metadata.managedFields``, whichever way they arrive: a
watch event, the answer to a write, or a listed page."""

from __future__ import annotations

import asyncio
from typing import Any

from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import CONFIGMAPS
from kubectl_fluid.kube.watchcache import WatchCache

MANAGED = [{"manager": "fluid-controller", "operation": "Apply", "fieldsV1": {"f:data": {"f:v": {}}}}]


def cm(name: str, rv: int) -> dict[str, Any]:
    meta = {"namespace": "ns", "name": name, "resourceVersion": str(rv), "managedFields": list(MANAGED)}
    return {"metadata": meta, "data": {"v": name}}


def lean(name: str, rv: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv)},
        "data": {"v": name},
    }


def test_watched_and_written_objects_are_held_without_managed_fields() -> None:
    c = WatchCache(None, CONFIGMAPS)  # type: ignore[arg-type]  # no I/O here
    heard: list[dict[str, Any]] = []
    c.add_handler(lambda _, obj: heard.append(obj))
    c._apply({"type": "ADDED", "object": cm("a", 3)})
    c.observe(cm("b", 4))
    assert c.get("ns", "a") == lean("a", 3)
    assert c.get("ns", "b") == lean("b", 4)
    assert heard == [lean("a", 3)]


def test_listed_objects_are_held_without_managed_fields(monkeypatch: Any) -> None:
    async def request(*_: Any, **__: Any) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "9"}, "items": [cm("a", 5), cm("b", 6)]}

    monkeypatch.setattr(http, "request", request)
    c = WatchCache(None, CONFIGMAPS)  # type: ignore[arg-type]  # the request is replaced
    asyncio.run(c._list())
    assert sorted(c.items(), key=lambda o: o["metadata"]["name"]) == [lean("a", 5), lean("b", 6)]
