"""What ``explain`` reads about one pod: the pod, its PVCs (and their PVs or StorageClasses: which go
through the CSI driver's FUSE, which are a clientless dataset's), its controllers (through a ReplicaSet
to its Deployment, through a Job to its CronJob, so the advice names what to ``inject``; through a
StatefulSet to a CacheRuntime, so a cache component is said to be one), its Events while it is Pending
(kubelet's FailedMount), and, when the pod is not injected, the webhook configuration and the state of
the datasets it names. What RBAC forbids is left out of the judgement (``diagnosis.py``'s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubectl_fluid.cli.errors import CliError

if TYPE_CHECKING:
    from kubectl_fluid.cli.diagnosis import Facts
    from kubectl_fluid.cli.settings import Session


def gather(session: Session, name: str, pod: dict[str, Any] | None = None) -> Facts:
    """The facts about pod ``name`` (``pod`` when it was read already)."""
    from kubectl_fluid.cli.checks import dataset_problem, not_found, webhook_problem
    from kubectl_fluid.cli.diagnosis import Facts
    from kubectl_fluid.cli.eventview import MOUNT_REASONS, event_line, newest
    from kubectl_fluid.cli.podroles import product_role
    from kubectl_fluid.cli.podview import (
        CLIENTLESS,
        FUSE,
        injected_datasets,
        metadata,
        propagated,
        requested_datasets,
    )
    from kubectl_fluid.kube import resources

    api, ns = session.api, session.namespace
    if pod is None:
        pod = api.get(resources.PODS.object_path(ns, name))
    if pod is None:
        raise CliError(not_found(api, f'pod "{name}"', ns))
    labels, annotations = metadata(pod)
    injected = injected_datasets(pod)
    requested = requested_datasets(annotations)
    from_pvcs, paths = _claims(session, pod)
    fuse_claims = [c for c, p in paths.items() if p == FUSE]
    chain = _chain(session, pod)
    role = product_role(ns, labels, chain)
    problems: dict[str, str] = {}
    webhook = None
    if not injected and role is None:
        webhook, _ = webhook_problem(api, ns)
        for ds in sorted(set(requested) | set(from_pvcs)):
            problem = _quiet(lambda ds=ds: dataset_problem(api, ns, ds))
            if problem:
                problems[ds] = problem
    mount_failure = None
    if (pod.get("status") or {}).get("phase") == "Pending":
        pod = {**pod, "kind": resources.PODS.kind}
        event = newest(events_of(session, pod), MOUNT_REASONS, (pod.get("metadata") or {}).get("uid"))
        mount_failure = event_line(event) if event else None
    return Facts(
        namespace=ns,
        name=name,
        labels=labels,
        requested=requested,
        from_pvcs=from_pvcs,
        injected=injected,
        owner=_owner(chain),
        webhook_problem=webhook,
        dataset_problems=problems,
        role=role,
        fuse_claims=fuse_claims,
        fuse_propagated=propagated(pod, fuse_claims),
        clientless_claims=[c for c, p in paths.items() if p == CLIENTLESS],
        mount_failure=mount_failure,
    )


def events_of(session: Session, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The Events about ``obj`` (its ``kind`` set), as kubectl describe finds them; none when RBAC
    forbids reading them."""
    from kubectl_fluid.kube import resources

    meta = obj.get("metadata") or {}
    selector = f"involvedObject.kind={obj.get('kind')},involvedObject.name={meta.get('name')}"
    path = resources.EVENTS.collection_path(session.namespace)
    found = _quiet(lambda: session.api.list(path, {"fieldSelector": selector}))
    return list(found or [])


def _quiet(read: Any) -> Any:
    """``read()``, or None when RBAC (or anything the API says) forbids it: facts we cannot read are
    left out of the judgement rather than failing the whole explanation."""
    from kubectl_fluid.kube.errors import ApiError

    try:
        return read()
    except ApiError:
        return None


def _claims(session: Session, pod: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """(datasets behind the Fluid PVCs the pod mounts, a Fluid PVC being named like its dataset;
    each claim's ``podview.claim_path()``, where known). A claim's PV or StorageClass that cannot be
    read leaves its path unknown."""
    from kubectl_fluid.cli.datasets import CLIENTLESS as CLIENTLESS_MODE
    from kubectl_fluid.cli.podview import claim_names, claim_path, is_dataset_pvc
    from kubectl_fluid.kube import resources

    api, ns = session.api, session.namespace
    datasets: list[str] = []
    paths: dict[str, str] = {}
    for claim in claim_names(pod):
        pvc = _quiet(lambda c=claim: api.get(resources.PERSISTENT_VOLUME_CLAIMS.object_path(ns, c)))
        if pvc is None:
            continue
        if is_dataset_pvc(pvc):
            datasets.append(claim)
        spec = pvc.get("spec") or {}
        volume, sc = spec.get("volumeName"), spec.get("storageClassName")
        pv = (
            _quiet(lambda v=volume: api.get(resources.PERSISTENT_VOLUMES.object_path(None, v)))
            if volume
            else None
        )
        storage_class = (
            _quiet(lambda c=sc: api.get(resources.STORAGE_CLASSES.object_path(None, c)))
            if sc and not pv
            else None
        )
        mode = _dataset_mode(session, claim) if pv is None and is_dataset_pvc(pvc) else None
        path = claim_path(pvc, pv, storage_class, None if mode is None else mode == CLIENTLESS_MODE)
        if path:
            paths[claim] = path
    return datasets, paths


def _dataset_mode(session: Session, dataset: str) -> str | None:
    """The dataset's mode as ``kubectl fluid datasets`` reads it (its rendered runtime config, else its
    CacheRuntime), for a PVC whose PV cannot be read."""
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.datasets import mode_of
    from kubectl_fluid.kube import resources

    api, ns = session.api, session.namespace
    configmap = _quiet(
        lambda: api.get(resources.CONFIGMAPS.object_path(ns, names.runtime_config_configmap(dataset)))
    )
    runtime = None if configmap else _quiet(lambda: api.get(resources.CACHERUNTIMES.object_path(ns, dataset)))
    mode: str | None = mode_of(runtime, configmap)
    return mode


def _controller(obj: dict[str, Any]) -> dict[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def _chain(session: Session, pod: dict[str, Any]) -> list[tuple[str, str]]:
    """The pod's controller and that one's, as (kind, name): ``ReplicaSet`` then ``Deployment``,
    ``StatefulSet`` then ``CacheRuntime``. What cannot be read ends the chain."""
    from kubectl_fluid.kube import resources

    ref = _controller(pod)
    if ref is None:
        return []
    chain = [(str(ref.get("kind")), str(ref.get("name")))]
    via = {
        r.kind: r
        for r in (resources.REPLICASETS, resources.JOBS, resources.STATEFULSETS, resources.DAEMONSETS)
    }
    kind, name = chain[0]
    if kind in via:
        parent = _quiet(lambda: session.api.get(via[kind].object_path(session.namespace, name)))
        above = _controller(parent) if parent else None
        if above is not None:
            chain.append((str(above.get("kind")), str(above.get("name"))))
    return chain


def _owner(chain: list[tuple[str, str]]) -> str | None:
    """The workload to inject, as ``kind/name`` in the plugin's own words (``deploy/app``)."""
    from kubectl_fluid.cli.workloads import WORKLOAD_KINDS

    if not chain:
        return None
    # Pods of Deployments and CronJobs belong to an intermediate object; the template to edit is above it
    # (a ReplicaSet is not injectable: its Deployment owns the template).
    kind, name = chain[1] if len(chain) > 1 and chain[0][0] in ("ReplicaSet", "Job") else chain[0]
    short = {k.resource.kind: k.short for k in WORKLOAD_KINDS}
    return f"{short[kind]}/{name}" if kind in short else f"{kind.lower()}/{name}"
