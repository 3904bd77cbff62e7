"""A runtime's teardown in upstream's order: its users first, then its client, then the client's node
labels; the master and worker last.

The client pods are the FUSE of the Dataset's PVC (SPEC §7), and their preStop unmount needs the
master that serves them (controller/clientfirst.py). Owner references alone would collect client,
master and worker at once, and leave a dead mount on every node that ran a client. So a runtime that
has a client carries ``names.RUNTIME_FINALIZER``: deleting it, whether by hand, with the Dataset in one
``kubectl delete -f``, or through the Dataset's own finalizer, waits while pods use the Dataset (as
upstream's runtime deletion does, and says so in an Event), deletes the client DaemonSet and waits for
its pods, takes the ``fluid.io/f-*`` labels off the nodes, and only then lets the runtime go; the
collector then takes the master and worker. A namespace deleted whole deletes every pod at once;
this order cannot hold there (the README says what is left and how to clear it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from controller import finalizers, metrics
from controller.clientfirst import client_pods
from controller.events import Recorder
from controller.fuselabels import remove_fuse_labels
from controller.inuse import dataset_in_use_message, dataset_users
from kubectl_fluid.api import names
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.resources import CACHERUNTIMES, Resource
from kubectl_fluid.kube.watchcache import WatchCache

log = logging.getLogger(__name__)

Request = Callable[..., Awaitable[Any]]
Delete = Callable[[Resource, dict[str, Any]], Awaitable[None]]

FINALIZER = names.RUNTIME_FINALIZER
# While pods use a Dataset its deletion waits; we look again this often.
IN_USE_RECHECK = 5.0
# A client pod's preStop unmounts its FUSE within its grace period: look again soon.
CLIENT_GONE_RECHECK = 2.0


class Teardown:
    def __init__(self, request: Request, daemonsets: WatchCache, delete: Delete, recorder: Recorder) -> None:
        self.request = request
        self.daemonsets = daemonsets
        self.delete = delete
        self.recorder = recorder

    async def client_still_up(self, namespace: str, name: str, pods: list[dict[str, Any]]) -> bool:
        """Delete the runtime's client DaemonSet, and say whether client pods are left to wait for."""
        left = client_pods(pods, name)
        daemonset = self.daemonsets.get(namespace, names.component_name(name, "client"))
        if daemonset is not None and not daemonset["metadata"].get("deletionTimestamp"):
            await self.delete(resources.DAEMONSETS, daemonset)
        if left:
            log.info("waiting for the client pods to go before the master", extra={"pods": left})
        return bool(left)

    async def remove_fuse_labels(self, namespace: str, name: str) -> None:
        """The runtime is gone or going: its client's node labels go with it (controller/fuselabels.py)."""
        for node in await remove_fuse_labels(self.request, namespace, name):
            metrics.WRITES.labels("patch", "nodes").inc()
            label = names.fuse_node_label(namespace, name)
            log.info("removed %s from node %s: its runtime is gone", label, node)

    async def release_runtime(self, rt_obj: dict[str, Any], pods: list[dict[str, Any]]) -> float | None:
        """One step of a deleted runtime's teardown: seconds until the next look, or None once its
        finalizer is off (or was never on)."""
        meta = rt_obj["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if not finalizers.has(rt_obj, FINALIZER):
            return None
        users = dataset_users(pods, name)
        if users:
            message = dataset_in_use_message(name, users)
            await self.recorder.event(rt_obj, "Warning", "DatasetInUse", message)
            return IN_USE_RECHECK
        if await self.client_still_up(namespace, name, pods):
            return CLIENT_GONE_RECHECK
        await self.remove_fuse_labels(namespace, name)
        ops = finalizers.removing(rt_obj, FINALIZER)
        if await finalizers.send(self.request, CACHERUNTIMES, rt_obj, ops) is not None:
            log.info("released runtime: its client and labels are gone", extra={"namespace": namespace})
        return None
