"""Rules about injection: the webhook's configuration (an entry without the CA that trusts the
webhook), whether the API server reaches the webhook at all, and pods that asked for runtime config
and went without it.

Whether the webhook is reachable is asked of the API server itself: ``kubectl fluid diagnose``
creates a pod labelled for injection with ``dryRun=All`` (nothing is stored, the webhook is called
as for a real pod: its entries declare ``sideEffects: None``) and keeps the answer in
``Snapshot.probes``. This covers what an EndpointSlice would not: a configuration that points at a
URL, a Service whose endpoints are ready but which the API server cannot reach (network, TLS).
Why a pod went without its config is ``diagnosis.py``'s judgement, the one ``explain`` gives.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.api.datasetrefs import is_dataset_pvc
from kubectl_fluid.cli.rules.finding import Finding, ObjectRef, Rule, Scope
from kubectl_fluid.cli.rules.needs import rule
from kubectl_fluid.cli.snapshot import PROBE, Snapshot, key, name_of

# What the API server says when it could not call an admission webhook (its wording since 1.16).
CALL_FAILED = "failed calling webhook"


def _config(snap: Snapshot) -> Mapping[str, Any] | None:
    return snap.get("mutatingwebhookconfigurations", "", names.WEBHOOK_NAME)


def _without_ca(config: Mapping[str, Any] | None) -> list[str]:
    return [
        str(h.get("name"))
        for h in (config or {}).get("webhooks") or ()
        if not (h.get("clientConfig") or {}).get("caBundle")
    ]


@rule("webhook-cabundle-missing", "mutatingwebhookconfigurations")
def webhook_cabundle_missing(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    hooks = _without_ca(_config(snap))
    if not hooks:
        return
    yield Finding(
        "webhook-cabundle-missing",
        "error",
        ObjectRef("MutatingWebhookConfiguration", names.WEBHOOK_NAME),
        "the API server cannot trust the webhook: labelled pods are refused (failurePolicy Fail)",
        tuple(f"webhooks[{h}].clientConfig.caBundle: empty" for h in hooks),
        f"fluid-webhook --bootstrap-certs patches its CA into every entry at start and keeps it: check "
        f"that it runs (kubectl get pods -n {names.FLUID_NAMESPACE} -l {names.LABEL_APP_NAME}="
        f"{names.WEBHOOK_SERVICE}) and its log; it may patch this object (RBAC)",
    )


@rule("webhook-unreachable", "mutatingwebhookconfigurations", PROBE)
def webhook_unreachable(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    config = _config(snap)
    if config is None or _without_ca(config):
        return  # not installed (explain says so), or webhook-cabundle-missing is the cause
    # The API server names the webhook it failed to call (`failed calling webhook "NAME"`): another
    # admission webhook that fails closed (a policy engine down) is not ours to report.
    ours = {f'"{h.get("name")}"' for h in config.get("webhooks") or () if h.get("name")}
    for namespace, refusal in sorted(snap.probes.items()):
        if refusal is None or CALL_FAILED not in refusal or not any(n in refusal for n in ours):
            continue
        client = [
            (h.get("clientConfig") or {}).get("service") or (h.get("clientConfig") or {}).get("url")
            for h in config.get("webhooks") or ()
        ]
        target = client[0] if client else None
        where = (
            f"Service {target.get('namespace')}/{target.get('name')}" if isinstance(target, dict) else target
        )
        yield Finding(
            "webhook-unreachable",
            "error",
            ObjectRef("MutatingWebhookConfiguration", names.WEBHOOK_NAME),
            "the API server cannot call the webhook: pods labelled for injection are refused",
            (
                f"a pod labelled {names.LABEL_INJECT}={names.TRUE} created in {namespace} with dryRun=All "
                f"was refused: {' '.join(refusal.split())[:400]}",
                f"webhooks[].clientConfig: {where}",
            ),
            f"check fluid-webhook's pods and their readiness (kubectl get pods,endpointslices -n "
            f"{names.FLUID_NAMESPACE}) and that the API server can reach them",
        )


def _owner(pod: Mapping[str, Any]) -> str | None:
    """The workload to inject as ``kind/name`` (``deploy/app``), from the pod alone: a ReplicaSet's
    pods carry its ``pod-template-hash``, which the Deployment appended to the ReplicaSet's name."""
    from kubectl_fluid.cli.workloads import WORKLOAD_KINDS

    meta = pod.get("metadata") or {}
    ref = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), None)
    if ref is None:
        return None
    kind, owner = str(ref.get("kind")), str(ref.get("name"))
    suffix = f"-{(meta.get('labels') or {}).get('pod-template-hash')}"
    if kind == "ReplicaSet" and owner.endswith(suffix) and len(suffix) > 1:
        kind, owner = "Deployment", owner.removesuffix(suffix)
    short = {k.resource.kind: k.short for k in WORKLOAD_KINDS}
    return f"{short[kind]}/{owner}" if kind in short else None


def facts(snap: Snapshot, pod: Mapping[str, Any]) -> Any:
    """``diagnosis.Facts`` of a pod, from the snapshot (what ``explainpod.gather`` reads by GETs)."""
    from kubectl_fluid.cli.checks import config_problem
    from kubectl_fluid.cli.diagnosis import Facts
    from kubectl_fluid.cli.podview import claim_names, injected_datasets, metadata, requested_datasets

    ns, name = key(pod)
    labels, annotations = metadata(pod)
    requested = requested_datasets(annotations)
    from_pvcs = [c for c in claim_names(pod) if is_dataset_pvc(snap.pvc(ns, c) or {})]
    problems = {}
    for ds in sorted(set(requested) | set(from_pvcs)):
        dataset = snap.dataset(ns, ds)
        if dataset is None:
            continue
        problem = config_problem(ds, dataset, snap.configmap(ns, ds))
        if problem:
            problems[ds] = problem
    return Facts(
        namespace=ns,
        name=name,
        labels=labels,
        requested=requested,
        from_pvcs=from_pvcs,
        injected=injected_datasets(pod),
        owner=_owner(pod),
        dataset_problems=problems,
    )


def _pods(snap: Snapshot, scope: Scope) -> list[Mapping[str, Any]]:
    """The user's pods in scope that ask for runtime config (``fluid.io/inject=true``)."""
    from kubectl_fluid.cli.podview import requested_datasets

    wanted = set(scope.dataset_keys(snap))
    found = []
    for pod in snap.items("pods"):
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(names.LABEL_INJECT) != names.TRUE or names.LABEL_CACHERUNTIME_NAME in labels:
            continue
        if scope.pod is not None:
            if key(pod) == scope.pod:
                found.append(pod)
        elif scope.datasets:
            ns = key(pod)[0]
            if any((ns, d) in wanted for d in requested_datasets(meta.get("annotations"))):
                found.append(pod)
        else:
            found.append(pod)
    return sorted(found, key=key)


@rule("pod-inject-without-config", "pods", "configmaps", "persistentvolumeclaims")
def pod_inject_without_config(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    from kubectl_fluid.cli.diagnosis import diagnose

    for pod in _pods(snap, scope):
        f = facts(snap, pod)
        missing = sorted(set(f.requested) - set(f.injected))
        if not missing:
            continue
        ns = key(pod)[0]
        explanation = diagnose(f)
        advice = "; ".join(explanation.reasons) or next(
            (n for n in explanation.notes if any(f'"{d}"' in n for d in missing)),
            f"recreate the pod (kubectl fluid explain pod/{name_of(pod)} -n {ns} says more)",
        )
        mounted = ", ".join(f.injected) or "none"
        yield Finding(
            "pod-inject-without-config",
            "error" if not f.injected else "warning",
            ObjectRef("Pod", name_of(pod), ns),
            f"labelled {names.LABEL_INJECT}={names.TRUE} but has no runtime config for {', '.join(missing)}",
            (
                f"metadata.annotations[{names.ANNOTATION_DATASET}]: {','.join(f.requested)}",
                f"spec.volumes: runtime config of {mounted} "
                f"(no volume {', '.join(names.runtime_config_volume(d) for d in missing)})",
                *(f"now: {p}" for d, p in sorted(f.dataset_problems.items()) if d in missing),
            ),
            advice,
        )


RULES: list[Rule] = [webhook_cabundle_missing, webhook_unreachable, pod_inject_without_config]
