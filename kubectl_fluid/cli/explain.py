"""``kubectl fluid explain pod/NAME`` or ``deploy/NAME``: was the pod injected, from which datasets,
and if not, why; for a workload, the same of its newest pods, or why it has none.

The verb and the names it takes live here; what it reads of a pod is ``explainpod.py``'s, of a
workload ``explainworkload.py``'s, and the judgements are pure (``diagnosis.py``,
``workloadreport.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

if TYPE_CHECKING:
    from kubectl_fluid.cli.workloads import Kind

POD_WORDS = ("pod", "po", "pods")
USAGE = "explain takes pods and workloads, as pod/NAME or deploy|sts|ds|job|cronjob|rs/NAME"


def _kind(word: str) -> Kind | None:
    """None for a pod; the workload kind ``word`` names; an error for anything else."""
    from kubectl_fluid.cli.workloads import EXPLAINED_KINDS, lookup

    if word.lower() in POD_WORDS or word.lower() == "pod.v1":
        return None
    kind = lookup(word, EXPLAINED_KINDS)
    if kind is None:
        raise CliError(f'{USAGE}, not "{word}"')
    return kind


def _is_type(word: str) -> bool:
    from kubectl_fluid.cli.workloads import EXPLAINED_KINDS, lookup

    return word.lower() in POD_WORDS or lookup(word, EXPLAINED_KINDS) is not None


def parse_names(args: tuple[str, ...] | list[str]) -> list[tuple[Kind | None, str]]:
    """What to explain, as kubectl reads names: ``pod/A deploy/B``, ``TYPE A B`` or bare pod names
    (a first word that names no type is a pod's, as this verb always read it).
    Each is (its workload kind, or None for a pod; its name), once, in the order given."""
    if args and "/" not in args[0] and len(args) > 1 and _is_type(args[0]):
        kind = _kind(args[0])
        found = [(kind, name) for name in args[1:]]
    else:
        found = []
        for arg in args:
            word, slash, name = arg.rpartition("/") if "/" in arg else ("pod", "", arg)
            if slash and "/" in word:
                raise CliError(f'{USAGE}, not "{arg}"')
            found.append((_kind(word), name))
    for _, name in found:
        if not name or "/" in name:
            raise CliError(f'{USAGE}, not "{"/".join(args)}"')
    return list(dict.fromkeys(found))


@click.command(
    epilog="\b\nExamples:\n  kubectl fluid explain pod/app-5d9c7-x2x8v -n team-a\n"
    "  kubectl fluid explain deploy/app -n team-a"
)
@click.argument("name", nargs=-1, required=True, shell_complete=completers.explained)
@kube_command(outputs=("json", "yaml", "name"))
def explain(name: tuple[str, ...], settings: Settings) -> None:
    """Say whether a pod was injected, and why not; or a workload's pods.

    NAME is pod/NAME (or NAME), or a workload: deploy|sts|ds|job|cronjob|rs/NAME, whose newest pods
    are explained (found by its selector); when it has none, the newest FailedCreate Event of what
    creates them (a Deployment's ReplicaSet) says why, the webhook's denial included. Several names
    are explained one after the other (-o json|yaml: a List). Reads the pod, its PVCs (and their PVs
    and StorageClasses), its controllers, its Events while it is Pending, the webhook configuration
    and the datasets it names.

    \b
    Pod:        namespace/name
    What:       the product's own pods only: a CacheRuntime's master, worker or
                client, or fluid-system's controller, webhook, CSI or FUSE pod
                (injection does not apply)
    Injected:   yes: the datasets whose runtime config it carries; yes, the FUSE
                path (mount propagation on its FUSE PVCs); or no
    Requested:  the datasets its annotation fluid.io/dataset names
    From PVCs:  datasets of the Fluid PVCs it mounts
    FUSE PVCs:  PVCs it mounts through curvine.csi.fluid.io (inject --fuse)
    Owner:      the workload to inject (its Deployment, not its ReplicaSet)
    Mounting:   while it is Pending, kubelet's newest FailedMount or
                FailedAttachVolume Event (a clientless dataset's PVC is refused)
    Why not:    each reason, with what to do (a missing label, a dataset not ready,
                a namespace the webhook skips, no webhook configuration...)
    What RBAC forbids reading is left out of the judgement, and said.

    \b
    A workload prints, before its pods as above:
    Workload:   namespace/kind/name
    Creator:    what creates its pods (a Deployment's ReplicaSet, a CronJob's Job)
    Pods:       how many it has; the newest 3 are explained
    Why not:    when it has none: the newest FailedCreate Event's words
    """
    from kubectl_fluid.cli.diagnosis import Explanation, describe, diagnose
    from kubectl_fluid.cli.explainpod import gather
    from kubectl_fluid.cli.explainworkload import gather_workload
    from kubectl_fluid.cli.output import as_list, dump, write
    from kubectl_fluid.cli.workloadreport import describe_workload, explain_workload

    targets = parse_names(name)
    session = settings.open()
    with session.api:
        explanations = [
            diagnose(gather(session, n))
            if kind is None
            else explain_workload(gather_workload(session, kind, n))
            for kind, n in targets
        ]
    if settings.output == "name":
        write("".join(f"{kind.display if kind else 'pod'}/{n}\n" for kind, n in targets))
    elif settings.output:
        reports = [e.to_json() for e in explanations]
        write(dump(reports[0] if len(reports) == 1 else as_list(reports), settings.output))
    else:
        write(
            "\n".join(
                describe(e) if isinstance(e, Explanation) else describe_workload(e) for e in explanations
            )
        )
