"""The node service's watch of its own Node, for the mirror: whether the node is Ready (SPEC §5).

While a node is lost the controller marks its FuseMounts Unknown; this tells the mirror when the node
is back (``MirrorPublisher.node_ready``), so that it publishes its mounts again at once rather than
at its next resync. One Node, by a field selector on its name, trimmed to its Ready condition. It
never holds anything up: until the API server answers, the mirror knows nothing of the node and
publishes as it always did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import kr8s.asyncio

from kubectl_fluid.kube.backoff import Backoff
from kubectl_fluid.kube.nodeready import is_ready, trim_node
from kubectl_fluid.kube.resources import NODES
from kubectl_fluid.kube.watchcache import EventType, WatchCache

log = logging.getLogger(__name__)

Connect = Callable[[], Awaitable[kr8s.asyncio.Api]]


class NodeWatch:
    def __init__(self, node: str, connect: Connect, on_ready: Callable[[bool], None]) -> None:
        self.node = node
        self.connect = connect
        self.on_ready = on_ready
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="node-watch")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _changed(self, event: EventType, obj: dict[str, Any]) -> None:
        self.on_ready(event != "DELETED" and is_ready(obj))

    async def _run(self) -> None:
        backoff = Backoff(base=0.5, cap=30.0)
        while True:
            try:
                api = await self.connect()
                break
            except asyncio.CancelledError:
                raise
            except Exception as err:
                delay = backoff.next()
                log.warning("watching node %s: %s; retrying in %.1fs", self.node, err, delay)
                await asyncio.sleep(delay)
        cache = WatchCache(api, NODES, field_selector=f"metadata.name={self.node}", trim=trim_node)
        cache.add_handler(self._changed)
        await cache.run()
