"""The controller's room for cache nodes: the nodes where a runtime's workers run carry upstream's
cache-node labels, and lose them when the workers leave the node or the runtime goes
(``controller/cachelabels.py`` decides which; this module watches and writes).

What it watches, and why that way: the worker pods alone, by one label-selected watch
(``names.WORKER_POD_SELECTOR``), trimmed to what placement reads. A pod's ``nodeName`` is the
fact that changes (a worker scheduled, moved, scaled away), and its watch event is the earliest and
cheapest sign of it; the StatefulSet's status counts pods but names no node, so it would need a pods
list on every change anyway. Which nodes carry a runtime's label is asked of the API server when the
runtime's workers change (a list by that label, as upstream does and as ``fuselabels.py`` does),
not held in a watch of every Node's labels.

Every replica holds the pod cache; only the leader writes. A key is a runtime's (namespace, name);
it is settled when one of its worker pods changes, when the runtime does (a runtime being deleted
wants no node), and each runtime's and each Dataset's once when a replica comes to lead.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kr8s.asyncio

from controller import cachelabels, metrics
from controller.workqueue import WorkQueue, drain
from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import NODES, PODS
from kubectl_fluid.kube.watchcache import EventType, WatchCache

log = logging.getLogger(__name__)

Key = tuple[str, str]
# A node changed between its read and its patch (another runtime counted it): read and work it out
# again, this many times before the key goes back to the queue's backoff.
_CONFLICT_RETRIES = 5


def trim_worker_pod(pod: dict[str, Any]) -> None:
    """Keep, in place, what placement reads: name, namespace, the runtime and placement labels,
    deletionTimestamp, nodeName and phase."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    kept = {
        k: labels[k] for k in (names.LABEL_CACHERUNTIME_NAME, names.LABEL_DATASET_PLACEMENT) if k in labels
    }
    pod["metadata"] = {
        **{k: meta[k] for k in ("name", "namespace", "resourceVersion", "deletionTimestamp") if k in meta},
        "labels": kept,
    }
    node = (pod.get("spec") or {}).get("nodeName")
    pod["spec"] = {"nodeName": node} if node else {}
    phase = (pod.get("status") or {}).get("phase")
    pod["status"] = {"phase": phase} if phase else {}


def _failed(key: Key, delay: float, error: Exception) -> None:
    log.warning("%s/%s: labelling its cache nodes failed; retrying in %.2fs: %s", *key, delay, error)


def runtime_of(pod: dict[str, Any]) -> Key | None:
    meta = pod.get("metadata") or {}
    runtime = (meta.get("labels") or {}).get(names.LABEL_CACHERUNTIME_NAME)
    return (meta.get("namespace", ""), runtime) if runtime else None


class CacheNodes:
    def __init__(
        self, api: kr8s.asyncio.Api, runtimes: WatchCache, datasets: WatchCache, namespace: str | None = None
    ) -> None:
        self.api = api
        self.runtimes = runtimes
        self.datasets = datasets
        self.pods = WatchCache(
            api, PODS, namespace=namespace, label_selector=names.WORKER_POD_SELECTOR, trim=trim_worker_pod
        )
        self.queue: WorkQueue[Key] = WorkQueue()
        self._placed: dict[tuple[str, str], tuple[Any, ...]] = {}  # each pod's placement as last seen
        self.pods.add_handler(self._pod_changed)
        runtimes.add_handler(self._runtime_changed)

    def caches(self) -> list[WatchCache]:
        return [self.pods]

    # ------------------------------------------------------------------ handlers (every replica)

    def _pod_changed(self, event: EventType, pod: dict[str, Any]) -> None:
        key = runtime_of(pod)
        if key is None:
            return
        meta = pod["metadata"]
        ident = (meta.get("namespace", ""), meta["name"])
        placed = (
            (pod.get("spec") or {}).get("nodeName"),
            bool(meta.get("deletionTimestamp")),
            (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"),
        )
        if event == "DELETED":
            self._placed.pop(ident, None)
        elif self._placed.get(ident) == placed:
            return  # a readiness or status change: not where it runs
        else:
            self._placed[ident] = placed
        self.queue.add(key)

    def _runtime_changed(self, _: EventType, runtime: dict[str, Any]) -> None:
        meta = runtime["metadata"]
        self.queue.add((meta["namespace"], meta["name"]))

    # ------------------------------------------------------------------ the leader's work

    async def lead(self) -> None:
        """Settle every runtime once, then each as its workers change; until cancelled. Every Dataset's
        key too: a runtime deleted while no replica led leaves its Dataset (held by its finalizer), and
        the Dataset's key is the runtime's, so its nodes are unlabelled now."""
        caches = (self.pods, self.runtimes, self.datasets)
        while not all(c.synced.is_set() for c in caches):
            await asyncio.sleep(0.05)
        pods = (k for p in self.pods.items() if (k := runtime_of(p)))
        for key in {*self.runtimes.keys(), *self.datasets.keys(), *pods}:
            self.queue.add(key)
        await drain(self.queue, self.settle, _failed)

    def workers(self, key: Key) -> list[dict[str, Any]]:
        return [p for p in self.pods.items(key[0]) if runtime_of(p) == key]

    async def settle(self, key: Key) -> None:
        namespace, name = key
        runtime = self.runtimes.get(namespace, name)
        pods = self.workers(key)
        wanted = set()
        if runtime is not None and not runtime["metadata"].get("deletionTimestamp"):
            wanted = cachelabels.worker_nodes(pods)
        selector = names.cache_runtime_node_label(namespace, name)  # a key alone: the label exists
        listed = await http.request(
            self.api, "GET", NODES.collection_path(None), params={"labelSelector": selector}
        )
        labelled = [n["metadata"]["name"] for n in (listed or {}).get("items") or ()]
        to_label, to_unlabel = cachelabels.plan(wanted, labelled)
        exclusive = cachelabels.is_exclusive(pods)
        for node in to_label:
            await self._change(
                node, lambda n, labels: cachelabels.label(n, labels, namespace, name, exclusive)
            )
            log.info("node %s caches %s/%s: labelled", node, namespace, name)
        for node in to_unlabel:
            await self._change(node, lambda n, labels: cachelabels.unlabel(n, labels, namespace, name))
            log.info("node %s no longer caches %s/%s: unlabelled", node, namespace, name)

    async def _change(self, node: str, decide: Any) -> None:
        """Read the node, work out the change, patch it guarded by its resourceVersion; again on a
        conflict. A node gone needs nothing."""
        for _ in range(_CONFLICT_RETRIES):
            current = await http.get(self.api, NODES.object_path(None, node))
            if current is None:
                return
            change = decide(node, current["metadata"].get("labels") or {})
            if change is None:
                return
            try:
                await http.request(
                    self.api,
                    "PATCH",
                    NODES.object_path(None, node),
                    body=change.merge_patch(current["metadata"]["resourceVersion"]),
                    content_type=http.MERGE_PATCH,
                )
            except http.ApiError as e:
                if e.code == 409:
                    continue
                if e.code == 404:
                    return
                raise
            metrics.WRITES.labels("patch", "nodes").inc()
            return
        raise RuntimeError(f"node {node} kept changing under {_CONFLICT_RETRIES} patches")
