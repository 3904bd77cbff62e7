"""The webhook's view of the cluster: watch caches of Datasets, CacheRuntimes, runtime-config
ConfigMaps and Fluid PVCs, so that an admission makes no API round trip in steady state.

Cache misses for Datasets and ConfigMaps fall back to one direct GET each: a Dataset created just
before its first pod can reach us through the API before it reaches us through the watch. PVCs are
cached only when they carry ``fluid.io/dataset-id`` (all Fluid PVCs do, from the moment the
controller creates them); a PVC missing from that cache is not a Fluid PVC, with no GET.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kr8s.asyncio

from kubectl_fluid.api import names
from kubectl_fluid.kube import http, resources
from kubectl_fluid.kube.watchcache import WatchCache
from webhook import metrics

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class ClusterLookup:
    """Sync reads for the pipeline (the Lookup protocol), async ``prefetch`` before it runs."""

    def __init__(self, api: kr8s.asyncio.Api) -> None:
        self.api = api
        self.datasets = WatchCache(api, resources.DATASETS)
        self.runtimes = WatchCache(api, resources.CACHERUNTIMES)
        self.configmaps = WatchCache(
            api, resources.CONFIGMAPS, label_selector=f"{names.LABEL_APP_MANAGED_BY}={names.MANAGED_BY}"
        )
        self.pvcs = WatchCache(api, resources.PERSISTENT_VOLUME_CLAIMS, label_selector=names.LABEL_DATASET_ID)
        # Objects fetched on a miss, for the admission that asked; dropped when the watch has them.
        self._fetched: dict[tuple[str, str, str], Obj | None] = {}

    def caches(self) -> list[WatchCache]:
        return [self.datasets, self.runtimes, self.configmaps, self.pvcs]

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in self.caches())

    # -- the pipeline's Lookup protocol

    def dataset(self, namespace: str, name: str) -> Obj | None:
        return self.datasets.get(namespace, name) or self._fetched.get(("Dataset", namespace, name))

    def configmap(self, namespace: str, name: str) -> Obj | None:
        return self.configmaps.get(namespace, name) or self._fetched.get(("ConfigMap", namespace, name))

    def pvc(self, namespace: str, name: str) -> Obj | None:
        return self.pvcs.get(namespace, name)

    # -- misses

    async def prefetch(self, namespace: str, datasets: list[str]) -> None:
        """One GET for each Dataset (and its ConfigMap) the caches lack, concurrently."""
        wanted: list[tuple[str, resources.Resource, str]] = []
        for ds in datasets:
            if self.datasets.get(namespace, ds) is None:
                wanted.append(("Dataset", resources.DATASETS, ds))
            cm = names.runtime_config_configmap(ds)
            if self.configmaps.get(namespace, cm) is None:
                wanted.append(("ConfigMap", resources.CONFIGMAPS, cm))
        if not wanted:
            return
        found = await asyncio.gather(*(self._get(r, namespace, n) for _, r, n in wanted))
        for (kind, _, name), obj in zip(wanted, found, strict=True):
            self._fetched[(kind, namespace, name)] = obj
        if len(self._fetched) > 1024:  # only ever a handful: new objects the watch has not delivered
            self._fetched.clear()

    async def _get(self, resource: resources.Resource, namespace: str, name: str) -> Obj | None:
        metrics.API_REQUESTS.labels(resource.plural).inc()
        return await http.get(self.api, resource.object_path(namespace, name))
