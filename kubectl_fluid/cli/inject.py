"""``kubectl fluid inject (deploy|sts|ds|job|cronjob)/NAME --dataset ds1[,ds2]`` (SPEC §6).

Adds ``fluid.io/inject: "true"`` and ``fluid.io/dataset`` to the pod template with a JSON merge patch,
after checking that every dataset exists and has its runtime config (the webhook would refuse the
pods otherwise); prints what changed. ``--remove`` takes them away, ``--dry-run`` prints the patch
(with ``-o json|yaml`` the object as it would be, as kubectl does), ``--wait`` follows the rollout.

``--fuse`` is the other injection, for workloads that mount volumes of the CSI driver (a Dataset's
PVC, a claim of its StorageClass or PV): it adds ``fuse.serverful.fluid.io/inject: "true"``, for which
the webhook sets ``mountPropagation: HostToContainer`` on those mounts, so a FUSE mount re-made on the
node reaches running containers. The webhook's propagation entry gives unlabelled pods the same, but
fails open; the label makes it an ask, refused rather than admitted without it. It checks first that
the template mounts such a volume, and refuses a template labelled ``fluid.io/inject`` (the webhook
handles such pods as clientless, and sets the propagation there too).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings, parse_duration

if TYPE_CHECKING:
    from collections.abc import Callable

    from kubectl_fluid.cli.injection import Plan
    from kubectl_fluid.cli.settings import Session
    from kubectl_fluid.cli.workloads import Target

CONFLICT_RETRIES = 3

EPILOG = """\b
Examples:
  kubectl fluid inject deploy/app --dataset ds1
  kubectl fluid inject sts/db --dataset ds1,ds2 -n team-a --wait
  kubectl fluid inject deploy/app --dataset ds1 --dry-run
  kubectl fluid inject deploy/app --remove
  kubectl fluid inject deploy/trainer --fuse
  kubectl fluid inject deploy/trainer --fuse --remove
"""


def parse_datasets(values: tuple[str, ...]) -> list[str]:
    """``--dataset a,b --dataset c`` → ``[a, b, c]``; refuses what cannot be a dataset here, and a
    ``--dataset`` that names none (``--dataset ''``)."""
    from kubectl_fluid.cli.datasetnames import checked_dataset

    for value in values:
        if not value.replace(",", "").strip():
            raise CliError(
                f'--dataset "{value}" names no dataset; pass DS[,DS...] (`kubectl fluid datasets` lists them)'
            )
    return sorted(
        {checked_dataset(part.strip()) for value in values for part in value.split(",") if part.strip()}
    )


@click.command(epilog=EPILOG)
@click.argument("workload", nargs=-1, required=True, shell_complete=completers.workloads)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="DS[,DS...]",
    shell_complete=completers.dataset_list,
    help="Datasets whose runtime config the pods get (repeatable; comma-separated).",
)
@click.option(
    "--fuse",
    is_flag=True,
    help="Instead of datasets: label the template so that mounts of Fluid PVCs get mountPropagation "
    "HostToContainer (a FUSE re-mount then reaches running containers).",
)
@click.option(
    "--remove",
    is_flag=True,
    help="Take the datasets (all without --dataset), or with --fuse its label, away.",
)
@click.option(
    "--dry-run",
    type=click.Choice(["none", "client", "server"]),
    default="none",
    help="client (what --dry-run alone means): print the patch (with -o json|yaml the object as it would "
    "be), change nothing; server: also have the API server validate it.",
)
@click.option(
    "--wait",
    is_flag=True,
    help="Follow the rollout until the new pods are available; a workload whose pods cannot be created "
    "(a webhook's denial, a quota) fails at once with the reason (a Deployment's ReplicaFailure, a "
    "StatefulSet's or DaemonSet's FailedCreate Event).",
)
@click.option("--timeout", default="5m", metavar="DURATION", help="How long --wait waits (default 5m).")
@kube_command(outputs=("json", "yaml", "name"))
def inject(
    *,
    workload: tuple[str, ...],
    datasets: tuple[str, ...],
    fuse: bool,
    remove: bool,
    dry_run: str,
    wait: bool,
    timeout: str,
    settings: Settings,
) -> None:
    """Give a workload's pods datasets' runtime config (or, with --fuse, mount propagation).

    WORKLOAD is KIND/NAME (or KIND NAME) with KIND one of deploy, sts, ds, job, cronjob. The
    pod template gets the label fluid.io/inject=true and the annotation fluid.io/dataset; the
    webhook then injects every new pod. Running pods are replaced by the workload's own rollout.

    With --fuse the template gets the label fuse.serverful.fluid.io/inject=true instead, and the
    webhook sets mountPropagation HostToContainer on the mounts of volumes of curvine.csi.fluid.io (a
    Dataset's PVC, a claim of its StorageClass or PV) in every new pod, or refuses the pod. (Pods
    without the label get the same from the webhook, but are admitted without it when the webhook is
    away.)

    Checked first, so a patch never leaves pods the webhook would refuse: each dataset the pods will
    name (those the template names already too) exists in the workload's namespace, is not being
    deleted, and its runtime config is ready (the webhook's own words when not), the webhook's
    namespaceSelector does not exclude the namespace, and with --fuse the template mounts a volume of
    curvine.csi.fluid.io. The patch is a merge patch guarded by the object's resourceVersion, retried
    on a conflict; it prints what changed ("(no change)" when nothing did). A bare Pod is refused: its spec is
    immutable, inject what creates it.
    """
    from kubectl_fluid.cli.workloads import parse_target

    target = parse_target(workload)
    wanted = parse_datasets(datasets)
    if fuse and wanted:
        raise click.UsageError(
            "--fuse and --dataset are separate injections: a pod labelled fluid.io/inject is handled as "
            "clientless, where mount propagation is not set"
        )
    if not remove and not wanted and not fuse:
        raise click.UsageError("--dataset or --fuse is required (or --remove to take datasets away)")
    try:
        wait_seconds = parse_duration(timeout)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--timeout") from None
    session = settings.open()
    with session.api:
        obj = _apply(
            session,
            target,
            datasets=wanted,
            fuse=fuse,
            remove=remove,
            dry_run=dry_run,
            output=settings.output,
        )
        if wait and dry_run == "none":
            _wait(session, target, obj, wait_seconds)


def _read(session: Session, target: Target) -> dict[str, Any]:
    from kubectl_fluid.cli.checks import not_found

    resource = target.kind.resource
    obj = session.api.get(resource.object_path(session.namespace, target.name))
    if obj is None:
        raise CliError(not_found(session.api, f'{resource} "{target.name}"', session.namespace))
    return obj


def _check_job(target: Target, obj: dict[str, Any]) -> None:
    """A Job's pod template may change only while it is suspended and has never started
    (Kubernetes ≥ 1.27); otherwise say so before the API server says "field is immutable"."""
    if target.kind.resource.kind != "Job":
        return
    started = (obj.get("status") or {}).get("startTime")
    if not (obj.get("spec") or {}).get("suspend") or started:
        raise CliError(
            f"cannot change the pod template of {target}: a Job's template is immutable once it has "
            "started; inject its CronJob, or recreate the Job with the label and annotation "
            "(--dry-run prints them)"
        )


def _check_datasets(session: Session, target: Target, obj: dict[str, Any], datasets: list[str]) -> None:
    """Every dataset the pods will name, those the template names already included: a patch that adds
    one dataset to a list naming a deleted one leaves pods the webhook refuses."""
    from kubectl_fluid.cli.checks import dataset_problem, namespace_missing, what_to_do

    kept = [ds for ds in _plan(target, obj, datasets, fuse=False, remove=False).after if ds not in datasets]
    problems = []
    for ds in sorted({*datasets, *kept}):
        problem = dataset_problem(session.api, session.namespace, ds, deleting=True)
        if problem is not None and ds in kept:
            problem += (
                f" (its pods name it already: `kubectl fluid inject {target} --remove --dataset {ds}` takes "
                "it away)"
            )
        if problem is not None:
            problems.append(problem)
    if problems:
        if namespace_missing(session.api, session.namespace):
            raise CliError(f'namespace "{session.namespace}" not found; pass an existing namespace with -n')
        raise CliError(f"{'; '.join(problems)}: {what_to_do(problems[0], session.namespace)}")


def _check_fuse(session: Session, target: Target, obj: dict[str, Any]) -> None:
    """The template mounts a volume of the CSI driver, and is not one the webhook handles as
    clientless."""
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.checks import driver_claims
    from kubectl_fluid.cli.injection import template_of
    from kubectl_fluid.cli.podview import claim_names, metadata

    template = template_of(obj, target.kind.template_path)
    labels, _ = metadata(template)
    if labels.get(names.LABEL_INJECT) == names.TRUE:
        raise CliError(
            f"{target}'s pods are labelled {names.LABEL_INJECT}={names.TRUE}: the webhook handles them as "
            f"clientless, and sets mount propagation on their volumes of {names.CSI_DRIVER} there too; "
            "--fuse adds nothing"
        )
    claims = claim_names(template)
    if not driver_claims(session.api, session.namespace, claims):
        mounted = f"its PVCs ({', '.join(claims)}) are not" if claims else "it mounts no PVC, so none is"
        raise CliError(
            f"{target} mounts no volume of {names.CSI_DRIVER}: {mounted} a dataset's PVC (labelled "
            f"{names.LABEL_DATASET_ID}) or a claim of a StorageClass or PV of {names.CSI_DRIVER}; --fuse "
            "sets mount propagation on such mounts only: mount one first"
        )


def _check_webhook(session: Session, label: str) -> None:
    from kubectl_fluid.cli.checks import webhook_problem
    from kubectl_fluid.cli.output import warn

    problem, excluded = webhook_problem(session.api, session.namespace, label)
    if problem and excluded:
        raise CliError(f"{problem}: injecting there has no effect; run the workload in another namespace")
    if problem:
        warn(problem)


def _plan(target: Target, obj: dict[str, Any], datasets: list[str], fuse: bool, remove: bool) -> Plan:
    from kubectl_fluid.cli.injection import plan_fuse, plan_fuse_remove, plan_inject, plan_remove, template_of
    from kubectl_fluid.cli.podview import metadata

    labels, annotations = metadata(template_of(obj, target.kind.template_path))
    if fuse:
        return plan_fuse_remove(labels, annotations) if remove else plan_fuse(labels, annotations)
    if remove:
        return plan_remove(labels, annotations, datasets or None)
    return plan_inject(labels, annotations, datasets)


def _apply(
    session: Session,
    target: Target,
    *,
    datasets: list[str],
    fuse: bool,
    remove: bool,
    dry_run: str,
    output: str | None,
) -> dict[str, Any]:
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.output import dump, write
    from kubectl_fluid.kube.errors import ApiError
    from kubectl_fluid.kube.transport import MERGE_PATCH

    resource = target.kind.resource
    obj = _read(session, target)
    _check_job(target, obj)
    if not remove and fuse:
        _check_fuse(session, target, obj)
        _check_webhook(session, names.LABEL_FUSE_SERVERFUL_INJECT)
    elif not remove:
        _check_datasets(session, target, obj, datasets)
        _check_webhook(session, names.LABEL_INJECT)
    for attempt in range(CONFLICT_RETRIES):
        plan = _plan(target, obj, datasets, fuse, remove)
        if dry_run == "client":
            _warn_absent(target, plan, datasets if remove else [])
            _report(target, plan, "(dry run)")
            _print_dry_run(target, obj, plan.patch(target.kind.template_path), output)
            return obj
        if plan.changes:
            params = {"dryRun": "All"} if dry_run == "server" else None
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            try:
                obj = session.api.request(
                    "PATCH",
                    resource.object_path(session.namespace, target.name),
                    params=params,
                    body=plan.patch(target.kind.template_path, rv),
                    content_type=MERGE_PATCH,
                )
            except ApiError as e:
                if e.code == 409 and attempt + 1 < CONFLICT_RETRIES:
                    obj = _read(session, target)  # changed meanwhile: plan again on what is there now
                    continue
                raise
        break
    _warn_absent(target, plan, datasets if remove else [])
    if output in ("json", "yaml"):
        write(dump(obj, output))
    elif output == "name":
        write(f"{target}\n")
    else:
        _report(target, plan, "(server dry run)" if dry_run == "server" else "", stream=sys.stdout)
    return obj


def _print_dry_run(target: Target, obj: dict[str, Any], patch: dict[str, Any], output: str | None) -> None:
    """The patch itself, or with -o json|yaml the object as it would be (kubectl's -o with --dry-run)."""
    from kubectl_fluid.cli.injection import merge_patch
    from kubectl_fluid.cli.output import dump, write

    if output == "name":
        write(f"{target}\n")
    else:
        write(dump(merge_patch(obj, patch) if output else patch, output or "json"))


def _warn_absent(target: Target, plan: Plan, removing: list[str]) -> None:
    from kubectl_fluid.cli.output import warn

    absent = sorted(set(removing) - set(plan.before))
    if absent:
        warn(f"{target} does not name {', '.join(absent)}; nothing to remove for them")


def _report(target: Target, plan: Plan, suffix: str, stream: Any = None) -> None:
    """``deployment.apps/x patched`` and one line per change, as a person reads them. A dry run
    writes them to stderr: its stdout is the patch alone, for a pipe."""
    stream = stream or sys.stderr
    verb = "patched" if plan.changes else "patched (no change)"
    stream.write(" ".join(filter(None, (f"{target} {verb}", suffix))) + "\n")
    for change in plan.changes:
        stream.write(f"  {change.describe()}\n")


def _wait(session: Session, target: Target, obj: dict[str, Any], timeout: float) -> None:
    from kubectl_fluid.cli.output import warn
    from kubectl_fluid.cli.rollout import NO_ROLLOUT_KINDS, follow

    kind = target.kind.resource.kind
    if kind in NO_ROLLOUT_KINDS:
        when = "its next Jobs" if kind == "CronJob" else "it runs"
        warn(f"{target} has no rollout to wait for: pods created when {when} get the change")
        return
    path = target.kind.resource.object_path(session.namespace, target.name)
    failed_create = None if kind == "Deployment" else _failed_creates(session, obj)
    follow(
        kind,
        lambda: session.api.get(path),
        timeout=timeout,
        what=str(target),
        namespace=session.namespace,
        failed_create=failed_create,
    )


def _failed_creates(session: Session, obj: dict[str, Any]) -> Callable[[], str | None]:
    """The words of a FailedCreate Event of ``obj`` newer than the wait (a StatefulSet's or
    DaemonSet's controller reports a pod it could not create only so; a Deployment has a condition):
    those there already, by name and count, are not news."""
    from kubectl_fluid.cli.eventview import newest
    from kubectl_fluid.kube import resources
    from kubectl_fluid.kube.errors import ApiError

    uid = (obj.get("metadata") or {}).get("uid", "")
    params = {"fieldSelector": f"involvedObject.uid={uid},reason=FailedCreate"}
    path = resources.EVENTS.collection_path(session.namespace)

    def listed() -> list[dict[str, Any]]:
        try:
            return list(session.api.list(path, params))
        except ApiError:
            return []  # not allowed to list Events: the rollout's own status is still followed

    def seen(event: dict[str, Any]) -> tuple[str, Any]:
        return (event.get("metadata") or {}).get("name", ""), event.get("count")

    before = {seen(event) for event in listed()}

    def fresh() -> str | None:
        found = newest([e for e in listed() if seen(e) not in before], ["FailedCreate"], uid)
        return " ".join(str(found.get("message") or "").split()) if found else None

    return fresh
