"""One read of the cluster for the verbs that look at a dataset's whole life (``inspect``, ``diagnose``,
``debug``, ``bundle``): each kind listed once per scope, never one request per object, then joined
here in memory by name.

A list RBAC forbids, or a kind the server does not serve (no CSINode on an old cluster, no DataLoad
CRD), is recorded in ``Snapshot.unreadable`` with the reason and reads as empty: the verbs say what
they could not see rather than fail. Only the Datasets are required.

Reading is the edge (``read()``); everything else here is pure over the API's JSON, so the renderers
and rules are tested on hand-made snapshots.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_fluid.api import names
from kubectl_fluid.kube import resources

if TYPE_CHECKING:
    from kubectl_fluid.kube.resources import Resource
    from kubectl_fluid.kube.transport import Api

Obj = dict[str, Any]

# What a snapshot can hold, by the name each verb asks for, in the order they are read (the order a
# person reads ``bundle``'s progress in). Namespaced kinds are listed in the snapshot's namespace (or
# all), cluster-scoped ones whole.
KINDS: dict[str, Resource] = {
    "datasets": resources.DATASETS,
    "cacheruntimes": resources.CACHERUNTIMES,
    "cacheruntimeclasses": resources.CACHERUNTIMECLASSES,
    "configmaps": resources.CONFIGMAPS,
    "persistentvolumeclaims": resources.PERSISTENT_VOLUME_CLAIMS,
    "persistentvolumes": resources.PERSISTENT_VOLUMES,
    "statefulsets": resources.STATEFULSETS,
    "daemonsets": resources.DAEMONSETS,
    "pods": resources.PODS,
    "fusemounts": resources.FUSEMOUNTS,
    "dataloads": resources.DATALOADS,
    "nodes": resources.NODES,
    "csinodes": resources.CSINODES,
    "events": resources.EVENTS,
    "mutatingwebhookconfigurations": resources.MUTATING_WEBHOOK_CONFIGURATIONS,
}
ALL_KINDS = tuple(KINDS)
# Not a kind: diagnose's probe of the webhook (``webhookprobe.py``), recorded in ``Snapshot.unreadable``
# under this name when the API server would not run it (RBAC: no create of pods).
PROBE = "pods (dry-run create)"
# Why the probe is unreadable for the verbs that only read (debug, bundle): its rule is then listed
# skipped, never run on no answer.
NOT_PROBED = "not asked: this command only reads"


def key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


@dataclass
class Snapshot:
    """The objects of one scope: ``namespace`` None is every namespace."""

    namespace: str | None
    lists: dict[str, list[Obj]] = field(default_factory=dict)
    # kind → why it could not be read (RBAC, not served): its list reads as empty.
    unreadable: dict[str, str] = field(default_factory=dict)
    # diagnose's probe of the webhook: namespace → the API server's refusal of a pod labelled for
    # injection created there with dryRun=All, None when it admitted it; empty when not probed.
    probes: dict[str, str | None] = field(default_factory=dict)
    # Namespaces whose pods were read besides the snapshot's own (fluid-system's, for debug pod).
    pod_namespaces: set[str] = field(default_factory=set)

    def items(self, kind: str) -> list[Obj]:
        return self.lists.get(kind) or []

    def readable(self, kind: str) -> bool:
        return kind in self.lists

    def add_pods(self, namespace: str, pods: list[Obj]) -> None:
        """Every pod of another namespace, read apart (one list), joined to the snapshot's. Not when
        the snapshot's own pods were unreadable: that would make the kind look read."""
        if not self.readable("pods"):
            return
        if self.namespace is None or namespace == self.namespace or namespace in self.pod_namespaces:
            return
        self.lists["pods"] = [*self.items("pods"), *pods]
        self.pod_namespaces.add(namespace)
        self._indexes.pop("pods", None)

    def sees_pods_of(self, namespace: str) -> bool:
        """Whether every pod of ``namespace`` is in the snapshot, so a pod not found there is gone."""
        return self.readable("pods") and (
            self.namespace in (None, namespace) or namespace in self.pod_namespaces
        )

    # -- one object by name --------------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        index = self._index(kind)
        return index.get((namespace if KINDS[kind].namespaced else "", name))

    def _index(self, kind: str) -> dict[tuple[str, str], Obj]:
        cached = self._indexes.get(kind)
        if cached is None:
            cached = {key(o): o for o in self.items(kind)}
            self._indexes[kind] = cached
        return cached

    def __post_init__(self) -> None:
        self._indexes: dict[str, dict[tuple[str, str], Obj]] = {}

    # -- a dataset's parts ---------------------------------------------------------------------------
    def dataset(self, namespace: str, name: str) -> Obj | None:
        return self.get("datasets", namespace, name)

    def runtime(self, namespace: str, dataset: str) -> Obj | None:
        """The dataset's CacheRuntime (Fluid binds a runtime to the dataset of its own name)."""
        return self.get("cacheruntimes", namespace, dataset)

    def runtime_class(self, runtime: Mapping[str, Any] | None) -> Obj | None:
        class_name = ((runtime or {}).get("spec") or {}).get("runtimeClassName")
        return self.get("cacheruntimeclasses", "", str(class_name)) if class_name else None

    def configmap(self, namespace: str, dataset: str) -> Obj | None:
        return self.get("configmaps", namespace, names.runtime_config_configmap(dataset))

    def pvc(self, namespace: str, dataset: str) -> Obj | None:
        return self.get("persistentvolumeclaims", namespace, dataset)

    def pv(self, namespace: str, dataset: str) -> Obj | None:
        return self.get("persistentvolumes", "", names.dataset_pv(namespace, dataset))

    def component_workloads(self, namespace: str, dataset: str) -> list[Obj]:
        """The runtime's master/worker StatefulSets and client DaemonSet, by the runtime's label."""
        return [
            w
            for kind in ("statefulsets", "daemonsets")
            for w in self.items(kind)
            if key(w)[0] == namespace and labels_of(w).get(names.LABEL_CACHERUNTIME_NAME) == dataset
        ]

    def component_pods(self, namespace: str, dataset: str) -> list[Obj]:
        return [
            p
            for p in self.items("pods")
            if key(p)[0] == namespace and labels_of(p).get(names.LABEL_CACHERUNTIME_NAME) == dataset
        ]

    def app_pods(self, namespace: str, dataset: str) -> list[Obj]:
        """Pods that use the dataset: injected with its runtime config, or mounting its PVC."""
        from kubectl_fluid.cli.podview import claim_names, injected_datasets

        return [
            p
            for p in self.items("pods")
            if key(p)[0] == namespace
            and names.LABEL_CACHERUNTIME_NAME not in labels_of(p)
            and (dataset in injected_datasets(p) or dataset in claim_names(p))
        ]

    def fusemounts(self, namespace: str, dataset: str) -> list[Obj]:
        """The FUSE mounts serving the dataset: its runtime's clients (mode client), by node."""
        found = [
            m
            for m in self.items("fusemounts")
            if _names(((m.get("spec") or {}).get("dataset") or {}), namespace, dataset)
        ]
        return sorted(found, key=lambda m: str((m.get("spec") or {}).get("nodeName") or ""))

    def dataloads(self, namespace: str, dataset: str) -> list[Obj]:
        return [
            d
            for d in self.items("dataloads")
            if key(d)[0] == namespace
            and _names(((d.get("spec") or {}).get("dataset") or {}), namespace, dataset)
        ]

    # -- a pod's volumes and node (debug pod, the node and FUSE rules) --------------------------------
    def pod_claims(self, pod: Mapping[str, Any]) -> list[tuple[str, Obj | None, Obj | None]]:
        """(claim name, its PVC, the PV it is bound to) of each PVC the pod mounts; None where it is not
        in the snapshot (not made yet, or unreadable)."""
        from kubectl_fluid.cli.podview import claim_names

        namespace = key(pod)[0]
        found: list[tuple[str, Obj | None, Obj | None]] = []
        for claim in claim_names(pod):
            pvc = self.get("persistentvolumeclaims", namespace, claim)
            volume = ((pvc or {}).get("spec") or {}).get("volumeName")
            found.append((claim, pvc, self.get("persistentvolumes", "", str(volume)) if volume else None))
        return found

    def fusemounts_on(self, node: str) -> list[Obj]:
        return [m for m in self.items("fusemounts") if (m.get("spec") or {}).get("nodeName") == node]

    def csi_drivers(self, node: str) -> set[str] | None:
        """The CSI drivers registered on the node (its CSINode's), or None when CSINodes cannot be read;
        a node without a CSINode has none."""
        if not self.readable("csinodes"):
            return None
        csinode = self.get("csinodes", "", node) or {}
        return {str(d.get("name")) for d in (csinode.get("spec") or {}).get("drivers") or ()}

    def events_for(self, involved: Iterable[Mapping[str, Any]]) -> list[Obj]:
        """Events of these objects (matched by uid), oldest first."""
        uids = {str((o.get("metadata") or {}).get("uid")) for o in involved}
        uids.discard("None")
        found = [
            e for e in self.items("events") if str((e.get("involvedObject") or {}).get("uid") or "") in uids
        ]
        return sorted(found, key=event_time)


def _names(ref: Mapping[str, Any], namespace: str, dataset: str) -> bool:
    """Whether a {namespace, name} reference names the dataset (no namespace: the referrer's)."""
    return ref.get("name") == dataset and (ref.get("namespace") or namespace) == namespace


def event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


Progress = Callable[[str, int], None]


def read_system_pods(api: Api, snap: Snapshot) -> list[Obj] | None:
    """The product's namespace's pods (CSI node pods, the webhook, standalone FUSE pods), joined to a
    snapshot of another namespace so the FUSE rules see them; None when RBAC forbids the list (those
    rules then judge only what they see: ``Snapshot.sees_pods_of()``)."""
    from kubectl_fluid.kube.errors import ApiError

    try:
        pods = [p for page in api.pages(resources.PODS.collection_path(names.FLUID_NAMESPACE)) for p in page]
    except ApiError as e:
        if e.code not in (403, 404):
            raise
        return None
    snap.add_pods(names.FLUID_NAMESPACE, pods)
    return pods


def read(
    api: Api,
    namespace: str | None,
    kinds: Sequence[str] = ALL_KINDS,
    progress: Progress | None = None,
) -> Snapshot:
    """List each of ``kinds`` once (pages of 500, as kubectl) in ``namespace`` (None: all). A kind
    that cannot be read (403, 404) is recorded as unreadable; any other failure raises."""
    from kubectl_fluid.kube.errors import ApiError

    snap = Snapshot(namespace)
    for kind in kinds:
        resource = KINDS[kind]
        path = resource.collection_path(namespace if resource.namespaced else None)
        try:
            items = [item for page in api.pages(path) for item in page]
        except ApiError as e:
            if kind == "datasets" or e.code not in (403, 404):
                raise
            snap.unreadable[kind] = f"{e.code} {e.reason or ''}".strip()
            continue
        for item in items:
            # A list's items carry no kind; the verbs print and bundle them as whole objects.
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        snap.lists[kind] = items
        if progress is not None:
            progress(kind, len(items))
    return snap
