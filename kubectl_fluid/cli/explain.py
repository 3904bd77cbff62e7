"""``kubectl fluid explain pod/NAME``: was the pod injected, from which datasets, and if not, why.

Reads the pod, its Fluid PVCs, its controller (through a ReplicaSet to its Deployment, through a Job
to its CronJob, so the advice names what to ``inject``), and, when the pod is not injected, the webhook
configuration and the state of the datasets it names. What RBAC forbids is left out of the judgement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

if TYPE_CHECKING:
    from kubectl_fluid.cli.diagnosis import Facts
    from kubectl_fluid.cli.settings import Session

POD_WORDS = ("pod", "po", "pods")


def parse_pods(args: tuple[str, ...] | list[str]) -> list[str]:
    """The pods' names, as kubectl reads them: ``pod/A pod/B``, ``pod A B`` or bare ``A B``."""
    if args and "/" not in args[0] and args[0].lower() in POD_WORDS and len(args) > 1:
        names_given = list(args[1:])
    else:
        names_given = []
        for arg in args:
            word, slash, name = arg.rpartition("/") if "/" in arg else ("pod", "", arg)
            if slash and (word.lower() not in POD_WORDS or "/" in word):
                raise CliError(f'explain takes pods, as pod/NAME, not "{arg}"')
            names_given.append(name)
    for name in names_given:
        if not name or "/" in name:
            raise CliError(f'explain takes pods, as pod/NAME, not "{"/".join(args)}"')
    return list(dict.fromkeys(names_given))  # each once, in the order given


@click.command(epilog="\b\nExamples:\n  kubectl fluid explain pod/app-5d9c7-x2x8v -n team-a")
@click.argument("pod", nargs=-1, required=True, shell_complete=completers.pods)
@kube_command(outputs=("json", "yaml", "name"))
def explain(pod: tuple[str, ...], settings: Settings) -> None:
    """Say whether a pod was injected, and why not.

    POD is pod/NAME (or NAME); several pods are explained one after the other (-o json|yaml: a List).
    Reads the pod, its PVCs, its controller, the webhook configuration and the datasets it names.

    \b
    Pod:        namespace/name
    Injected:   yes: the datasets whose runtime config it carries, or no
    Requested:  the datasets its annotation fluid.io/dataset names
    From PVCs:  datasets of the Fluid PVCs it mounts
    Owner:      the workload to inject (its Deployment, not its ReplicaSet)
    Why not:    each reason, with what to do (a missing label, a dataset not ready,
                a namespace the webhook skips, no webhook configuration...)
    What RBAC forbids reading is left out of the judgement, and said.
    """
    from kubectl_fluid.cli.diagnosis import describe, diagnose
    from kubectl_fluid.cli.output import as_list, dump, write

    pods = parse_pods(pod)
    session = settings.open()
    with session.api:
        explanations = [diagnose(gather(session, name)) for name in pods]
    if settings.output == "name":
        write("".join(f"pod/{name}\n" for name in pods))
    elif settings.output:
        reports = [e.to_json() for e in explanations]
        write(dump(reports[0] if len(reports) == 1 else as_list(reports), settings.output))
    else:
        write("\n".join(describe(e) for e in explanations))


def gather(session: Session, name: str) -> Facts:
    from kubectl_fluid.cli.checks import dataset_problem, not_found, webhook_problem
    from kubectl_fluid.cli.diagnosis import Facts
    from kubectl_fluid.cli.podview import injected_datasets, metadata, requested_datasets
    from kubectl_fluid.kube import resources

    api, ns = session.api, session.namespace
    pod = api.get(resources.PODS.object_path(ns, name))
    if pod is None:
        raise CliError(not_found(api, f'pod "{name}"', ns))
    labels, annotations = metadata(pod)
    injected = injected_datasets(pod)
    requested = requested_datasets(annotations)
    from_pvcs = _pvc_datasets(session, pod)
    problems: dict[str, str] = {}
    webhook = None
    if not injected:
        webhook, _ = webhook_problem(api, ns)
        for ds in sorted(set(requested) | set(from_pvcs)):
            problem = _quiet(lambda ds=ds: dataset_problem(api, ns, ds))
            if problem:
                problems[ds] = problem
    return Facts(
        namespace=ns,
        name=name,
        labels=labels,
        requested=requested,
        from_pvcs=from_pvcs,
        injected=injected,
        owner=_owner(session, pod),
        webhook_problem=webhook,
        dataset_problems=problems,
    )


def _quiet(read: Any) -> Any:
    """``read()``, or None when RBAC (or anything the API says) forbids it: facts we cannot read are
    left out of the judgement rather than failing the whole explanation."""
    from kubectl_fluid.kube.errors import ApiError

    try:
        return read()
    except ApiError:
        return None


def _pvc_datasets(session: Session, pod: dict[str, Any]) -> list[str]:
    """Datasets behind the Fluid PVCs the pod mounts (a Fluid PVC is named like its dataset)."""
    from kubectl_fluid.cli.podview import claim_names, is_dataset_pvc
    from kubectl_fluid.kube import resources

    found = []
    for claim in claim_names(pod):
        pvc = _quiet(
            lambda c=claim: session.api.get(
                resources.PERSISTENT_VOLUME_CLAIMS.object_path(session.namespace, c)
            )
        )
        if pvc is not None and is_dataset_pvc(pvc):
            found.append(claim)
    return found


def _controller(obj: dict[str, Any]) -> dict[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def _owner(session: Session, pod: dict[str, Any]) -> str | None:
    """The workload to inject, as ``kind/name`` in the plugin's own words (``deploy/app``)."""
    from kubectl_fluid.cli.workloads import WORKLOAD_KINDS
    from kubectl_fluid.kube import resources

    ref = _controller(pod)
    if ref is None:
        return None
    kind, name = str(ref.get("kind")), str(ref.get("name"))
    # Pods of Deployments and CronJobs belong to an intermediate object; the template to edit is above it
    # (a ReplicaSet is not injectable: its Deployment owns the template).
    via = {"ReplicaSet": resources.REPLICASETS, "Job": resources.JOBS}
    if kind in via:
        parent = _quiet(lambda: session.api.get(via[kind].object_path(session.namespace, name)))
        ref = _controller(parent) if parent else None
        if ref is not None:
            kind, name = str(ref.get("kind")), str(ref.get("name"))
    short = {k.resource.kind: k.short for k in WORKLOAD_KINDS}
    return f"{short[kind]}/{name}" if kind in short else f"{kind.lower()}/{name}"
