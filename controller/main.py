"""``fluid-controller``: watch caches on every replica, reconcile workers on the leader only.

Every replica lists and watches, so a standby that takes over already has the cluster in memory; it
then queues every Dataset and CacheRuntime once (level-triggered: a new leader checks everything).
Beside the reconcilers, the leader marks the FuseMounts of lost nodes (``controller/lostnodes.py``)
and keeps the cache-node labels on the nodes of the runtimes' workers (``controller/cachenodes.py``),
and runs DataLoads (``controller/dataload/``),
and runs the classes' execution entries, mountUFS and reportSummary (``controller/entries/runner.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

import kr8s.asyncio

from controller import metrics
from controller.cachenodes import CacheNodes
from controller.classguard import ClassGuard, ClassKey
from controller.dataload.room import DataLoads
from controller.desired.status import watched_state
from controller.desired.storage import pv_holder
from controller.entries.runner import EntryRunner
from controller.events import Recorder
from controller.inuse import ClassIndex
from controller.leader import LeaderElector, LeaseConfig, LostLeadership
from controller.lostnodes import LostNodes
from controller.reconciler import Caches, Key, Reconciler, Result
from controller.workqueue import ShutDown, WorkQueue
from kubectl_fluid import logs
from kubectl_fluid.api import names
from kubectl_fluid.health import HealthServer
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.client import connect
from kubectl_fluid.kube.resources import CACHERUNTIMECLASSES, CACHERUNTIMES, DATASETS
from kubectl_fluid.kube.watchcache import EventType, WatchCache

log = logging.getLogger("controller")

MANAGED = f"{names.LABEL_APP_MANAGED_BY}={names.MANAGED_BY}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fluid-controller", description=__doc__)
    p.add_argument(
        "--kubeconfig", help="kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, in-cluster)"
    )
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--namespace", help="reconcile only this namespace (default: all)")
    p.add_argument(
        "--workers",
        type=int,
        default=8,
        help="concurrent reconciles (never two for one key), and as many API calls in flight",
    )
    p.add_argument("--leader-elect", action="store_true", help="act only while holding the leader Lease")
    p.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", names.FLUID_NAMESPACE))
    p.add_argument("--lease-name", default=names.CONTROLLER_LEASE)
    p.add_argument(
        "--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}_{os.getpid()}"
    )
    p.add_argument("--lease-duration", type=float, default=15.0)
    p.add_argument("--renew-deadline", type=float, default=10.0)
    p.add_argument("--retry-period", type=float, default=2.0)
    p.add_argument("--health-host", default="0.0.0.0")
    p.add_argument(
        "--health-port", type=int, default=8080, help="/healthz, /readyz, /metrics (0: any free port)"
    )
    p.add_argument(
        "--entry-workers",
        type=int,
        default=4,
        help="concurrent execution entries (mountUFS, reportSummary), each an exec in a master pod",
    )
    p.add_argument(
        "--summary-period",
        type=float,
        default=names.REPORT_SUMMARY_PERIOD_SECONDS,
        help="seconds between two runs of a class's reportSummary for one Dataset (upstream's 90)",
    )
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", choices=["json", "text"], default="json")
    return p.parse_args(argv)


class Controller:
    def __init__(self, api: kr8s.asyncio.Api, args: argparse.Namespace) -> None:
        self.api = api
        self.args = args
        ns = args.namespace

        def cache(resource: resources.Resource, selector: str | None = None) -> WatchCache:
            # Compact: every runtime's children are held, a few of them read on each pass.
            namespace = ns if resource.namespaced else None
            return WatchCache(api, resource, namespace=namespace, label_selector=selector, compact=True)

        self.caches = Caches(
            datasets=cache(DATASETS),
            runtimes=cache(CACHERUNTIMES),
            classes=cache(CACHERUNTIMECLASSES),
            configmaps=cache(resources.CONFIGMAPS, MANAGED),
            services=cache(resources.SERVICES, MANAGED),
            statefulsets=cache(resources.STATEFULSETS, MANAGED),
            daemonsets=cache(resources.DAEMONSETS, MANAGED),
            pvcs=cache(resources.PERSISTENT_VOLUME_CLAIMS, MANAGED),
            pvs=cache(resources.PERSISTENT_VOLUMES, MANAGED),
        )
        self.queue: WorkQueue[Key | ClassKey] = WorkQueue()
        recorder = Recorder(api, args.identity)
        self.class_index = ClassIndex()
        self.reconciler = Reconciler(api, self.caches, recorder, args.workers, self.class_index)
        self.guard = ClassGuard(self.reconciler.request, self.caches.classes, self.class_index, recorder)
        self.lost_nodes = LostNodes(api)
        self.cache_nodes = CacheNodes(api, self.caches.runtimes, self.caches.datasets, ns)
        self.dataloads = DataLoads(api, self.caches, recorder, ns)
        self.entries = EntryRunner(
            api,
            self.caches.datasets,
            self.caches.runtimes,
            self.caches.classes,
            recorder,
            namespace=ns,
            workers=args.entry_workers,
            summary_period=args.summary_period,
        )
        self.dataloads.cache_changing = self.entries.summarise_now
        self._wire()

    def _wire(self) -> None:
        def own(_: EventType, obj: dict[str, Any]) -> None:
            self.queue.add((obj["metadata"]["namespace"], obj["metadata"]["name"]))

        seen: dict[tuple[str, str, str], tuple[Any, ...]] = {}

        def child(event: EventType, obj: dict[str, Any]) -> None:
            meta = obj["metadata"]
            key = (obj.get("kind", ""), meta.get("namespace", ""), meta["name"])
            state = watched_state(obj)
            if event == "DELETED":
                seen.pop(key, None)
            elif state is not None:
                if event == "MODIFIED" and seen.get(key) == state:
                    return
                seen[key] = state
            for ref in meta.get("ownerReferences", []):
                if ref.get("kind") == CACHERUNTIMES.kind and ref.get("apiVersion") == names.API_VERSION:
                    self.queue.add((obj["metadata"]["namespace"], ref["name"]))

        def pv(event: EventType, obj: dict[str, Any]) -> None:
            key = pv_holder(obj)
            if key is not None:
                self.queue.add(key)
            if event == "DELETED":
                # A freed name: a Dataset refused for NameConflict (another Dataset's PV had it) can
                # have it now. Only deletions free a name, so the scan is rare.
                freed = obj["metadata"]["name"]
                for ds in self.caches.datasets.items():
                    meta = ds["metadata"]
                    if names.dataset_pv(meta["namespace"], meta["name"]) == freed:
                        self.queue.add((meta["namespace"], meta["name"]))

        def runtime_class(_: EventType, obj: dict[str, Any]) -> None:
            self.queue.add(ClassKey(obj["metadata"]["name"]))
            for rt in self.caches.runtimes.items():
                if rt.get("spec", {}).get("runtimeClassName") == obj["metadata"]["name"]:
                    own("MODIFIED", rt)

        def runtime(event: EventType, obj: dict[str, Any]) -> None:
            """Besides the runtime's own key: the classes it comes to, leaves or moves between, whose
            finalizers follow their users. A class being deleted that loses a user has its other
            runtimes queued, so their conditions name who holds it now."""
            own(event, obj)
            now = None if event == "DELETED" else (obj.get("spec") or {}).get("runtimeClassName")
            before = self.class_index.update((obj["metadata"]["namespace"], obj["metadata"]["name"]), now)
            if before == now:
                return
            for name in (before, now):
                if name is not None:
                    self.queue.add(ClassKey(name))
            left = self.caches.classes.get(None, before) if before is not None else None
            if left is not None and left["metadata"].get("deletionTimestamp"):
                runtime_class("MODIFIED", left)

        self.caches.datasets.add_handler(own)
        self.caches.runtimes.add_handler(runtime)
        self.caches.classes.add_handler(runtime_class)
        for c in (
            self.caches.configmaps,
            self.caches.services,
            self.caches.statefulsets,
            self.caches.daemonsets,
        ):
            c.add_handler(child)
        self.caches.pvcs.add_handler(child)
        self.caches.pvs.add_handler(pv)

    def watches(self) -> list[WatchCache]:
        return [
            *self.caches.all(),
            *self.lost_nodes.caches(),
            *self.cache_nodes.caches(),
            *self.dataloads.caches(),
            *self.entries.caches(),
        ]

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in self.watches())

    async def lead(self) -> None:
        metrics.IS_LEADER.set(1)
        # Its own caches and queue: Nodes it may not list (a narrowed install) hold back no Dataset.
        lost_nodes = asyncio.create_task(self.lost_nodes.lead(), name="lost-nodes")
        cache_nodes = asyncio.create_task(self.cache_nodes.lead(), name="cache-nodes")
        # DataLoads: a room of their own too (controller/dataload/), keyed by Dataset.
        dataloads = asyncio.create_task(self.dataloads.lead(), name="dataloads")
        entries = asyncio.create_task(self.entries.lead(), name="execution-entries")
        try:
            while not all(c.synced.is_set() for c in self.caches.all()):
                await asyncio.sleep(0.05)
            for key in [*self.caches.datasets.keys(), *self.caches.runtimes.keys()]:
                self.queue.add(key)
            for cls in self.caches.classes.items():
                self.queue.add(ClassKey(cls["metadata"]["name"]))
            log.info("reconciling", extra={"keys": len(self.queue), "workers": self.args.workers})
            await asyncio.gather(
                *(self._worker() for _ in range(self.args.workers)),
                lost_nodes,
                cache_nodes,
                dataloads,
                entries,
            )
        finally:
            for room in (lost_nodes, cache_nodes, dataloads, entries):
                room.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await room
            metrics.IS_LEADER.set(0)

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            metrics.QUEUE_DEPTH.set(len(self.queue))
            started = time.perf_counter()
            try:
                if isinstance(key, ClassKey):
                    await self.guard.reconcile(key)
                    result = Result()
                else:
                    result = await self.reconciler.reconcile(key)
            except asyncio.CancelledError:
                self.queue.done(key)
                raise
            except Exception as e:
                delay = self.queue.add_rate_limited(key)
                metrics.RECONCILES.labels("error").inc()
                log.warning(
                    "reconcile failed; retrying in %.2fs: %s",
                    delay,
                    e,
                    extra={"key": _shown(key), "retries": self.queue.backoff.retries(key)},
                )
            else:
                self.queue.forget(key)
                if result.requeue_after:
                    self.queue.add_after(key, result.requeue_after)
                    metrics.RECONCILES.labels("requeue").inc()
                else:
                    metrics.RECONCILES.labels("success").inc()
            finally:
                metrics.RECONCILE_SECONDS.observe(time.perf_counter() - started)
                self.queue.done(key)


async def run(args: argparse.Namespace) -> int:
    api = await connect(args.kubeconfig, args.context)
    controller = Controller(api, args)
    health = HealthServer(args.health_host, args.health_port, ready=controller.synced)
    port = await health.start()
    log.info("serving /healthz /readyz /metrics", extra={"port": port})
    watches = [asyncio.create_task(c.run()) for c in controller.watches()]
    elector = LeaderElector(
        api,
        LeaseConfig(
            args.lease_namespace,
            args.lease_name,
            args.identity,
            args.lease_duration,
            args.renew_deadline,
            args.retry_period,
        ),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    acting = asyncio.create_task(
        compete(elector, controller.lead) if args.leader_elect else controller.lead()
    )
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({acting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if acting.done():
            acting.result()
    finally:
        acting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await acting
        if args.leader_elect:
            await elector.release()
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        await health.close()
    log.info("stopped")
    return 0


async def compete(elector: LeaderElector, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Lead whenever this replica holds the Lease, for as long as the process lives. Leadership lost
    (the API server away longer than the renew deadline) cancels the work and makes this replica a
    candidate again: exiting instead would turn every long API outage into a restart of every replica."""
    while True:
        try:
            await elector.run(lead)
            return
        except LostLeadership as e:
            log.error("%s; stopped acting, competing for the lease again", e)


def _shown(key: Key | ClassKey) -> str:
    return str(key) if isinstance(key, ClassKey) else f"{key[0]}/{key[1]}"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
