"""Keeps this node's FuseMount objects equal to its state, in the background (SPEC §5).

The node service hands over every saved state with ``publish`` (never blocks, never fails) and goes
on answering kubelet; this task turns the newest state into FuseMount objects, writes only what
changed since the last successful write, deletes this node's objects whose mount is gone, and on
any failure (API server down, a conflict, a timeout) waits with backoff and tries the newest state
again. So a kubelet call never waits on the API server, and once it is back the mirror catches up
with the latest state, not a replay of every step in between.

Writes are server-side applies under the node service's own field manager: idempotent, no read
first, and a concurrent writer of other fields cannot make them fail.

While the node is lost (not Ready) the controller says so on these objects: phase Unknown, under its
own field manager (controller/nodeloss.py). The mirror does not fight it: it writes only what the
node's state changes, and leaves out its periodic resync while its Node is known not to be Ready
(``node_ready``, fed by csi/node/nodewatch.py). When the Node is Ready again after not being, it
forgets what it wrote, lists its objects again and writes at once every one the controller marked,
so the mounts say their own phase again.
A node service that restarts, and the periodic resync, list the node's objects and write only those
that do not already hold what the mirror would write (csi/node/mirrorheld.py): a steady node writes
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import kr8s.asyncio
from prometheus_client import Counter, Gauge

from csi.node.mirror import to_fusemount
from csi.node.mirrorheld import already_held
from csi.node.state import NodeState
from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.backoff import Backoff
from kubectl_fluid.kube.resources import FUSEMOUNTS

# The name it logged under before csi/ had sub-packages: log filters and tests match it.
log = logging.getLogger("csi.publisher")

WRITES = Counter("fluid_csi_mirror_writes_total", "FuseMount writes sent to the API server.", ["verb"])
FAILURES = Counter("fluid_csi_mirror_failures_total", "Mirror passes that failed and will be retried.")
BEHIND = Gauge("fluid_csi_mirror_behind", "1 while the FuseMount objects lag behind the node's state.")

Connect = Callable[[], Awaitable[kr8s.asyncio.Api]]
Objects = dict[str, dict[str, Any]]


def desired_objects(
    node: str, state: NodeState, program: str | None = None, image: str | None = None
) -> Objects:
    """Every FuseMount this node should have, by name."""
    wanted: Objects = {}
    for entry in state.mounts.values():
        obj = to_fusemount(node, entry, program, image)
        wanted[obj["metadata"]["name"]] = obj
    return wanted


def changes(wanted: Objects, written: Objects) -> tuple[list[str], list[str]]:
    """Names to apply (new, or not holding what is wanted) and names to delete. ``written``: what
    this process last applied, or what the server held when it last listed."""
    apply = sorted(
        name
        for name, obj in wanted.items()
        if name not in written or not already_held(written[name], obj, names.CSI_NODE_FIELD_MANAGER)
    )
    delete = sorted(name for name in written if name not in wanted)
    return apply, delete


class MirrorPublisher:
    def __init__(
        self,
        node: str,
        connect: Connect,
        retry_cap: float = 1.0,
        debounce: float = 0.02,
        resync: float = 300.0,
        *,
        program: str | None = None,
        image: str | None = None,
    ) -> None:
        self.node = node
        self.connect = connect
        # Which FUSE serves this node's mounts (its command, the FUSE pods' image): on every object.
        self.program = program
        self.image = image
        # The mirror must catch up within 2 s of the API server coming back: the retry wait stays
        # well under that.
        self.retry_cap = retry_cap
        # Many kubelet calls in a burst become one write per mount key.
        self.debounce = debounce
        # What this process believes the server holds is checked against it this often, so an object
        # deleted or edited by hand is put right even when this node's state does not change.
        self.resync = resync
        self._state: NodeState | None = None
        self._wake = asyncio.Event()
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._api: kr8s.asyncio.Api | None = None
        # What the API server holds, as far as this process knows: name → the object last applied,
        # or as listed (at start-up and each resync: written again only where it differs).
        self._written: Objects | None = None
        # Forget ``_written`` at the start of the next pass (never in the middle of one).
        self._forget = False
        # Whether this node's Node is Ready, once its watch has said (None: not known yet).
        self._node_ready: bool | None = None

    def node_ready(self, ready: bool) -> None:
        """Its Node's readiness, as it changes. Back to Ready after not being: the controller marked
        these objects Unknown meanwhile, and what this process wrote before no longer stands."""
        was, self._node_ready = self._node_ready, ready
        if ready and was is False:
            log.info("node is Ready again: publishing every mount again", extra={"node": self.node})
            self._forget = True
            self._wake.set()

    def publish(self, state: NodeState) -> None:
        self._state = state
        self._synced.clear()
        BEHIND.set(1)
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="fusemount-mirror")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def synced(self, timeout: float) -> bool:
        """Whether the objects caught up with the last published state within ``timeout`` s."""
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def _run(self) -> None:
        backoff = Backoff(base=0.1, cap=self.retry_cap)
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self.resync)
            except TimeoutError:
                # List again, then write what differs; not while the node is lost, where what differs
                # is the controller's Unknown, which stands until the node is back.
                self._forget = self._forget or self._node_ready is not False
            await asyncio.sleep(self.debounce)
            self._wake.clear()
            if self._forget:
                self._written, self._forget = None, False
            state = self._state
            if state is None:
                continue
            try:
                await self._sync(state)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                FAILURES.inc()
                delay = backoff.next()
                log.warning(
                    "FuseMount mirror behind, retrying in %.2fs: %s",
                    delay,
                    err,
                    extra={"node": self.node, "error_type": type(err).__name__},
                )
                await asyncio.sleep(delay)
                self._wake.set()
                continue
            backoff.reset()
            if self._state is state:
                self._synced.set()
                BEHIND.set(0)

    async def _sync(self, state: NodeState) -> None:
        if self._api is None:
            self._api = await self.connect()
        if self._written is None:
            self._written = await self._list_own()
        wanted = desired_objects(self.node, state, self.program, self.image)
        apply, delete = changes(wanted, self._written)
        # Each object on its own: one the server refuses must not hold back the others.
        failed: Exception | None = None
        for name in apply:
            try:
                await self._apply(wanted[name])
                self._written[name] = wanted[name]
            except Exception as err:
                failed = failed or err
        for name in delete:
            try:
                await self._delete(name)
                del self._written[name]
            except Exception as err:
                failed = failed or err
        if failed is not None:
            raise failed

    async def _list_own(self) -> Objects:
        assert self._api is not None
        found = await http.request(
            self._api,
            "GET",
            FUSEMOUNTS.collection_path(),
            params={"labelSelector": names.fuse_mount_node_selector(self.node)},
        )
        return {
            item["metadata"]["name"]: item
            for item in found.get("items", [])
            # The selector holds a node name cut to 63 characters: check the whole one.
            if item.get("spec", {}).get("nodeName") == self.node
        }

    async def _apply(self, obj: dict[str, Any]) -> None:
        assert self._api is not None
        name = obj["metadata"]["name"]
        params = {"fieldManager": names.CSI_NODE_FIELD_MANAGER, "force": "true"}
        head = {"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
        path = FUSEMOUNTS.object_path(None, name)
        body = {**head, "metadata": obj["metadata"], "spec": obj["spec"]}
        await http.request(self._api, "PATCH", path, params=params, body=body, content_type=http.APPLY_PATCH)
        status = {**head, "metadata": {"name": name}, "status": obj["status"]}
        await http.request(
            self._api, "PATCH", f"{path}/status", params=params, body=status, content_type=http.APPLY_PATCH
        )
        WRITES.labels("apply").inc()

    async def _delete(self, name: str) -> None:
        assert self._api is not None
        try:
            await http.request(self._api, "DELETE", FUSEMOUNTS.object_path(None, name))
        except http.ApiError as err:
            if err.code != 404:
                raise
        WRITES.labels("delete").inc()
