"""``kubectl fluid explain deploy/NAME`` (sts, ds, job, cronjob, rs): read what creates the workload's
pods, its newest pods, and, when it has none, its newest ``FailedCreate`` Event. The judgement is
``workloadreport.py``'s; each pod is explained as ``explain pod/NAME`` explains it.

Pods are found as their controller finds them: by the creator's selector, then by the creator's uid
in their controller reference (a selector can match another workload's pods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubectl_fluid.cli.errors import CliError

if TYPE_CHECKING:
    from kubectl_fluid.cli.settings import Session
    from kubectl_fluid.cli.workloadreport import WorkloadFacts
    from kubectl_fluid.cli.workloads import Kind

# Each explained pod costs a few reads; the newest few say what the workload's template makes now.
MAX_PODS = 3
# Where a Deployment keeps each ReplicaSet's place in its history.
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _controlled_by(items: list[dict[str, Any]], owner: dict[str, Any]) -> list[dict[str, Any]]:
    uid = _meta(owner).get("uid")
    return [
        i
        for i in items
        if any(r.get("controller") and r.get("uid") == uid for r in _meta(i).get("ownerReferences") or ())
    ]


def _label_selector(obj: dict[str, Any]) -> str | None:
    """The matchLabels part as a labelSelector (the server narrows the list; matchExpressions are
    applied here, with the owner's uid)."""
    match = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(match.items())) or None


def _children(session: Session, resource: Any, owner: dict[str, Any]) -> list[dict[str, Any]]:
    from kubectl_fluid.cli.checks import selector_matches

    selector = _label_selector(owner)
    params = {"labelSelector": selector} if selector else None
    items = session.api.list(resource.collection_path(session.namespace), params)
    wanted = (owner.get("spec") or {}).get("selector")
    matched = [i for i in items if selector_matches(wanted, _meta(i).get("labels") or {})]
    return _controlled_by(matched, owner)


def _revision(rs: dict[str, Any]) -> int:
    try:
        return int((_meta(rs).get("annotations") or {}).get(REVISION_ANNOTATION) or 0)
    except ValueError:
        return 0


def _creator(session: Session, kind: Kind, obj: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(what creates the pods, the sentence when nothing does yet). A Deployment's newest ReplicaSet,
    a CronJob's newest Job; any other workload creates its own."""
    from kubectl_fluid.kube import resources

    if kind.resource == resources.DEPLOYMENTS:
        sets = _children(session, resources.REPLICASETS, obj)
        rs = max(sets, key=_revision, default=None)
        return ({**rs, "kind": resources.REPLICASETS.kind} if rs else None), None
    if kind.resource == resources.CRONJOBS:
        jobs = session.api.list(resources.JOBS.collection_path(session.namespace))
        mine = _controlled_by(jobs, obj)
        newest = max(mine, key=lambda j: str(_meta(j).get("creationTimestamp") or ""), default=None)
        if newest is None:
            schedule = (obj.get("spec") or {}).get("schedule")
            return None, f'it has run no Job yet (schedule "{schedule}"): its pods come from its Jobs'
        return {**newest, "kind": resources.JOBS.kind}, None
    return obj, None


def _short(obj: dict[str, Any]) -> str:
    from kubectl_fluid.cli.workloads import EXPLAINED_KINDS

    kind = str(obj.get("kind") or "")
    short = {k.resource.kind: k.short for k in EXPLAINED_KINDS}
    return f"{short.get(kind, kind.lower())}/{_meta(obj).get('name')}"


def gather_workload(session: Session, kind: Kind, name: str) -> WorkloadFacts:
    from kubectl_fluid.cli.checks import not_found
    from kubectl_fluid.cli.diagnosis import diagnose
    from kubectl_fluid.cli.eventview import CREATE_REASONS, event_line, newest
    from kubectl_fluid.cli.explainpod import events_of, gather
    from kubectl_fluid.cli.workloadreport import WorkloadFacts, newest_first
    from kubectl_fluid.kube import resources

    api, ns = session.api, session.namespace
    obj = api.get(kind.resource.object_path(ns, name))
    if obj is None:
        raise CliError(not_found(api, f'{kind.resource} "{name}"', ns))
    obj.setdefault("kind", kind.resource.kind)
    creator, waiting = _creator(session, kind, obj)
    pods: list[dict[str, Any]] = []
    failed = None
    if creator is not None:
        pods = [dict(p) for p in newest_first(_children(session, resources.PODS, creator))]
        if not pods:
            event = newest(events_of(session, creator), CREATE_REASONS, _meta(creator).get("uid"))
            failed = event_line(event) if event else None
    replicas = (obj.get("spec") or {}).get("replicas")
    return WorkloadFacts(
        namespace=ns,
        workload=f"{kind.short}/{name}",
        creator=_short(creator) if creator is not None and creator is not obj else None,
        replicas=int(replicas) if isinstance(replicas, int) else None,
        pods=[diagnose(gather(session, str(_meta(p).get("name")), p)) for p in pods[:MAX_PODS]],
        total=len(pods),
        failed_create=failed,
        waiting=waiting,
    )
