"""A CacheRuntimeClass's deletion guard: the finalizer ``names.RUNTIME_CLASS_FINALIZER`` is on a
class while any CacheRuntime names it and off while none does, so deleting a class that runtimes use
waits for them (their workloads, ConfigMaps and PVs were built from it, and without it a reconcile
can build nothing) and a class nobody uses goes at once.

A class is its own key in the work queue (``ClassKey``), queued when the class changes and when a
runtime comes, goes or moves to another class; its users come from ``inuse.ClassIndex``, which the
runtime watch keeps.
While a held class is being deleted it gets a Warning Event naming its runtimes, and each of those
runtimes says so in its Ready condition (``Reconciler``, through ``deleting_class_message()``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from controller import finalizers
from controller.events import Recorder
from controller.inuse import ClassIndex, class_in_use_message
from kubectl_fluid.api import names
from kubectl_fluid.kube.resources import CACHERUNTIMECLASSES
from kubectl_fluid.kube.watchcache import WatchCache

log = logging.getLogger(__name__)

Request = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class ClassKey:
    """The work queue's key of a (cluster-scoped) CacheRuntimeClass, beside the (namespace, name)
    keys of Dataset/CacheRuntime pairs."""

    name: str

    def __str__(self) -> str:
        return f"cacheruntimeclass/{self.name}"


def deleting_class_message(classes: WatchCache, index: ClassIndex, class_name: str) -> str | None:
    """What a runtime of ``class_name`` says while that class is being deleted; None otherwise."""
    cls = classes.get(None, class_name)
    if cls is None or not cls["metadata"].get("deletionTimestamp"):
        return None
    return class_in_use_message(class_name, index.users(class_name))


Step = Literal["add", "remove", "hold"] | None


def guard_step(deleting: bool, held: bool, users: list[str]) -> Step:
    """What a pass does to a class: add the finalizer (used, not held), remove it (held, unused),
    hold (being deleted while used: say who holds it), or nothing. A class being deleted that is
    used but not held (deleted before this controller guarded classes) is left alone: the API
    server accepts no new finalizer on an object being deleted, and its runtimes say so."""
    if users and not held and not deleting:
        return "add"
    if held and not users:
        return "remove"
    if held and deleting:
        return "hold"
    return None


class ClassGuard:
    """``request`` is the reconciler's, so the guard's writes share its bound on calls in flight."""

    def __init__(self, request: Request, classes: WatchCache, index: ClassIndex, recorder: Recorder) -> None:
        self._request = request
        self.classes = classes
        self.index = index
        self.recorder = recorder

    async def reconcile(self, key: ClassKey) -> None:
        cls = self.classes.get(None, key.name)
        if cls is None:
            return
        meta = cls["metadata"]
        users = self.index.users(key.name)
        deleting = bool(meta.get("deletionTimestamp"))
        step = guard_step(deleting, names.RUNTIME_CLASS_FINALIZER in (meta.get("finalizers") or []), users)
        if step == "add":
            await self._add_finalizer(cls)
        elif step == "remove":
            await self._remove_finalizer(cls, deleting=deleting)
        elif step == "hold":
            message = class_in_use_message(key.name, users)
            await self.recorder.event(cls, "Warning", "RuntimeClassInUse", message)

    async def _add_finalizer(self, cls: dict[str, Any]) -> None:
        meta = cls["metadata"]
        updated = await self._patch(cls, finalizers.adding(cls, names.RUNTIME_CLASS_FINALIZER))
        if updated is not None:
            self.classes.observe(updated)
        log.info("guarding runtime class", extra={"runtimeClass": meta["name"]})

    async def _remove_finalizer(self, cls: dict[str, Any], *, deleting: bool) -> None:
        meta = cls["metadata"]
        updated = await self._patch(cls, finalizers.removing(cls, names.RUNTIME_CLASS_FINALIZER))
        if updated is not None and not deleting:
            self.classes.observe(updated)  # a deleted class's last answer is for the watch to drop
        log.info(
            "released runtime class" if deleting else "runtime class unused",
            extra={"runtimeClass": meta["name"]},
        )

    async def _patch(self, cls: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The class as the server answers, or None when it is gone. A failed ``test`` (someone wrote
        the class since the cache saw it) is an error: the key comes back with backoff and reads the
        cache afresh."""
        updated: dict[str, Any] | None = await finalizers.send(self._request, CACHERUNTIMECLASSES, cls, ops)
        return updated
