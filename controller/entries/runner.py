"""The edge of the execution entries: when a Dataset's master is Ready, run its class's mountUFS (when
``plan.mount_due``) and, every period, its reportSummary, in the first master pod's first container,
and write what they said.

A queue and workers of its own (``controller/workqueue.py``): a script that runs for its whole
timeout holds one of these workers and its own key, never a reconcile. Its keys come from the
Datasets, runtimes and classes the reconciler's caches hold, and from a watch of the master pods of
its own. A failing mountUFS is the Dataset's condition ``UpdateReady=False`` and a Warning Event with
its stderr's tail, and its key comes back with the queue's per-key exponential backoff (capped at
``MOUNT_RETRY_CAP``): no crash, no hot loop. A failing reportSummary is a Warning Event; the states
stay as they were (upstream keeps them) and it runs again next period.

Status writes are merge patches guarded by ``resourceVersion``, read fresh first: the reconciler
writes the same status (phase, Ready) from its cache, and a stale list of conditions must not
drop this one's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import kr8s.asyncio

from controller.conditions import now, set_condition
from controller.entries import plan
from controller.entries.redact import redact
from controller.entries.summary import SummaryError, changed, summary_status
from controller.events import Recorder
from controller.workqueue import ItemBackoff, WorkQueue, drain
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntimeclass import ExecutionEntries, ExecutionEntry
from kubectl_fluid.api.dataset import cache_mount_paths
from kubectl_fluid.kube import http, resources
from kubectl_fluid.kube.execframes import tail
from kubectl_fluid.kube.podexec import ExecFailed, ExecResult, exec_in_pod
from kubectl_fluid.kube.resources import CACHERUNTIMES, DATASETS
from kubectl_fluid.kube.watchcache import EventType, WatchCache

log = logging.getLogger(__name__)

Key = tuple[str, str]
MOUNT_RETRY_BASE = 2.0
MOUNT_RETRY_CAP = 300.0
# A mount missing from the script's answer is mostly the runtime config not in the pod yet (kubelet
# refreshes a ConfigMap volume within about a minute): looked at again at least this often.
NOT_YET_RETRY_CAP = 15.0
WRITE_TRIES = 5


class MountFailed(Exception):
    """mountUFS failed; its condition and Event are written, and the key is retried with backoff,
    capped at ``cap``."""

    def __init__(self, message: str, cap: float = MOUNT_RETRY_CAP) -> None:
        super().__init__(message)
        self.cap = cap


def _failed(key: Key, delay: float, error: Exception) -> None:
    # A failing script is the Dataset's condition and Event already: info, not a warning of ours.
    level = logging.INFO if isinstance(error, MountFailed) else logging.WARNING
    log.log(level, "execution entries of %s/%s: %s; again in %.0fs", *key, error, delay)


class EntryRunner:
    def __init__(
        self,
        api: kr8s.asyncio.Api,
        datasets: WatchCache,
        runtimes: WatchCache,
        classes: WatchCache,
        recorder: Recorder,
        *,
        namespace: str | None = None,
        workers: int = 4,
        summary_period: float = names.REPORT_SUMMARY_PERIOD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.datasets, self.runtimes, self.classes = datasets, runtimes, classes
        self.recorder = recorder
        self.workers = workers
        self.summary_period = summary_period
        self.clock = clock
        self.pods = WatchCache(
            api,
            resources.PODS,
            namespace=namespace,
            label_selector=names.master_pods_selector(),
            compact=True,
        )
        self.queue: WorkQueue[Key] = WorkQueue(ItemBackoff(base=MOUNT_RETRY_BASE, cap=MOUNT_RETRY_CAP))
        self._summarised: dict[Key, float] = {}  # when reportSummary last ran, per key
        self._mounts: dict[Key, str] = {}  # each Dataset's mounts hash, as its watch last said
        self._wire()

    def caches(self) -> list[WatchCache]:
        return [self.pods]

    def _wire(self) -> None:
        def own(_: EventType, obj: dict[str, Any]) -> None:
            self.queue.add((obj["metadata"]["namespace"], obj["metadata"]["name"]))

        def dataset(event: EventType, obj: dict[str, Any]) -> None:
            """New mounts start a new series of tries: the backoff a broken mount built up must not
            hold back the fix of it."""
            key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
            mounts = None if event == "DELETED" else plan.mounts_hash((obj.get("spec") or {}).get("mounts"))
            if self._mounts.get(key) != mounts:
                self.queue.forget(key)
            if mounts is None:
                self._mounts.pop(key, None)
            else:
                self._mounts[key] = mounts
            own(event, obj)

        def master(_: EventType, obj: dict[str, Any]) -> None:
            runtime = (obj["metadata"].get("labels") or {}).get(names.LABEL_CACHERUNTIME_NAME)
            if runtime:
                self.queue.add((obj["metadata"]["namespace"], runtime))

        def runtime_class(_: EventType, obj: dict[str, Any]) -> None:
            for rt in self.runtimes.items():
                if (rt.get("spec") or {}).get("runtimeClassName") == obj["metadata"]["name"]:
                    own("MODIFIED", rt)

        self.datasets.add_handler(dataset)
        self.runtimes.add_handler(own)
        self.classes.add_handler(runtime_class)
        self.pods.add_handler(master)

    async def lead(self) -> None:
        """Run while this replica leads: every key once, then as events and timers bring them."""
        while not (self.pods.synced.is_set() and self.datasets.synced.is_set()):
            await asyncio.sleep(0.05)
        for namespace, name in self.datasets.keys():  # noqa: SIM118 (a WatchCache is no mapping)
            self.queue.add((namespace or "", name))
        workers = [asyncio.create_task(self._worker()) for _ in range(self.workers)]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            for w in workers:
                with contextlib.suppress(asyncio.CancelledError):
                    await w

    async def _worker(self) -> None:
        await drain(self.queue, self.run, _failed, self._retry)

    def _retry(self, key: Key, error: Exception) -> float:
        """The key's backoff, capped lower for a mount only missing from the script's answer."""
        cap = error.cap if isinstance(error, MountFailed) else MOUNT_RETRY_CAP
        return min(self.queue.backoff.when(key), cap)

    def summarise_now(self, key: Key) -> None:
        """reportSummary on demand (a data operation that changed what is cached): the key's next
        pass runs it, whatever its period says."""
        self._summarised.pop(key, None)
        self.queue.add(key)

    # ------------------------------------------------------------------ one key

    async def run(self, key: Key) -> float | None:
        """Run what is due for ``key``; seconds until it should look again (the next summary)."""
        namespace, name = key
        ds_obj = self.datasets.get(namespace, name)
        rt_obj = self.runtimes.get(namespace, name)
        if ds_obj is None or rt_obj is None or _deleting(ds_obj) or _deleting(rt_obj):
            self._summarised.pop(key, None)
            return None
        entries = self._entries(rt_obj)
        if entries is None:
            return None
        master = plan.master_pod(self.pods.get(namespace, names.master_pod_name(name)))
        if master is None or not master.ready:
            return None  # the pod's watch brings the key back when it is Ready
        mounts = (ds_obj.get("spec") or {}).get("mounts") or []
        if entries.mount_ufs is not None:
            record = ((rt_obj.get("status") or {}).get("mountedUfs")) or None
            if plan.mount_due(record, master, mounts):
                await self._mount(ds_obj, rt_obj, master, entries.mount_ufs, mounts)
                self._summarised.pop(key, None)  # mounted (it raises if not): the UFS total changed
            elif not _condition_true(ds_obj, names.CONDITION_UFS_UPDATE_READY):
                # Back to the mounts this master last mounted (a broken one taken out again), or
                # the condition lost to a write from a stale cache: it is so, without a run.
                await self._mounted(ds_obj, master, mounts, "as when mountUFS last ran there")
        summary = entries.summary()
        if summary is None:
            return None
        since = self.clock() - self._summarised.get(key, -1e18)
        if since < self.summary_period:
            return self.summary_period - since
        self._summarised[key] = self.clock()
        await self._summarise(ds_obj, master, summary)
        return self.summary_period

    def _entries(self, rt_obj: dict[str, Any]) -> ExecutionEntries | None:
        class_name = (rt_obj.get("spec") or {}).get("runtimeClassName")
        cls = self.classes.get(None, class_name) if class_name else None
        raw = ((((cls or {}).get("topology") or {}).get("master") or {}).get("executionEntries")) or None
        if raw is None:
            return None
        try:
            return ExecutionEntries.model_validate(raw)
        except ValueError as e:  # the CRD's schema admits what the model does; say so and leave it
            log.warning("class %s: executionEntries not understood: %s", class_name, e)
            return None

    async def _exec(self, namespace: str, master: plan.MasterPod, entry: ExecutionEntry) -> ExecResult:
        return await exec_in_pod(
            self.api,
            namespace,
            master.name,
            master.container,
            entry.command,
            timeout=plan.timeout_of(entry.timeout),
        )

    async def _mount(
        self,
        ds_obj: dict[str, Any],
        rt_obj: dict[str, Any],
        master: plan.MasterPod,
        entry: ExecutionEntry,
        mounts: list[dict[str, Any]],
    ) -> None:
        namespace, name = ds_obj["metadata"]["namespace"], ds_obj["metadata"]["name"]
        failure: str | None = None
        cap = MOUNT_RETRY_CAP
        try:
            result = await self._exec(namespace, master, entry)
        except ExecFailed as e:
            failure = str(e)
        else:
            log.info(
                "mountUFS ran",
                extra={"key": f"{namespace}/{name}", "exit": result.exit_code, "seconds": result.seconds},
            )
            if result.exit_code != 0:
                failure = f"exited {result.exit_code}: {redact(tail(result.stderr)) or '(no stderr)'}"
            else:
                try:
                    check = plan.check_mounted(cache_mount_paths(mounts), plan.mounted_paths(result.stdout))
                except plan.MountOutputError as e:
                    failure = str(e)
                else:
                    if not check.ok:
                        # The runtime config the script reads reaches the pod's volume a while after
                        # the ConfigMap changes (kubelet's sync): upstream waits the same way.
                        failure = f"not mounted yet: {', '.join(check.missing)}"
                        cap = NOT_YET_RETRY_CAP
        if failure is not None:
            message = f"mountUFS in pod {master.name}: {failure}"
            await self._dataset_condition(ds_obj, False, names.REASON_MOUNT_UFS_FAILED, message)
            await self.recorder.event(ds_obj, "Warning", names.REASON_MOUNT_UFS_FAILED, message)
            raise MountFailed(message, cap)
        extra = f"; also mounted: {', '.join(check.extra)}" if check.extra else ""
        await self._mounted(ds_obj, master, mounts, f"by mountUFS in {result.seconds:.1f}s{extra}")
        await self._write_status(
            CACHERUNTIMES,
            rt_obj,
            lambda status: {
                "mountTime": now(),
                "mountedUfs": plan.mount_record(master, mounts),
            },
        )

    async def _mounted(
        self, ds_obj: dict[str, Any], master: plan.MasterPod, mounts: list[dict[str, Any]], how: str
    ) -> None:
        """``UpdateReady=True`` and ``status.mounts`` (upstream: the spec's, once mounted)."""
        shown = ", ".join(cache_mount_paths(mounts)) or "none"
        message = f"{shown} mounted in pod {master.name} ({how})"
        await self._dataset_condition(ds_obj, True, names.REASON_UFS_MOUNTED, message, mounts=mounts)

    async def _summarise(self, ds_obj: dict[str, Any], master: plan.MasterPod, entry: ExecutionEntry) -> None:
        namespace = ds_obj["metadata"]["namespace"]
        try:
            result = await self._exec(namespace, master, entry)
            if result.exit_code != 0:
                raise SummaryError(
                    f"exited {result.exit_code}: {redact(tail(result.stderr)) or '(no stderr)'}"
                )
            fields = summary_status(result.stdout)
        except (ExecFailed, SummaryError) as e:
            message = f"reportSummary in pod {master.name}: {e}"
            log.info(message, extra={"key": f"{namespace}/{ds_obj['metadata']['name']}"})
            await self.recorder.event(ds_obj, "Warning", names.REASON_REPORT_SUMMARY_FAILED, message)
            return
        await self._write_status(DATASETS, ds_obj, lambda status: fields if changed(status, fields) else None)

    async def _dataset_condition(
        self,
        ds_obj: dict[str, Any],
        ok: bool,
        reason: str,
        message: str,
        mounts: list[dict[str, Any]] | None = None,
    ) -> None:
        def patch(status: dict[str, Any]) -> dict[str, Any] | None:
            conditions = set_condition(
                status.get("conditions") or [], names.CONDITION_UFS_UPDATE_READY, ok, reason, message
            )
            out: dict[str, Any] = {}
            if conditions != (status.get("conditions") or []):
                out["conditions"] = conditions
            if mounts is not None and status.get("mounts") != mounts:
                out["mounts"] = mounts  # upstream: status.mounts = spec.mounts once mounted
            return out or None

        await self._write_status(DATASETS, ds_obj, patch)

    async def _write_status(
        self,
        resource: resources.Resource,
        obj: dict[str, Any],
        change: Callable[[dict[str, Any]], dict[str, Any] | None],
    ) -> None:
        """Merge ``change(status)`` into the object's status, from a fresh read, guarded by its
        resourceVersion; a conflict reads again."""
        meta = obj["metadata"]
        path = resource.object_path(meta["namespace"], meta["name"])
        cache = self.datasets if resource is DATASETS else self.runtimes
        for _ in range(WRITE_TRIES):
            fresh = await http.get(self.api, path)
            if fresh is None or _deleting(fresh):
                return
            status_patch = change(fresh.get("status") or {})
            if not status_patch:
                return
            try:
                written = await http.request(
                    self.api,
                    "PATCH",
                    path + "/status",
                    body={
                        "metadata": {"resourceVersion": fresh["metadata"]["resourceVersion"]},
                        "status": status_patch,
                    },
                    content_type=http.MERGE_PATCH,
                )
            except http.ApiError as e:
                if e.code == 409:
                    continue
                raise
            cache.observe(written)
            return
        raise http.ApiError(409, "Conflict", f"{path}/status kept changing under {WRITE_TRIES} writes")


def _condition_true(obj: dict[str, Any], type_: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions)


def _deleting(obj: dict[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))
