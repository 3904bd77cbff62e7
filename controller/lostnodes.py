"""The controller's room for lost nodes: watches Nodes and FuseMounts, and on the leader writes what
``controller/nodeloss.py: judge()`` decides for each FuseMount (its phase Unknown while its node is
lost, and nothing of its own once the node is back).

Every replica holds both caches (a standby that takes over knows the cluster), the Nodes trimmed to
their name and Ready condition (``kubectl_fluid/kube/nodeready.py``), the FuseMounts with their
managedFields, which say whether the controller still holds fields of a status. A FuseMount is
judged when it changes and when its node's readiness changes (not at every heartbeat), and each once
when a replica comes to lead. Writes are server-side applies of the status subresource under the
controller's field manager, forced: the node service owns phase and reason, and the controller
takes them while nobody reports for the node.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kr8s.asyncio

from controller import metrics
from controller.conditions import now
from controller.nodeloss import UNKNOWN, Mark, NodeView, Release, judge, node_view, owns_status
from controller.workqueue import WorkQueue, drain
from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.nodeready import trim_node
from kubectl_fluid.kube.resources import FUSEMOUNTS, NODES
from kubectl_fluid.kube.watchcache import EventType, WatchCache

log = logging.getLogger(__name__)


def _failed(name: str, delay: float, error: Exception) -> None:
    log.warning("FuseMount %s: writing its node's loss failed; retrying in %.2fs: %s", name, delay, error)


class LostNodes:
    def __init__(self, api: kr8s.asyncio.Api) -> None:
        self.api = api
        self.nodes = WatchCache(api, NODES, trim=trim_node)
        self.mounts = WatchCache(api, FUSEMOUNTS, managed_fields=True)
        self.queue: WorkQueue[str] = WorkQueue()
        # Each node's view as last judged by: a FuseMount is queued again only when it changes.
        self._views: dict[str, NodeView] = {}
        self._gone_since: dict[str, str] = {}  # nodes seen deleted, and when
        self._by_node: dict[str, set[str]] = {}  # FuseMount names by node
        self._node_of: dict[str, str] = {}
        # Each FuseMount's last phase other than Unknown: the words of the mark keep it.
        self._last_known: dict[str, str | None] = {}
        self.nodes.add_handler(self._node_changed)
        self.mounts.add_handler(self._mount_changed)

    def caches(self) -> list[WatchCache]:
        return [self.nodes, self.mounts]

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in self.caches())

    def view(self, node: str) -> NodeView:
        return node_view(node, self.nodes.get(None, node), self._gone_since.get(node))

    # ------------------------------------------------------------------ handlers (every replica)

    def _node_changed(self, event: EventType, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if event == "DELETED":
            self._gone_since.setdefault(name, now())
        else:
            self._gone_since.pop(name, None)
        view = self.view(name)
        if self._views.get(name) == view:
            return  # a heartbeat, a label: not its readiness
        self._views[name] = view
        for mount in sorted(self._by_node.get(name, ())):
            self.queue.add(mount)

    def _mount_changed(self, event: EventType, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        node = str((obj.get("spec") or {}).get("nodeName") or "")
        before = self._node_of.pop(name, None)
        if before is not None:
            self._by_node.get(before, set()).discard(name)
        if event == "DELETED":
            self._last_known.pop(name, None)
            return
        self._node_of[name] = node
        self._by_node.setdefault(node, set()).add(name)
        phase = (obj.get("status") or {}).get("phase")
        if phase != UNKNOWN:
            self._last_known[name] = phase
        self.queue.add(name)

    # ------------------------------------------------------------------ the leader's work

    async def lead(self) -> None:
        """Judge every FuseMount once, then each as it or its node changes; until cancelled."""
        while not self.synced():
            await asyncio.sleep(0.05)
        for fm in self.mounts.items():
            self.queue.add(fm["metadata"]["name"])
        await drain(self.queue, self.settle, _failed)

    async def settle(self, name: str) -> None:
        fm = self.mounts.get(None, name)
        if fm is None:
            return
        node = str((fm.get("spec") or {}).get("nodeName") or "")
        view = self.view(node)
        verdict = judge(fm, view, self._last_known.get(name), owns_status(fm))
        if verdict is None:
            return
        if isinstance(verdict, Mark):
            await self._apply(name, verdict.status(now()))
            log.info("FuseMount %s marked Unknown: %s", name, verdict.reason, extra={"node": node})
            metrics.NODE_LOSS_WRITES.labels("mark").inc()
        elif isinstance(verdict, Release):
            await self._apply(name, None)
            log.info("FuseMount %s: node %s is Ready, its node service speaks for it again", name, node)
            metrics.NODE_LOSS_WRITES.labels("release").inc()

    async def _apply(self, name: str, status: dict[str, Any] | None) -> None:
        """Apply ``status`` (None: nothing, which gives up every field held) under the controller's
        field manager; a FuseMount deleted meanwhile needs nothing."""
        body: dict[str, Any] = {
            "apiVersion": names.API_VERSION,
            "kind": FUSEMOUNTS.kind,
            "metadata": {"name": name},
        }
        if status is not None:
            body["status"] = status
        params = {"fieldManager": names.CONTROLLER_FIELD_MANAGER, "force": "true"}
        try:
            answer = await http.request(
                self.api,
                "PATCH",
                f"{FUSEMOUNTS.object_path(None, name)}/status",
                params=params,
                body=body,
                content_type=http.APPLY_PATCH,
            )
        except http.ApiError as err:
            if err.code == 404:
                return
            raise
        metrics.WRITES.labels("apply", FUSEMOUNTS.plural).inc()
        # Held at once: the next judgement of this key sees what it wrote, and writes nothing twice.
        self.mounts.observe(answer)
