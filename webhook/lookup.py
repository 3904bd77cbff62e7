"""What the pure core reads from the cluster, behind a Protocol the server satisfies from its watch
caches. The methods are synchronous on purpose: an admission must not wait on the API server in steady
state, so the core only ever asks an in-memory cache. ``RecordingLookup`` lets the server find the
misses (objects created just before the pod, not yet seen by the watch), fetch them with one direct GET
each, and run the core again."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

Kind = Literal["dataset", "configmap", "pvc"]
# The cluster-scoped kinds the core reads (never fetched on a miss: see ``storage_class``).
ClusterKind = Literal["storageclass", "pv"]
# Read from the watch cache only, like the cluster-scoped kinds: a runtime exists long before a pod
# mounts its Dataset's PVC (RequireNodeWithFuse reads its client's nodeSelector).
CachedKind = Literal["cacheruntime"]
# The ``kind`` field of each object StaticLookup indexes, by the Lookup method that returns it.
_KINDS: Mapping[str, Kind | ClusterKind | CachedKind] = {
    "Dataset": "dataset",
    "ConfigMap": "configmap",
    "PersistentVolumeClaim": "pvc",
    "StorageClass": "storageclass",
    "PersistentVolume": "pv",
    "CacheRuntime": "cacheruntime",
}


class Lookup(Protocol):
    """Objects of one namespace by name, as Kubernetes JSON dicts; None when absent. Callers must
    treat the returned dicts as read-only: they are the cache's own objects."""

    def dataset(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def pvc(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    # Cluster-scoped, from the watch caches only: a claim's class and volume exist before the claim is
    # bound and long before a pod mounts it, so a miss means "not known", never a GET.
    def storage_class(self, name: str) -> dict[str, Any] | None: ...

    def pv(self, name: str) -> dict[str, Any] | None: ...

    def runtime(self, namespace: str, name: str) -> dict[str, Any] | None: ...


class StaticLookup:
    """A dict-backed Lookup for tests and benches: objects are indexed by kind, namespace and name."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self._objects: dict[tuple[Kind | ClusterKind | CachedKind, str, str], dict[str, Any]] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any]) -> None:
        kind = _KINDS.get(obj.get("kind", ""))
        if kind is None:
            raise ValueError(f"StaticLookup holds {', '.join(_KINDS)}, not {obj.get('kind')!r}")
        meta = obj["metadata"]
        self._objects[kind, meta.get("namespace", ""), meta["name"]] = dict(obj)

    def dataset(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(("dataset", namespace, name))

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(("configmap", namespace, name))

    def pvc(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(("pvc", namespace, name))

    def storage_class(self, name: str) -> dict[str, Any] | None:
        return self._objects.get(("storageclass", "", name))

    def pv(self, name: str) -> dict[str, Any] | None:
        return self._objects.get(("pv", "", name))

    def runtime(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(("cacheruntime", namespace, name))


class RecordingLookup:
    """Wraps a Lookup and records every miss as (kind, namespace, name), in order, once each.

    The server's cache can only answer from memory inside the synchronous core; after ``admit`` it
    fetches ``misses`` directly and, if any exist now, admits again. Repeat while new misses appear:
    a PVC found on the second pass can name a dataset the first pass never asked about."""

    def __init__(self, inner: Lookup) -> None:
        self.inner = inner
        self.misses: list[tuple[Kind, str, str]] = []

    def _seen(self, kind: Kind, namespace: str, name: str, found: dict[str, Any] | None) -> None:
        key = (kind, namespace, name)
        if found is None and key not in self.misses:
            self.misses.append(key)

    def dataset(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.inner.dataset(namespace, name)
        self._seen("dataset", namespace, name, found)
        return found

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.inner.configmap(namespace, name)
        self._seen("configmap", namespace, name, found)
        return found

    def pvc(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.inner.pvc(namespace, name)
        self._seen("pvc", namespace, name, found)
        return found

    def storage_class(self, name: str) -> dict[str, Any] | None:
        return self.inner.storage_class(name)

    def pv(self, name: str) -> dict[str, Any] | None:
        return self.inner.pv(name)

    def runtime(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.inner.runtime(namespace, name)
