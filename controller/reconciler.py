"""One reconcile pass for one (namespace, name): a Dataset and the CacheRuntime of the same name.

Reads come from the watch caches; writes happen only where the cluster differs from the desired
state (``compare.contains``), so a steady cluster sees no writes at all. Children are written with
server-side apply (one call creates or updates, and the API server merges its defaults); status goes
to the status subresource. Problems a person must fix become a condition and an Event, not a crash
loop: the key waits for the next change of its inputs, or retries with backoff where we do not watch
the input (Secrets).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import kr8s.asyncio
from pydantic import ValidationError

from controller import finalizers, metrics
from controller.classguard import deleting_class_message
from controller.compare import contains, merge_patch
from controller.conditions import same_status, set_condition
from controller.desired import Children, desired_children
from controller.desired.status import component_status, components_waiting, not_running
from controller.desired.storage import kept_volume_source, pv_conflict, pv_holder
from controller.events import Recorder
from controller.inuse import ClassIndex, dataset_in_use_message, dataset_users, pvc_users, shown
from controller.teardown import CLIENT_GONE_RECHECK, IN_USE_RECHECK, Teardown
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.kube import http, resources
from kubectl_fluid.kube.resources import CACHERUNTIMES, DATASETS, Resource
from kubectl_fluid.kube.watchcache import WatchCache
from kubectl_fluid.runtimeconfig import RuntimeConfigError

log = logging.getLogger(__name__)

Key = tuple[str, str]

MISSING_SECRET_RECHECK = 10.0
# A PV name held by a PV we do not watch (one without our labels) is looked at again this often.
NAME_CONFLICT_RECHECK = 30.0
# How the API server refuses a change of a workload's immutable fields (serviceName, selector...).
_IMMUTABLE = ("Forbidden: updates to", "field is immutable")
# The API server's 500 for an object it cannot decode (a resource quantity it cannot read, say): as
# final as a 422, and a person's to fix; retried, it only fills the log.
_UNDECODABLE = ("unable to convert unstructured object", "failed to convert new object")


@dataclass
class Caches:
    datasets: WatchCache
    runtimes: WatchCache
    classes: WatchCache
    configmaps: WatchCache
    services: WatchCache
    statefulsets: WatchCache
    daemonsets: WatchCache
    pvcs: WatchCache
    pvs: WatchCache

    def all(self) -> list[WatchCache]:
        return list(vars(self).values())

    def for_kind(self, kind: str) -> WatchCache:
        return {
            "ConfigMap": self.configmaps,
            "Service": self.services,
            "StatefulSet": self.statefulsets,
            "DaemonSet": self.daemonsets,
            "PersistentVolumeClaim": self.pvcs,
            "PersistentVolume": self.pvs,
        }[kind]


RESOURCE_OF_KIND = {
    "ConfigMap": resources.CONFIGMAPS,
    "Service": resources.SERVICES,
    "StatefulSet": resources.STATEFULSETS,
    "DaemonSet": resources.DAEMONSETS,
    "PersistentVolumeClaim": resources.PERSISTENT_VOLUME_CLAIMS,
    "PersistentVolume": resources.PERSISTENT_VOLUMES,
}


class Problem(Exception):
    """Something a person must fix: becomes a condition and an Event. ``retry_after`` is set when
    the fix would not reach us through a watch."""

    def __init__(self, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry_after = retry_after


@dataclass
class Result:
    requeue_after: float | None = None


class Reconciler:
    """``requests`` bounds the API calls in flight across every key: a key's writes go out together
    when slots are free, and a queue of many keys never sends more at once than that (the API server
    queues one client's requests behind each other, the leader Lease's renewal among them)."""

    def __init__(
        self,
        api: kr8s.asyncio.Api,
        caches: Caches,
        recorder: Recorder,
        requests: int = 8,
        class_index: ClassIndex | None = None,
    ) -> None:
        self.api = api
        self.caches = caches
        self.recorder = recorder
        self.class_index = class_index or ClassIndex()
        self._slots = asyncio.Semaphore(requests)
        self.teardown = Teardown(self.request, caches.daemonsets, self._delete, recorder)

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """An API call within the bound on calls in flight (``requests``)."""
        async with self._slots:
            return await http.request(self.api, method, path, **kwargs)

    async def _get(self, path: str) -> dict[str, Any] | None:
        async with self._slots:
            return await http.get(self.api, path)

    async def reconcile(self, key: Key) -> Result:
        try:
            return await self._reconcile(key)
        except http.ApiError as e:
            if e.code == 403 and "being terminated" in e.message:
                # The namespace is going away with everything in it; nothing to converge to.
                log.debug("namespace terminating: %s", e.message)
                return Result()
            raise

    async def _reconcile(self, key: Key) -> Result:
        namespace, name = key
        rt_obj = self.caches.runtimes.get(namespace, name)
        if rt_obj is not None and rt_obj["metadata"].get("deletionTimestamp"):
            # A runtime's own teardown comes first: a Dataset being deleted waits on the same users.
            recheck = await self.teardown.release_runtime(rt_obj, await self._pods(namespace))
            if recheck is not None:
                return Result(recheck)
        return await self._converge(namespace, name, self.caches.datasets.get(namespace, name), rt_obj)

    async def _converge(
        self, namespace: str, name: str, ds_obj: dict[str, Any] | None, rt_obj: dict[str, Any] | None
    ) -> Result:
        if ds_obj is not None and ds_obj["metadata"].get("deletionTimestamp"):
            return await self._delete_dataset(ds_obj, rt_obj)
        if ds_obj is None:
            await self._cleanup_orphan_pv(namespace, name)
            if rt_obj is None or rt_obj["metadata"].get("deletionTimestamp"):
                await self.teardown.remove_fuse_labels(namespace, name)
            if rt_obj is not None:
                await self._runtime_problem(
                    rt_obj,
                    Problem(
                        "DatasetNotFound",
                        f"CacheRuntime {namespace}/{name} serves the Dataset of the same name, and there "
                        f'is no Dataset "{name}" in namespace "{namespace}": create it '
                        f"(kind: Dataset, name: {name})",
                    ),
                )
            return Result()
        finalized = finalizers.has(ds_obj, names.DATASET_FINALIZER)
        if rt_obj is None or rt_obj["metadata"].get("deletionTimestamp"):
            await self.teardown.remove_fuse_labels(namespace, name)
            if not finalized:
                ds_obj = await self._add_finalizer(ds_obj)
            if rt_obj is not None:
                return Result()  # its children go with it; re-creating them would fight the collector
            await self._dataset_status(
                ds_obj,
                "NotBound",
                [],
                ready=False,
                reason="NoRuntime",
                message=f'no CacheRuntime "{name}" in namespace "{namespace}": create one with the same '
                "name as the Dataset and a spec.runtimeClassName",
            )
            return Result()
        try:
            children, runtime = await self._desired(ds_obj, rt_obj)
            ds_obj = await self._apply_children(ds_obj, rt_obj, children)
        except Problem as problem:
            ds_obj = self.caches.datasets.get(namespace, name) or ds_obj  # as the finalizer left it
            if not finalizers.has(ds_obj, names.DATASET_FINALIZER):
                ds_obj = await self._add_finalizer(ds_obj)
            await together(
                self._runtime_problem(rt_obj, problem),
                self._dataset_status(
                    ds_obj, "NotBound", [], ready=False, reason=problem.reason, message=problem.message
                ),
            )
            return Result(problem.retry_after)
        kind = "no client (clientless)" if children.daemonset is None else "a client DaemonSet"
        reason, message = (
            "Reconciled",
            f"runtime config ConfigMap {children.configmap['metadata']['name']}, "
            f"{len(children.statefulsets)} StatefulSet(s), {kind}, "
            f"PV {children.pv['metadata']['name']} and PVC {children.pvc['metadata']['name']} "
            "are up to date",
        )
        components = self._component_statuses(children)
        waiting = components_waiting(components)
        if waiting is not None:
            # In place but not serving yet: the workloads' status changes queue the key again.
            reason, message = (
                "ComponentsNotReady",
                f"waiting for pods: {waiting} (kubectl get pods -l {names.LABEL_CACHERUNTIME_NAME}={name} "
                f"-n {namespace} says why)",
            )
        # The children stay as the class made them, but the runtime is not well: its class is going.
        going = deleting_class_message(self.caches.classes, self.class_index, runtime.spec.runtime_class_name)
        if going is not None:
            reason, message = "RuntimeClassDeleting", going
            await self.recorder.event(rt_obj, "Warning", reason, message)
        runtime_status = self._runtime_status(
            rt_obj,
            ready=waiting is None and going is None,
            reason=reason,
            message=message,
            components=components,
            applied=True,
        )
        entry: dict[str, Any] = {
            "name": runtime.metadata.name,
            "namespace": namespace,
            "category": names.RUNTIME_CATEGORY,
            "type": names.RUNTIME_TYPE_CACHE,
        }
        scope = children.scope
        masters = scope.spec("master").replica_count() if scope.enabled("master") else None
        if masters:
            entry["masterReplicas"] = masters
        dataset_status = self._dataset_status(
            ds_obj,
            "Bound",
            [entry],
            ready=True,
            reason="DatasetReady",
            message=f"bound to CacheRuntime {name}: its runtime config, workloads, PV and PVC are in place",
        )
        await together(runtime_status, dataset_status)
        return Result()

    # ------------------------------------------------------------------ desired state

    async def _desired(self, ds_obj: dict[str, Any], rt_obj: dict[str, Any]) -> tuple[Children, CacheRuntime]:
        namespace, name = rt_obj["metadata"]["namespace"], rt_obj["metadata"]["name"]
        error = names.dataset_name_error(name)
        if error:
            raise Problem("InvalidName", error)
        try:
            dataset = Dataset.model_validate(ds_obj)
            runtime = CacheRuntime.model_validate(rt_obj)
        except ValidationError as e:
            raise Problem("InvalidSpec", f"cannot read the spec: {_first_error(e)}") from e
        class_name = runtime.spec.runtime_class_name
        class_obj = self.caches.classes.get(None, class_name)
        if class_obj is None:
            known = sorted(o["metadata"]["name"] for o in self.caches.classes.items())
            hint = f"one of: {', '.join(known)}" if known else "none exist yet: apply one first"
            raise Problem(
                "RuntimeClassNotFound",
                f'CacheRuntimeClass "{class_name}" not found: set spec.runtimeClassName to an '
                f"existing class ({hint})",
            )
        try:
            runtime_class = CacheRuntimeClass.model_validate(class_obj)
        except ValidationError as e:
            raise Problem(
                "InvalidRuntimeClass", f'CacheRuntimeClass "{class_name}": {_first_error(e)}'
            ) from e
        try:
            children = desired_children(dataset, runtime, runtime_class, namespace)
        except RuntimeConfigError as e:
            raise Problem(e.reason, str(e)) from e
        await self._check_secrets(children)
        return children, runtime

    async def _check_secrets(self, children: Children) -> None:
        """Every Secret a component pod mounts exists and has the keys encryptOptions name."""
        dataset, namespace = children.scope.dataset, children.scope.namespace
        for secret, keys in children.secret_keys().items():
            # Direct GETs: watching Secrets would mean reading every Secret of the cluster.
            found = await self._get(resources.SECRETS.object_path(namespace, secret))
            if found is None:
                raise Problem(
                    "SecretNotFound",
                    f'encryptOptions of Dataset "{dataset.metadata.name}" refer to Secret "{secret}" in '
                    f'namespace "{namespace}", which does not exist: create it with key(s) '
                    f"{', '.join(keys)}",
                    retry_after=MISSING_SECRET_RECHECK,
                )
            missing = [k for k in keys if k not in (found.get("data") or {})]
            if missing:
                raise Problem(
                    "SecretKeyNotFound",
                    f'Secret "{secret}" in namespace "{namespace}" lacks key(s) {", ".join(missing)} '
                    "that encryptOptions refer to",
                    retry_after=MISSING_SECRET_RECHECK,
                )

    # ------------------------------------------------------------------ children

    async def _apply_children(
        self, ds_obj: dict[str, Any], rt_obj: dict[str, Any], children: Children
    ) -> dict[str, Any]:
        """Children are written concurrently, in two waves: what pods mount or resolve (ConfigMaps,
        Services) and the Dataset's finalizer first; then the workloads and the storage, the PV
        (cluster-scoped: no owner reference collects it) only once the finalizer that removes it is
        on. Returns the Dataset as the finalizer left it."""
        uid = rt_obj["metadata"]["uid"]
        manager = names.shared_field_manager(children.scope.namespace, children.scope.name)
        finalizing = not finalizers.has(ds_obj, names.DATASET_FINALIZER)
        first: list[Awaitable[Any]] = [self._add_finalizer(ds_obj)] if finalizing else []
        if children.daemonset is not None and not finalizers.has(rt_obj, names.RUNTIME_FINALIZER):
            first.append(self._guard_runtime(rt_obj))
        # The second wave's objects only: its coroutines are made once the first has gone well (made
        # before, a first wave that raised would leave them never awaited).
        second: list[dict[str, Any]] = []
        for obj in children.namespaced():
            if any(obj is shared for shared in children.extra_configmaps):
                first.append(self._ensure_shared(obj, uid, manager))
            elif obj["kind"] in ("ConfigMap", "Service"):
                first.append(self._ensure(obj, uid))
            elif obj is not children.pvc:
                second.append(obj)
        done = await together(*first)
        workloads: list[Awaitable[Any]] = [self._ensure(obj, uid) for obj in second]
        if finalizing:
            ds_obj = done[0]
        wanted = {(o["kind"], o["metadata"]["name"]) for o in children.namespaced()}
        namespace = rt_obj["metadata"]["namespace"]
        # Components the runtime no longer has (client disabled, a component gone from the class).
        for kind in ("StatefulSet", "Service", "DaemonSet", "ConfigMap"):
            for actual in self.caches.for_kind(kind).owned_by(uid):
                meta = actual["metadata"]
                if (kind, meta["name"]) in wanted or meta.get("namespace") != namespace:
                    continue
                if any(ref.get("uid") != uid for ref in meta.get("ownerReferences", [])):
                    workloads.append(self._release(actual, manager))  # others still use it
                else:
                    workloads.append(self._delete(RESOURCE_OF_KIND[kind], actual))
        await together(*workloads, self._ensure_storage(children, uid))
        return ds_obj

    async def _ensure_storage(self, children: Children, owner_uid: str) -> None:
        """PV and PVC, once the PV by that name is known to be this Dataset's or absent (read just
        before, so that a PV another Dataset's key has just made is never applied over): then both
        at once, since the claim names the PV and the binder waits for whichever comes second."""
        pv = await self._read_pv(children.pv["metadata"]["name"])
        if pv is not None:
            self._check_pv_owner(pv, children.pv)
        try:
            await together(
                # A PV made before SPEC §7 (master-addrs) keeps its immutable source.
                self._ensure(kept_volume_source(children.pv, pv), owner_uid, pv),
                self._ensure(children.pvc, owner_uid),
            )
        except Problem as problem:
            if problem.reason != "InvalidPersistentVolume":
                raise
            await self._replace_storage(children, owner_uid, problem)

    async def _replace_storage(self, children: Children, owner_uid: str, problem: Problem) -> None:
        """A PV's volume source is immutable, yet it changes when a runtime gains or loses its client
        (clientless vs FUSE attributes). PV and PVC are re-created, but never under a running pod, and
        never another Dataset's: both are read afresh and checked before anything is deleted."""
        pvc = children.pvc["metadata"]
        pv_name = children.pv["metadata"]["name"]
        pv = await self._read_pv(pv_name)
        if pv is not None:
            self._check_pv_owner(pv, children.pv)
        # Only the PVC's users: a pod with the runtime config injected does not mount the PV.
        users = pvc_users(await self._pods(pvc["namespace"]), pvc["name"])
        if users:
            raise Problem(
                "StorageInUse",
                f"PV {pv_name} must be re-created (its CSI attributes changed), "
                f"but pod(s) {shown(users)} use PVC {pvc['name']}: delete them and the controller "
                "re-creates PV and PVC",
            ) from None
        claim = self.caches.pvcs.get(pvc["namespace"], pvc["name"])
        if claim is not None and _owned_by(claim, owner_uid):
            await self._delete(resources.PERSISTENT_VOLUME_CLAIMS, claim)
        if pv is not None:
            await self._delete(resources.PERSISTENT_VOLUMES, pv)
        # Until both are gone (their protection finalizers go when unbound), say so and look again.
        raise Problem(
            "RecreatingStorage",
            f"re-creating PV {pv_name} and PVC {pvc['name']}: {problem.message[:200]}",
            retry_after=1.0,
        )

    async def _read_pv(self, name: str) -> dict[str, Any] | None:
        """The PV from the cache or, on a miss, from the API server: the cache holds only PVs with our
        labels, and a PV just made by another Dataset's key may not have reached it yet."""
        cached = self.caches.pvs.get(None, name)
        if cached is not None:
            return cached
        return await self._get(resources.PERSISTENT_VOLUMES.object_path(None, name))

    def _check_pv_owner(self, actual: dict[str, Any], desired: dict[str, Any]) -> None:
        """Raise NameConflict unless the existing PV is the one this Dataset made (``pv_conflict``)."""
        ours = pv_holder(desired)
        assert ours is not None, "desired PVs carry their Dataset's labels"
        conflict = pv_conflict(actual, *ours)
        if conflict is None:
            return
        holder = pv_holder(actual)
        if holder is not None and holder != ours:
            advice = (
                " (a Dataset's PV is named {namespace}-{name}, the same for both Datasets): rename this "
                "Dataset or delete the other"
            )
        else:
            advice = ": delete or rename that PersistentVolume"
        watched = (actual["metadata"].get("labels") or {}).get(names.LABEL_APP_MANAGED_BY) == names.MANAGED_BY
        raise Problem(
            "NameConflict",
            f"PersistentVolume {desired['metadata']['name']} {conflict}{advice}, and this Dataset "
            "takes the name as soon as it is free",
            # Our PVs' deletion re-queues the Datasets waiting on the name; others we must poll.
            retry_after=None if watched else NAME_CONFLICT_RECHECK,
        )

    async def _ensure(
        self, desired: dict[str, Any], owner_uid: str, pv: dict[str, Any] | None = None
    ) -> None:
        """Apply ``desired`` unless the cluster has it already. A PV comes read (``pv``, None when
        absent) and checked for its owner by the caller; the others from the watch caches."""
        kind = desired["kind"]
        meta = desired["metadata"]
        namespace = meta.get("namespace")
        actual = pv if kind == "PersistentVolume" else self.caches.for_kind(kind).get(namespace, meta["name"])
        if actual is not None:
            if kind != "PersistentVolume" and not _owned_by(actual, owner_uid):
                raise Problem(
                    "NameConflict",
                    f"{kind} {namespace}/{meta['name']} exists and does not belong to this CacheRuntime: "
                    "delete or rename it",
                )
            if contains(actual, desired):
                return
        await self._apply(desired, names.CONTROLLER_FIELD_MANAGER, actual is None)

    async def _apply(self, desired: dict[str, Any], manager: str, new: bool) -> None:
        kind, meta = desired["kind"], desired["metadata"]
        namespace = meta.get("namespace")
        resource = RESOURCE_OF_KIND[kind]
        try:
            applied = await self.request(
                "PATCH",
                resource.object_path(namespace, meta["name"]),
                params={"fieldManager": manager, "force": "true"},
                body=json.dumps(desired),
                content_type=http.APPLY_PATCH,
            )
        except http.ApiError as e:
            if e.code == 422 or (e.code == 500 and any(w in e.message for w in _UNDECODABLE)):
                message = f"{kind} {meta['name']} was refused: {e.message}"
                if kind in ("StatefulSet", "DaemonSet") and any(w in e.message for w in _IMMUTABLE):
                    # A class that gains or loses a Service changes serviceName, which a StatefulSet
                    # cannot change; re-creating it is the user's call (it restarts the cache).
                    message += (
                        f"; these fields cannot change: delete {kind} {namespace}/{meta['name']} and the "
                        "controller re-creates it (--cascade=orphan keeps its pods until then)"
                    )
                raise Problem("Invalid" + kind, message) from e
            raise
        metrics.WRITES.labels("apply", resource.plural).inc()
        # An object several runtimes share (its own field manager each): the others' keys hear of it.
        self.caches.for_kind(kind).observe(applied, announce=manager != names.CONTROLLER_FIELD_MANAGER)
        log.info("applied %s %s", kind, meta["name"], extra={"namespace": namespace, "new": new})

    async def _ensure_shared(self, desired: dict[str, Any], owner_uid: str, manager: str) -> None:
        """A ConfigMap several runtimes of one class share (its extraResources): ours to write when
        the controller made it for this class, never another's. Each runtime applies it with its own
        field manager, so its ownerReference is its own entry among the others'."""
        meta = desired["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        # The cache holds only ConfigMaps with our labels: a miss may be someone else's ConfigMap.
        actual = self.caches.configmaps.get(namespace, name) or await self._get(
            resources.CONFIGMAPS.object_path(namespace, name)
        )
        if actual is not None:
            labels = actual["metadata"].get("labels") or {}
            wanted_class = meta["labels"][names.LABEL_RUNTIME_CLASS]
            if labels.get(names.LABEL_APP_MANAGED_BY) != names.MANAGED_BY:
                holder = f"is not managed by {names.MANAGED_BY}"
            elif labels.get(names.LABEL_RUNTIME_CLASS) != wanted_class:
                holder = f'is CacheRuntimeClass "{labels.get(names.LABEL_RUNTIME_CLASS)}"\'s extra resource'
            else:
                holder = ""
            if holder:
                raise Problem(
                    "NameConflict",
                    f'ConfigMap {namespace}/{name}, an extraResources ConfigMap of CacheRuntimeClass "'
                    f'{wanted_class}", exists and {holder}: rename it in the class, or delete the '
                    "ConfigMap if nothing else needs it",
                    retry_after=None
                    if labels.get(names.LABEL_APP_MANAGED_BY) == names.MANAGED_BY
                    else NAME_CONFLICT_RECHECK,
                )
            others = {k: v for k, v in meta.items() if k != "ownerReferences"}
            if _owned_by(actual, owner_uid) and contains(actual, {**desired, "metadata": others}):
                return
        await self._apply(desired, manager, actual is None)

    async def _release(self, obj: dict[str, Any], manager: str) -> None:
        """Drop this runtime's part of a shared object: an apply of nothing by its field manager
        removes what only it set (its ownerReference), and what the others set stays. The cached
        resourceVersion makes it conditional: two runtimes letting go at once would otherwise both
        see the other as the owner that stays, and leave an object nobody owns (the loser gets a
        409 and looks again)."""
        meta = obj["metadata"]
        empty = {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": obj.get("kind", "ConfigMap"),
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "resourceVersion": meta["resourceVersion"],
            },
        }
        await self._apply(empty, manager, False)

    async def _delete(self, resource: Resource, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        try:
            await self.request(
                "DELETE",
                resource.object_path(meta.get("namespace"), meta["name"]),
                body={"preconditions": {"uid": meta["uid"]}, "propagationPolicy": "Background"},
            )
        except http.ApiError as e:
            if e.code not in (404, 409):
                raise
        metrics.WRITES.labels("delete", resource.plural).inc()
        log.info("deleted %s %s", obj.get("kind"), meta["name"], extra={"namespace": meta.get("namespace")})

    async def _cleanup_orphan_pv(self, namespace: str, name: str) -> None:
        pv = self.caches.pvs.get(None, names.dataset_pv(namespace, name))
        # Already terminating (pv-protection holds it while bound): deleting again is a wasted write.
        if (
            pv is not None
            and not pv["metadata"].get("deletionTimestamp")
            and pv_conflict(pv, namespace, name) is None
        ):
            await self._delete(resources.PERSISTENT_VOLUMES, pv)

    # ------------------------------------------------------------------ deletion

    async def _add_finalizer(self, ds_obj: dict[str, Any]) -> dict[str, Any]:
        ops = finalizers.adding(ds_obj, names.DATASET_FINALIZER)
        updated: dict[str, Any] | None = await finalizers.send(self.request, DATASETS, ds_obj, ops)
        if updated is None:
            return ds_obj  # deleted meanwhile: the watch tells the cache, and the key comes again
        self.caches.datasets.observe(updated)
        return updated

    async def _guard_runtime(self, rt_obj: dict[str, Any]) -> None:
        """The runtime's finalizer, on a runtime with a client (controller/teardown.py says why)."""
        ops = finalizers.adding(rt_obj, names.RUNTIME_FINALIZER)
        updated = await finalizers.send(self.request, CACHERUNTIMES, rt_obj, ops)
        if updated is not None:
            self.caches.runtimes.observe(updated)

    async def _delete_dataset(self, ds_obj: dict[str, Any], rt_obj: dict[str, Any] | None) -> Result:
        meta = ds_obj["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if not finalizers.has(ds_obj, names.DATASET_FINALIZER):
            return Result()
        pods = await self._pods(namespace)
        users = dataset_users(pods, name)
        if users:
            message = dataset_in_use_message(name, users)
            await self.recorder.event(ds_obj, "Warning", "DatasetInUse", message)
            status = dict(ds_obj.get("status") or {})
            conditions = set_condition(
                status.get("conditions", []), names.CONDITION_READY, False, "DatasetInUse", message
            )
            await self._write_status(DATASETS, ds_obj, {**status, "conditions": conditions})
            return Result(IN_USE_RECHECK)
        if rt_obj is not None and not rt_obj["metadata"].get("deletionTimestamp"):
            if await self.teardown.client_still_up(namespace, name, pods):
                return Result(CLIENT_GONE_RECHECK)
            await self._delete(CACHERUNTIMES, rt_obj)  # its children follow through owner references
        await self._cleanup_orphan_pv(namespace, name)
        ops = finalizers.removing(ds_obj, names.DATASET_FINALIZER)
        if await finalizers.send(self.request, DATASETS, ds_obj, ops) is None:
            return Result()  # already gone: an earlier pass released it
        log.info("released dataset", extra={"namespace": namespace, "dataset": name})
        return Result()

    async def _pods(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's pods, listed only while a Dataset waits to be deleted or its storage to
        be re-created: a watch of every pod in the cluster would cost the controller far more."""
        pods = await self.request("GET", resources.PODS.collection_path(namespace))
        items: list[dict[str, Any]] = pods.get("items", [])
        return items

    # ------------------------------------------------------------------ status

    async def _runtime_problem(self, rt_obj: dict[str, Any], problem: Problem) -> None:
        await self.recorder.event(rt_obj, "Warning", problem.reason, problem.message)
        await self._runtime_status(rt_obj, ready=False, reason=problem.reason, message=problem.message)
        log.info("runtime problem: %s", problem.message, extra={"reason": problem.reason})

    def _component_statuses(self, children: Children) -> dict[str, dict[str, Any]]:
        """status.master/worker/client from the workloads as the watch cache has them."""
        scope = children.scope
        out: dict[str, dict[str, Any]] = {}
        for component in names.COMPONENTS:
            if not scope.enabled(component):
                out[component] = not_running()
                continue
            cache = self.caches.daemonsets if component == "client" else self.caches.statefulsets
            workload = cache.get(scope.namespace, names.component_name(scope.name, component))
            desired = scope.spec(component).replica_count() or 0
            out[component] = component_status(component, workload, desired)
        return out

    async def _runtime_status(
        self,
        rt_obj: dict[str, Any],
        *,
        ready: bool,
        reason: str,
        message: str,
        components: dict[str, dict[str, Any]] | None = None,
        applied: bool = False,
    ) -> None:
        """Upstream's status shape (valueFile, per-component status) plus the product's Ready
        condition. ``components`` None keeps the ones there (a problem says nothing about them), and
        valueFile too: it names the ConfigMap once a reconcile has made it (``applied``), never one
        that is not there."""
        status = dict(rt_obj.get("status") or {})
        status.pop("phase", None)  # written by earlier versions; upstream's status has none
        generation = rt_obj["metadata"].get("generation")
        made = {"valueFile": names.runtime_config_configmap(rt_obj["metadata"]["name"])} if applied else {}
        desired = {
            **status,
            **made,
            **(components or {}),
            "observedGeneration": generation,
            "conditions": set_condition(
                status.get("conditions", []),
                names.CONDITION_READY,
                ready,
                reason,
                message,
                observed_generation=generation,
            ),
        }
        await self._write_status(CACHERUNTIMES, rt_obj, desired)

    async def _dataset_status(
        self,
        ds_obj: dict[str, Any],
        phase: str,
        runtimes: list[dict[str, Any]],
        *,
        ready: bool,
        reason: str,
        message: str,
    ) -> None:
        status = dict(ds_obj.get("status") or {})
        desired = {
            **status,
            "phase": phase,
            "runtimes": runtimes,
            "conditions": set_condition(
                status.get("conditions", []), names.CONDITION_READY, ready, reason, message
            ),
        }
        await self._write_status(DATASETS, ds_obj, desired)

    async def _write_status(self, resource: Resource, obj: dict[str, Any], desired: dict[str, Any]) -> None:
        actual = obj.get("status") or {}
        if same_status(actual, desired):
            return
        meta = obj["metadata"]
        # A merge patch from the status as cached: lists (conditions, runtimes) are replaced whole,
        # and keys the desired status no longer has are removed.
        written = await self.request(
            "PATCH",
            resource.object_path(meta["namespace"], meta["name"]) + "/status",
            body={"status": merge_patch(actual, desired)},
            content_type=http.MERGE_PATCH,
        )
        metrics.WRITES.labels("patch", resource.plural + "/status").inc()
        (self.caches.datasets if resource is DATASETS else self.caches.runtimes).observe(written)


async def together(*steps: Awaitable[Any]) -> list[Any]:
    """Run ``steps`` concurrently and wait for all of them, so no write is left running behind a
    failure; then raise the first failure in order, an API error before a Problem (the error's retry
    with backoff brings the Problem back; the Problem would wait for a change that may never come)."""
    results = await asyncio.gather(*steps, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    for failure in (*[f for f in failures if not isinstance(f, Problem)], *failures):
        raise failure
    return results


def _owned_by(obj: dict[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences", []))


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg')}" if where else str(err.get("msg"))
