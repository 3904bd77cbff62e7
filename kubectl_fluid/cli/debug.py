"""``kubectl fluid debug pod POD``: walk one pod to what serves it (its PVCs to their PV, Dataset and
the FUSE on its node; its injected datasets to their ConfigMap and runtime), the node and the CSI
driver there, its Events; tail the logs that matter (the FUSE pod or client on its node, the node's CSI
pod, the webhook for an injection); end with ``Failed reason: …`` or ``OK``.

The edge: one snapshot of the pod's namespace (``snapshot.read``), fluid-system's pods (one list),
explain pod's facts (``explainpod.gather``), the logs. The walk, the rules and the pick of the cause
are pure (``podwalk.py``, ``rules/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from kubectl_fluid.cli.podwalk import LogSource, Walk
    from kubectl_fluid.cli.settings import Session

POD_WORDS = ("pod", "po", "pods")
DEFAULT_TAIL = 20


def _types(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    return [CompletionItem("pod")] if "pod".startswith(incomplete) else []


@click.command(
    epilog="\b\nExamples:\n  kubectl fluid debug pod app-5d9c7-x2x8v -n team-a\n"
    "  kubectl fluid debug pod app-5d9c7-x2x8v --tail 50"
)
@click.argument("kind", metavar="pod", shell_complete=_types)
@click.argument("name", metavar="POD", shell_complete=completers.pod_names)
@click.option(
    "--tail",
    default=DEFAULT_TAIL,
    show_default=True,
    type=click.IntRange(min=0),
    help="Log lines to show of each pod whose log matters (0: none).",
)
@kube_command(outputs=("json", "yaml"))
def debug(kind: str, name: str, tail: int, settings: Settings) -> None:
    """Walk a pod to the objects, node, FUSE and logs behind it; name what fails.

    \b
    Pod:        namespace/name
    Phase:      the pod's phase and node
    Node:       Ready or not
    CSI:        whether curvine.csi.fluid.io is registered on the node (its
                CSINode) and the node's CSI pod
    Volumes:    each PVC → its PV (and driver) → its Dataset
    FUSE:       the FuseMounts serving the pod on its node (mode, phase, reason)
    Clients:    a PVC's dataset's client pod on the node, or that there is none
    Datasets:   injected or asked-for datasets → Dataset, ConfigMap, CacheRuntime
    Events:     the pod's newest Warning Events (FailedMount...)
    Findings:   every error of diagnose's rules on the pod, and explain's judgement
    Log ...:    the last --tail lines of the FUSE pod or client, the node's CSI
                pod and, for an injection not made, the webhook (of the previous
                run too when a container restarted)
    Failed reason: [rule-id] the most causal finding; or OK
    (-o json|yaml: the same as a DebugReport object.)

    The cause is picked by layer, lowest first: node, CSI, FUSE/client, runtime, dataset, injection
    (a fault below shows as symptoms above). A pod that does not exist is looked for among what
    creates pods (ReplicaSet, Job, StatefulSet, DaemonSet named as its prefix): their FailedCreate
    Event carries why, an admission webhook's denial included. Exit status 1 with a Failed reason
    (as diagnose exits 1 on an error), 0 with OK.
    """
    if kind.lower() not in POD_WORDS:
        raise CliError(f'debug takes a pod: kubectl fluid debug pod NAME, not "{kind}"')
    from kubectl_fluid.cli.output import dump, write
    from kubectl_fluid.cli.podwalk import render, to_json

    session = settings.open()
    with session.api:
        walk, logs = _debug(session, name, tail)
    write(dump(to_json(walk, logs), settings.output) if settings.output else render(walk, logs))
    if walk.failed is not None:
        raise SystemExit(1)


def _debug(session: Session, name: str, tail: int) -> tuple[Walk, dict[LogSource, str]]:
    from kubectl_fluid.cli import snapshot
    from kubectl_fluid.cli.checks import not_found
    from kubectl_fluid.cli.diagnosis import diagnose
    from kubectl_fluid.cli.explainpod import gather
    from kubectl_fluid.cli.podwalk import never_created, walk
    from kubectl_fluid.cli.rules import all_rules
    from kubectl_fluid.cli.rules.finding import Scope
    from kubectl_fluid.cli.rules.report import run
    from kubectl_fluid.cli.snapshot import NOT_PROBED, PROBE

    api, ns = session.api, session.namespace
    snap = snapshot.read(api, ns)
    snap.unreadable.setdefault(PROBE, NOT_PROBED)  # debug only reads: the webhook probe is diagnose's
    system_pods = snapshot.read_system_pods(api, snap)  # the FUSE pods the rules look for
    pod = snap.get("pods", ns, name)
    if pod is None:
        result = never_created(snap, ns, name, system_pods or [])
        if result is None:
            raise CliError(not_found(api, f'pod "{name}"', ns))
    else:
        scope = Scope(pod=(ns, name))
        # As diagnose runs them: a rule whose kinds could not be read is skipped, never run blind.
        findings = run(snap, scope, all_rules()).findings
        explanation = diagnose(gather(session, name, pod))
        result = walk(snap, pod, system_pods or [], findings, explanation)
    logs = {source: _log(session, source, tail) for source in result.logs} if tail else {}
    return result, logs


def _log(session: Session, source: LogSource, tail: int) -> str:
    """The last ``tail`` lines of the source's log, or why they cannot be read (in brackets)."""
    from kubectl_fluid.kube import resources
    from kubectl_fluid.kube.errors import ApiError, Unreachable
    from kubectl_fluid.redact import redact

    params = {"tailLines": str(tail)}
    if source.container:
        params["container"] = source.container
    if source.previous:
        params["previous"] = "true"
    try:
        text = session.api.text(resources.pod_log_path(source.namespace, source.pod), params)
    except (ApiError, Unreachable) as e:
        return f"<no log: {e}>\n"
    # Printed, and in -o json pasted where help is asked: masked as bundle masks the same logs.
    return redact(text)
