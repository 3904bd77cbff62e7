"""The webhook's view of the cluster: watch caches of Datasets, CacheRuntimes, runtime-config
ConfigMaps, claims, StorageClasses and PersistentVolumes, so that an admission makes no API round trip
in steady state.

Cache misses for Datasets and ConfigMaps fall back to one direct GET each: a Dataset created just
before its first pod can reach us through the API before it reaches us through the watch. Claims,
StorageClasses and PVs are never fetched: every pod of the cluster that mounts a claim reaches the
webhook (its propagation entry), and a GET for each would cost the API server a round trip per pod.
Claims and PVs are held trimmed to the fields read (``_trim_claim``, ``_trim_pv``): a few hundred bytes
each, where the objects are kilobytes, as every claim and PV of the cluster is held. Runtime config
ConfigMaps are held as their keys only (``_trim_configmap``): admission asks which files a ConfigMap
has, never what they say.

What a GET finds belongs to the admission that asked: ``prefetch`` returns it in a view of its own,
dropped with the admission. No store of found objects is shared between admissions, so none has to be
bounded by evicting what another admission has just fetched (the store this replaces was cleared at
1024 entries, right after the insert of the admission that needed them).

Misses are bounded three ways (issue 27, item 4: one namespace's pods naming missing datasets got
another namespace's pod refused, at 56 GETs a pod):
- a 404 is remembered for a few seconds (``webhook/notfound.py``; the watch's ADDED forgets it), and
  concurrent misses of one name share one GET, so a flood naming the same missing names costs a GET
  per name, not per pod;
- each namespace has a budget of GETs (``webhook/budgets.py``): a namespace that spent it has its
  further misses refused at once (``OverBudget``), and at most ``NAMESPACE_CONCURRENT_GETS`` of its
  GETs are in flight, so it never holds every slot another namespace's admission needs;
- at most ``MAX_CONCURRENT_GETS`` are in flight for the whole server, as a pod naming many datasets
  must not queue thousands of requests in the HTTP client's pool (which then spends its time managing
  the queue), and no ConfigMap is asked for when its Dataset does not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import kr8s.asyncio

from kubectl_fluid.api import names
from kubectl_fluid.kube import http, resources
from kubectl_fluid.kube.watchcache import EventType, WatchCache
from webhook import metrics
from webhook.budgets import Budgets
from webhook.notfound import NotFound

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Kind = Literal["Dataset", "ConfigMap"]
Key = tuple[Kind, str, str]  # (kind, namespace, name)
# Steady state needs none. Each GET costs the client a few ms of CPU (httpx, TLS), so more in flight
# only opens more connections: measured on the local cluster, 128 GETs took 0.7-0.9 s at 1, 4 or 8 in
# flight and 1.2-1.5 s at 16, with single GETs waiting up to 0.9 s.
MAX_CONCURRENT_GETS: Final = 8
# Of those, one namespace's: half, so whatever one namespace asks, another finds slots free.
NAMESPACE_CONCURRENT_GETS: Final = 4


class OverBudget(Exception):
    """``namespace`` has spent its budget of direct GETs: its admission is refused without one."""

    def __init__(self, namespace: str, budgets: Budgets) -> None:
        super().__init__(f"namespace {namespace} is over its budget of lookups")
        self.namespace = namespace
        self.budgets = budgets


@dataclass(slots=True)
class _Shared:
    """One GET in flight and how many admissions wait on it."""

    task: asyncio.Task[Obj | None]
    waiters: int = 0


class ClusterLookup:
    """Sync reads for the pipeline (the Lookup protocol, from the watch caches alone), and
    ``prefetch``, which returns the Lookup one admission uses: the caches plus its own misses."""

    def __init__(
        self,
        api: kr8s.asyncio.Api,
        *,
        max_concurrent_gets: int = MAX_CONCURRENT_GETS,
        namespace_concurrent_gets: int = NAMESPACE_CONCURRENT_GETS,
        budgets: Budgets | None = None,
        not_found: NotFound[Key] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.datasets = WatchCache(api, resources.DATASETS)
        self.runtimes = WatchCache(api, resources.CACHERUNTIMES)
        self.configmaps = WatchCache(
            api,
            resources.CONFIGMAPS,
            label_selector=f"{names.LABEL_APP_MANAGED_BY}={names.MANAGED_BY}",
            trim=_trim_configmap,
        )
        self.pvcs = WatchCache(api, resources.PERSISTENT_VOLUME_CLAIMS, trim=_trim_claim)
        self.storage_classes = WatchCache(api, resources.STORAGE_CLASSES)
        self.pvs = WatchCache(api, resources.PERSISTENT_VOLUMES, trim=_trim_pv)
        self.budgets = budgets or Budgets()
        self.not_found: NotFound[Key] = not_found or NotFound()
        self._clock = clock
        self._gets = asyncio.Semaphore(max_concurrent_gets)
        self._namespace_gets = namespace_concurrent_gets
        self._namespace_slots: dict[str, tuple[asyncio.Semaphore, int]] = {}  # namespace -> (slots, users)
        self._in_flight: dict[Key, _Shared] = {}
        self.datasets.add_handler(self._forget("Dataset"))
        self.configmaps.add_handler(self._forget("ConfigMap"))

    def caches(self) -> list[WatchCache]:
        return [self.datasets, self.runtimes, self.configmaps, self.pvcs, self.storage_classes, self.pvs]

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in self.caches())

    # -- the pipeline's Lookup protocol

    def dataset(self, namespace: str, name: str) -> Obj | None:
        return self.datasets.get(namespace, name)

    def configmap(self, namespace: str, name: str) -> Obj | None:
        return self.configmaps.get(namespace, name)

    def pvc(self, namespace: str, name: str) -> Obj | None:
        return self.pvcs.get(namespace, name)

    def storage_class(self, name: str) -> Obj | None:
        return self.storage_classes.get(None, name)

    def pv(self, name: str) -> Obj | None:
        return self.pvs.get(None, name)

    def runtime(self, namespace: str, name: str) -> Obj | None:
        return self.runtimes.get(namespace, name)

    # -- misses

    async def prefetch(self, namespace: str, datasets: list[str], deadline: float) -> Fetched:
        """One GET for each Dataset the caches lack, then one for the ConfigMap of each Dataset that
        exists and whose ConfigMap the caches lack (a missing Dataset is refused as such, so its
        ConfigMap is never asked for); none for a name answered 404 a moment ago, one shared by
        all admissions asking for a name at once; at most ``namespace_concurrent_gets`` of a
        namespace and ``max_concurrent_gets`` of all at a time, all within ``deadline`` seconds (else
        TimeoutError), and OverBudget when ``namespace`` has spent its budget. Returns the Lookup to
        admit with. In steady state nothing is missing and nothing is awaited: not even a timer is
        set."""
        fetched: dict[Key, Obj | None] = {}
        view = Fetched(self, fetched)
        missing = [ds for ds in datasets if self.datasets.get(namespace, ds) is None]
        if not missing and all(self._has_configmap(namespace, ds) for ds in datasets):
            return view
        async with asyncio.timeout(deadline):
            await self._fetch(fetched, "Dataset", namespace, missing)
            present = [ds for ds in datasets if view.dataset(namespace, ds) is not None]
            wanted = [
                names.runtime_config_configmap(ds) for ds in present if not self._has_configmap(namespace, ds)
            ]
            await self._fetch(fetched, "ConfigMap", namespace, wanted)
        return view

    def _has_configmap(self, namespace: str, dataset: str) -> bool:
        return self.configmaps.get(namespace, names.runtime_config_configmap(dataset)) is not None

    async def _fetch(
        self, into: dict[Key, Obj | None], kind: Kind, namespace: str, wanted: list[str]
    ) -> None:
        """What the API server has for ``wanted``: a name it answered 404 for a moment ago is not
        asked again, a name another admission is asking for is waited on, and the rest cost this
        namespace's budget (all or none: OverBudget)."""
        if not wanted:
            return
        now = self._clock()
        keys: list[Key] = []
        for name in wanted:
            key: Key = (kind, namespace, name)
            if self.not_found.known(key, now):
                into[key] = None
                metrics.NOT_FOUND_REMEMBERED.labels(kind).inc()
            else:
                keys.append(key)
        gets = {key: self._in_flight[key] for key in keys if key in self._in_flight}
        new = [key for key in keys if key not in gets]
        if not self.budgets.take(namespace, len(new), now):
            metrics.OVER_BUDGET.inc()
            raise OverBudget(namespace, self.budgets)
        for key in new:
            shared = gets[key] = self._in_flight[key] = _Shared(asyncio.create_task(self._get_once(key)))
            shared.task.add_done_callback(functools.partial(self._finished, key, shared))
        found = await asyncio.gather(*(self._wait(key, gets[key]) for key in keys))
        into.update(zip(keys, found, strict=True))

    async def _wait(self, key: Key, shared: _Shared) -> Obj | None:
        """The answer of the GET in flight for ``key``. The last admission to stop waiting (its
        deadline passed) cancels the GET: nobody is left to read it."""
        shared.waiters += 1
        try:
            return await asyncio.shield(shared.task)
        finally:
            shared.waiters -= 1
            if not shared.waiters and not shared.task.done():
                shared.task.cancel()
                self._done(key, shared)

    async def _get_once(self, key: Key) -> Obj | None:
        kind, namespace, name = key
        resource = resources.DATASETS if kind == "Dataset" else resources.CONFIGMAPS
        async with self._namespace_slot(namespace), self._gets:
            found = await self._get(resource, namespace, name)
        if found is None:
            self.not_found.add(key, self._clock())
        return found

    def _done(self, key: Key, shared: _Shared) -> None:
        if self._in_flight.get(key) is shared:
            del self._in_flight[key]

    def _finished(self, key: Key, shared: _Shared, _: asyncio.Task[Obj | None]) -> None:
        self._done(key, shared)

    @contextlib.asynccontextmanager
    async def _namespace_slot(self, namespace: str) -> AsyncIterator[None]:
        """One of ``namespace``'s GET slots (its semaphore lives while anyone holds or waits on it)."""
        slots, users = self._namespace_slots.get(namespace) or (asyncio.Semaphore(self._namespace_gets), 0)
        self._namespace_slots[namespace] = (slots, users + 1)
        try:
            async with slots:
                yield
        finally:
            slots, users = self._namespace_slots[namespace]
            if users == 1:
                del self._namespace_slots[namespace]
            else:
                self._namespace_slots[namespace] = (slots, users - 1)

    def _forget(self, kind: Kind) -> Callable[[EventType, Obj], None]:
        """A watch handler: a name the watch now holds was not found no longer. (Reads go to the
        watch caches first anyway; this keeps the names remembered to those still missing.)"""

        def forget(event: EventType, obj: Obj) -> None:
            if event != "DELETED":
                meta = obj.get("metadata") or {}
                self.not_found.forget((kind, meta.get("namespace", ""), meta.get("name", "")))

        return forget

    async def _get(self, resource: resources.Resource, namespace: str, name: str) -> Obj | None:
        metrics.API_REQUESTS.labels(resource.plural).inc()
        return await http.get(self.api, resource.object_path(namespace, name))


class Fetched:
    """The Lookup of one admission: the watch caches first, then what its own GETs found."""

    def __init__(self, caches: ClusterLookup, fetched: dict[Key, Obj | None]) -> None:
        self._caches = caches
        self._fetched = fetched

    def dataset(self, namespace: str, name: str) -> Obj | None:
        return self._caches.dataset(namespace, name) or self._fetched.get(("Dataset", namespace, name))

    def configmap(self, namespace: str, name: str) -> Obj | None:
        return self._caches.configmap(namespace, name) or self._fetched.get(("ConfigMap", namespace, name))

    def pvc(self, namespace: str, name: str) -> Obj | None:
        return self._caches.pvc(namespace, name)

    def storage_class(self, name: str) -> Obj | None:
        return self._caches.storage_class(name)

    def pv(self, name: str) -> Obj | None:
        return self._caches.pv(name)

    def runtime(self, namespace: str, name: str) -> Obj | None:
        return self._caches.runtime(namespace, name)


def _keep(obj: Obj, section: str, keys: tuple[str, ...]) -> None:
    held = obj.get(section)
    if isinstance(held, dict):
        obj[section] = {key: held[key] for key in keys if key in held}


def _trim_claim(pvc: Obj) -> None:
    """What admission reads of a claim: its name and labels (a Dataset's claim), class and volume."""
    _keep(pvc, "metadata", ("name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp"))
    _keep(pvc, "spec", ("storageClassName", "volumeName"))
    pvc.pop("status", None)


def _trim_configmap(configmap: Obj) -> None:
    """What admission reads of a runtime config ConfigMap: which keys it has (runtime.sh, and
    runtime-scoped.sh), never their values, which are most of its bytes."""
    _keep(configmap, "metadata", ("name", "namespace", "uid", "resourceVersion", "labels"))
    for section in ("data", "binaryData"):
        held = configmap.get(section)
        if isinstance(held, dict):
            configmap[section] = dict.fromkeys(held, "")


def _trim_pv(pv: Obj) -> None:
    """What admission reads of a PV: its CSI driver."""
    _keep(pv, "metadata", ("name", "uid", "resourceVersion"))
    spec = pv.get("spec")
    csi = spec.get("csi") if isinstance(spec, dict) else None
    pv["spec"] = {"csi": {"driver": csi.get("driver")}} if isinstance(csi, dict) else {}
    pv.pop("status", None)
