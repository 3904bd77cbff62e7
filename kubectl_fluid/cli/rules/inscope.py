"""Which pods, FuseMounts and nodes a ``Scope`` covers, for the rules about mounts and nodes
(``fuse.py``, ``nodes.py``). Pure.

A pod's scope is that pod, the FuseMounts serving it on its node (those whose published targets name
it, and its datasets' client mounts there) and its node. A dataset's is its app pods, its client
mounts and their nodes. Everything is every pod that uses a dataset or a CSI volume, every FuseMount
of the snapshot's namespace (a dataset's there, or one serving a pod there; all with -A), every node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubectl_fluid.api import drivervolumes, names
from kubectl_fluid.cli.snapshot import key, name_of

if TYPE_CHECKING:
    from kubectl_fluid.cli.rules.finding import Scope
    from kubectl_fluid.cli.snapshot import Obj, Snapshot


def everything(scope: Scope) -> bool:
    return scope.everything or (not scope.datasets and scope.pod is None)


def node_of(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def uses_csi(snap: Snapshot, pod: Obj) -> bool:
    """Whether kubelet mounts a volume of the product's CSI driver for the pod: a PVC bound to one of
    its PVs, or an inline CSI volume of it."""
    inline = any(
        (v.get("csi") or {}).get("driver") == names.CSI_DRIVER
        for v in (pod.get("spec") or {}).get("volumes") or ()
    )
    return inline or any(drivervolumes.pv_driver(pv) == names.CSI_DRIVER for _, _, pv in snap.pod_claims(pod))


def pods(snap: Snapshot, scope: Scope) -> list[Obj]:
    """The app pods in scope (never the runtime's own components)."""
    from kubectl_fluid.cli.podview import injected_datasets

    if scope.pod is not None:
        found = snap.get("pods", *scope.pod)
        return [found] if found is not None else []
    if everything(scope):
        return [
            p
            for p in snap.items("pods")
            if names.LABEL_CACHERUNTIME_NAME not in (p.get("metadata") or {}).get("labels", {})
            and (injected_datasets(p) or uses_csi(snap, p))
        ]
    seen: dict[tuple[str, str], Obj] = {}
    for ns, ds in scope.dataset_keys(snap):
        for p in snap.app_pods(ns, ds):
            seen.setdefault(key(p), p)
    return list(seen.values())


def serves(mount: Obj, pod: Obj) -> bool:
    """Whether the FuseMount has published one of the pod's volumes (its targets name the pod)."""
    uid = (pod.get("metadata") or {}).get("uid")
    ref = "/".join(key(pod))
    return any(
        t.get("pod") == ref or (uid and t.get("podUid") == uid)
        for v in (mount.get("status") or {}).get("volumes") or ()
        for t in v.get("targets") or ()
    )


def fusemounts(snap: Snapshot, scope: Scope) -> list[Obj]:
    """The FuseMounts in scope, by name."""
    if everything(scope):
        # FuseMounts are cluster-scoped: a namespace's snapshot keeps those of its datasets and of
        # its pods, never another namespace's faults (-A keeps them all).
        found = [m for m in snap.items("fusemounts") if _in_namespace(snap, m)]
    elif scope.pod is not None:
        found = []
        for pod in pods(snap, scope):
            datasets = {ds for _, ds in scope.dataset_keys(snap)}
            found += [
                m
                for m in snap.fusemounts_on(node_of(pod))
                if serves(m, pod) or _dataset(m) in {(key(pod)[0], ds) for ds in datasets}
            ]
    else:
        found = [m for ns, ds in scope.dataset_keys(snap) for m in snap.fusemounts(ns, ds)]
    return sorted({name_of(m): m for m in found}.values(), key=name_of)


def _in_namespace(snap: Snapshot, mount: Obj) -> bool:
    if snap.namespace is None:
        return True
    dataset = _dataset(mount)
    if dataset is not None:
        return dataset[0] == snap.namespace
    return any(
        str(t.get("pod") or "").startswith(f"{snap.namespace}/")
        for v in (mount.get("status") or {}).get("volumes") or ()
        for t in v.get("targets") or ()
    )


def _dataset(mount: Obj) -> tuple[str, str] | None:
    ref: dict[str, Any] = (mount.get("spec") or {}).get("dataset") or {}
    return (str(ref.get("namespace")), str(ref.get("name"))) if ref.get("name") else None
