"""The controller's room for DataLoads: watches DataLoads and loader Jobs, and on the leader carries
out what ``plan.py`` decides for each Dataset that has DataLoads.

The queue is keyed by Dataset (namespace, name), so one pass sees all of a Dataset's DataLoads and
its lock together, and the queue never runs two passes of one Dataset at once: the lock (the
Dataset's ``status.operationRef.DataLoad``) is written by one pass at a time, and also guarded by
the Dataset's resourceVersion against a writer this process does not know. A DataLoad, its Job, its
Dataset or its runtime changing queues the Dataset. Datasets, runtimes and classes are read from the
reconciler's caches (``Caches``), not watched twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import kr8s.asyncio
from pydantic import ValidationError

from controller import metrics
from controller.compare import merge_patch
from controller.conditions import now
from controller.dataload.plan import CreateJob, Delete, Lock, Note, Plan, Status, UpdateCronJob, View, plan
from controller.events import Recorder
from controller.reconciler import Caches
from controller.workqueue import WorkQueue, drain
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import CRONJOBS, DATALOADS, DATASETS, JOBS
from kubectl_fluid.kube.watchcache import EventType, WatchCache

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, dataset)
PASSES = 4  # plans carried out in one turn of a key: new → Pending → Executing → its Job
MANAGED = f"{names.LABEL_APP_MANAGED_BY}={names.MANAGED_BY}"
JOB_SELECTOR = f"{names.LABEL_DATALOAD_ROLE}={names.DATALOAD_JOB_ROLE},{MANAGED}"
CRONJOB_SELECTOR = f"{names.LABEL_DATALOAD_ROLE}={names.DATALOAD_CRONJOB_ROLE},{MANAGED}"


def target_dataset(dataload: dict[str, Any]) -> str:
    return str(((dataload.get("spec") or {}).get("dataset") or {}).get("name") or "")


def _failed(key: Key, delay: float, error: Exception) -> None:
    log.warning("DataLoads of %s/%s: failed, retrying in %.2fs: %s", *key, delay, error)


class DataLoads:
    def __init__(
        self, api: kr8s.asyncio.Api, caches: Caches, recorder: Recorder, namespace: str | None
    ) -> None:
        self.api = api
        self.shared = caches
        self.recorder = recorder
        self.dataloads = WatchCache(api, DATALOADS, namespace=namespace)
        self.jobs = WatchCache(api, JOBS, namespace=namespace, label_selector=JOB_SELECTOR, compact=True)
        # Policy Cron: the CronJobs (their Jobs carry the Job labels, so the Job watch has them).
        self.cronjobs = WatchCache(
            api, CRONJOBS, namespace=namespace, label_selector=CRONJOB_SELECTOR, compact=True
        )
        self.queue: WorkQueue[Key] = WorkQueue()
        # Told of a Dataset whose cache a DataLoad changes (``Plan.summarise``): the controller
        # connects it to the execution entries' reportSummary on demand.
        self.cache_changing: Callable[[Key], None] = lambda _: None
        self.dataloads.add_handler(self._dataload_changed)
        self.jobs.add_handler(self._job_changed)
        self.cronjobs.add_handler(self._job_changed)
        caches.datasets.add_handler(self._dataset_changed)
        caches.runtimes.add_handler(self._dataset_changed)

    def caches(self) -> list[WatchCache]:
        return [self.dataloads, self.jobs, self.cronjobs]

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in (*self.caches(), *self.shared.all()))

    # ------------------------------------------------------------------ handlers (every replica)

    def _dataload_changed(self, _: EventType, obj: dict[str, Any]) -> None:
        self.queue.add((obj["metadata"]["namespace"], target_dataset(obj)))

    def _job_changed(self, _: EventType, obj: dict[str, Any]) -> None:
        dataset = (obj["metadata"].get("labels") or {}).get(names.LABEL_DATALOAD_TARGET)
        if dataset:
            self.queue.add((obj["metadata"]["namespace"], dataset))

    def _dataset_changed(self, _: EventType, obj: dict[str, Any]) -> None:
        """A Dataset or runtime: its DataLoads may wait for it (Bound, Ready, the lock)."""
        namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        if any(target_dataset(d) == name for d in self.dataloads.items(namespace)):
            self.queue.add((namespace, name))

    # ------------------------------------------------------------------ the leader's work

    async def lead(self) -> None:
        """Plan every Dataset with DataLoads once, then each as something of it changes."""
        while not self.synced():
            await asyncio.sleep(0.05)
        for obj in self.dataloads.items():
            self._dataload_changed("ADDED", obj)
        await drain(self.queue, self.settle, _failed)

    def view(self, key: Key) -> View:
        namespace, dataset = key
        runtime_obj = self.shared.runtimes.get(namespace, dataset)
        runtime = runtime_class = None
        try:
            runtime = CacheRuntime.model_validate(runtime_obj) if runtime_obj else None
            class_name = runtime.spec.runtime_class_name if runtime else None
            class_obj = self.shared.classes.get(None, class_name) if class_name else None
            runtime_class = CacheRuntimeClass.model_validate(class_obj) if class_obj else None
        except ValidationError as e:
            log.info("DataLoads of %s/%s: the runtime or its class does not validate: %s", *key, e)
        return View(
            namespace=namespace,
            dataset=dataset,
            dataset_obj=self.shared.datasets.get(namespace, dataset),
            runtime=runtime,
            runtime_class=runtime_class,
            dataloads=[d for d in self.dataloads.items(namespace) if target_dataset(d) == dataset],
            jobs={j["metadata"]["name"]: j for j in self.jobs.items(namespace)},
            now=now(),
            cronjobs={c["metadata"]["name"]: c for c in self.cronjobs.items(namespace)},
        )

    async def settle(self, key: Key) -> float | None:
        """Plan and carry out until a plan changes nothing more (a DataLoad that takes the lock gets
        its Job in the same call): our own writes are held in the caches without an event
        (``WatchCache.observe``), so nothing else would queue the key again for them. Returns the
        seconds after which to look again, if any."""
        for _ in range(PASSES):
            view = self.view(key)
            if not view.dataloads:
                return None
            steps: Plan = plan(view)
            if steps.summarise:
                self.cache_changing(key)
            if not await self._carry_out(key, view, steps):
                return steps.requeue_after
        return 0.0  # still moving after PASSES plans: go on in a later turn of the queue

    async def _carry_out(self, key: Key, view: View, steps: Plan) -> bool:
        """Whether a step changed anything (an Event alone does not)."""
        by_name = {d["metadata"]["name"]: d for d in view.dataloads}
        changed = False
        for step in steps.steps:
            if isinstance(step, Note):
                await self._event(by_name[step.name], step.event.type, step.event.reason, step.event.message)
                continue
            changed = True
            if isinstance(step, Lock):
                await self._lock(view, step.holder)
            elif isinstance(step, Status):
                await self._status(by_name[step.name], step.status)
                if step.event is not None:
                    await self._event(
                        by_name[step.name], step.event.type, step.event.reason, step.event.message
                    )
                log.info("DataLoad %s/%s: %s", key[0], step.name, step.status.get("phase"))
            elif isinstance(step, CreateJob):
                await self._create_job(step.job)
            elif isinstance(step, UpdateCronJob):
                await self._update_cronjob(key[0], step)
            elif isinstance(step, Delete):
                await self._delete(by_name[step.name])
        return changed

    async def _event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        await self.recorder.event(
            {**obj, "apiVersion": names.API_VERSION, "kind": names.KIND_DATALOAD}, type_, reason, message
        )

    async def _status(self, obj: dict[str, Any], status: dict[str, Any]) -> None:
        meta = obj["metadata"]
        written = await http.request(
            self.api,
            "PATCH",
            DATALOADS.object_path(meta["namespace"], meta["name"]) + "/status",
            body={"status": merge_patch(obj.get("status") or {}, status)},
            content_type=http.MERGE_PATCH,
        )
        metrics.WRITES.labels("patch", "dataloads/status").inc()
        self.dataloads.observe(written)

    async def _lock(self, view: View, holder: str | None) -> None:
        """Upstream's lock, guarded by the Dataset's resourceVersion (a 409/422 retries the pass)."""
        ds = view.dataset_obj
        if ds is None:
            return
        status = ds.get("status") or {}
        refs = dict(status.get("operationRef") or {})
        if holder is None:
            refs.pop(names.OPERATION_DATALOAD, None)
        else:
            refs[names.OPERATION_DATALOAD] = holder
        ops: list[dict[str, Any]] = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": ds["metadata"]["resourceVersion"]}
        ]
        if not status:
            ops.append({"op": "add", "path": "/status", "value": {"operationRef": refs}})
        elif refs:
            ops.append({"op": "add", "path": "/status/operationRef", "value": refs})
        elif "operationRef" in status:
            ops.append({"op": "remove", "path": "/status/operationRef"})
        written = await http.request(
            self.api,
            "PATCH",
            DATASETS.object_path(view.namespace, view.dataset) + "/status",
            body=ops,
            content_type=http.JSON_PATCH,
        )
        metrics.WRITES.labels("patch", "datasets/status").inc()
        self.shared.datasets.observe(written)
        log.info("Dataset %s/%s: DataLoad lock %s", view.namespace, view.dataset, holder or "released")

    async def _update_cronjob(self, namespace: str, step: UpdateCronJob) -> None:
        """A merge patch of the CronJob's schedule and Job template (lists in it are replaced whole)."""
        written = await http.request(
            self.api,
            "PATCH",
            CRONJOBS.object_path(namespace, step.name),
            body={"spec": {"schedule": step.spec["schedule"], "jobTemplate": step.spec["jobTemplate"]}},
            content_type=http.MERGE_PATCH,
        )
        metrics.WRITES.labels("patch", CRONJOBS.plural).inc()
        self.cronjobs.observe(written)
        log.info("DataLoad CronJob %s/%s follows its DataLoad's schedule and paths", namespace, step.name)

    async def _create_job(self, job: dict[str, Any]) -> None:
        """Create a loader Job, or a Cron DataLoad's CronJob."""
        resource, cache = (CRONJOBS, self.cronjobs) if job["kind"] == CRONJOBS.kind else (JOBS, self.jobs)
        meta = job["metadata"]
        try:
            created = await http.request(
                self.api, "POST", resource.collection_path(meta["namespace"]), body=job
            )
        except http.ApiError as e:
            if e.code != 409:  # made already: the watch has not brought it yet
                raise
            return
        metrics.WRITES.labels("create", resource.plural).inc()
        cache.observe(created)
        log.info("DataLoad %s %s/%s created", job["kind"], meta["namespace"], meta["name"])

    async def _delete(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        try:
            await http.request(
                self.api,
                "DELETE",
                DATALOADS.object_path(meta["namespace"], meta["name"]),
                body={"preconditions": {"uid": meta["uid"]}, "propagationPolicy": "Background"},
            )
        except http.ApiError as e:
            if e.code not in (404, 409):
                raise
        metrics.WRITES.labels("delete", "dataloads").inc()
