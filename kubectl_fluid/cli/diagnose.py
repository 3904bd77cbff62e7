"""``kubectl fluid diagnose [dataset DS | pod POD | --all]``: run the rules (``rules/``) over one read of
the cluster (``snapshot.read``) and print what they find, each finding with its stable rule ID, its
severity, the evidence read and what to do. Exit status 1 when any finding is an error, with any
output format: scripts test the status, and still get the report.

The verb is the edge: it picks the scope from the arguments, reads the snapshot, asks the API server
whether it reaches the webhook (``webhookprobe.py``), and prints. The judgement is
``rules.report.run``'s, pure.
"""

from __future__ import annotations

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

TARGETS = ("dataset", "pod")
USAGE = "diagnose takes dataset NAME, pod NAME, --all (-A) or nothing (the namespace)"


def parse_target(what: str | None, name: str | None) -> tuple[str, str] | None:
    """(``dataset`` or ``pod``, its name) from ``dataset DS``, ``dataset/DS``, ``ds DS``…; None for none."""
    if what is None:
        return None
    if name is None and "/" in what:
        what, _, name = what.partition("/")
    word = {"dataset": "dataset", "datasets": "dataset", "pod": "pod", "pods": "pod", "po": "pod"}.get(
        what.lower()
    )
    if word is None or not name or "/" in name:
        raise CliError(f'{USAGE}, not "{" ".join(x for x in (what, name) if x)}"')
    return word, name


@click.command(
    epilog="\b\nExamples:\n  kubectl fluid diagnose dataset demo -n team-a\n"
    "  kubectl fluid diagnose pod app-5d9c7-x2x8v -n team-a\n"
    "  kubectl fluid diagnose --all -o json | jq '.findings[].rule'"
)
@click.argument("what", required=False, metavar="[dataset|pod]", shell_complete=completers.diagnose_targets)
@click.argument("name", required=False, metavar="[NAME]", shell_complete=completers.diagnose_names)
@click.option("--all", "everything", is_flag=True, help="Every namespace (as -A).")
@kube_command(outputs=("json", "yaml"), lists=True)
def diagnose(what: str | None, name: str | None, everything: bool, settings: Settings) -> None:
    """Find what keeps a dataset, or a pod's datasets, from working: each finding with its rule ID.

    With dataset NAME, that Dataset (its CacheRuntime, class, components, DataLoads, the pods using
    it); with pod NAME, the datasets the pod names or mounts, and the pod's injection; with --all
    (or -A), every namespace; with nothing, every dataset of the namespace (-n). The objects are
    read with one list call per kind; a kind that cannot be read (RBAC) is a warning, and the rules
    that need it are skipped and named. Whether the API server reaches the webhook is asked by
    creating a pod labelled fluid.io/inject=true with dryRun=All (nothing is stored).

    \b
    Each finding prints as a block:
      ERROR    rule-id  Kind namespace/name: what is wrong
               evidence: the field, condition or Event read
               → what to do
    and the last line counts them ("2 errors, 1 warning") or says "No problems found.".
    Exit status: 1 when any finding is an error (with -o json|yaml too), else 0.

    \b
    -o json|yaml prints a DiagnoseReport (apiVersion cli.fluid.io/v1alpha1):
      scope       {namespace (null: all), datasets: [ns/name], pod: ns/name}
      findings[]  {rule, severity: error|warning|info, object: {kind, name, namespace},
                   message, evidence: [lines], advice}
      unreadable  {kind: why it could not be read}
      skipped[]   {rule, unreadable: [kinds it needed]}
      summary     {errors, warnings, infos}
    Rule IDs are stable; the README lists them with what provokes each and what to do.
    """
    from kubectl_fluid.cli.output import dump, warn, write
    from kubectl_fluid.cli.rules import all_rules
    from kubectl_fluid.cli.rules.finding import Scope
    from kubectl_fluid.cli.rules.report import render_text, run, to_json, warnings
    from kubectl_fluid.cli.snapshot import read, read_system_pods
    from kubectl_fluid.cli.webhookprobe import probe

    target = parse_target(what, name)
    every = everything or settings.all_namespaces
    if target is not None and every:
        raise CliError(f"{USAGE}: a {target[0]} and --all (-A) do not go together")
    session = settings.open()
    ns = None if every else session.namespace
    with session.api:
        snap = read(session.api, ns)
        read_system_pods(session.api, snap)  # the standalone FUSE pods fuse-pod-not-running looks for
        if target is None:
            scope = Scope(everything=True)
        else:
            kind, obj = target
            found = (
                snap.dataset(session.namespace, obj)
                if kind == "dataset"
                else snap.get("pods", session.namespace, obj)
            )
            if found is None:
                from kubectl_fluid.cli.checks import not_found

                raise CliError(not_found(session.api, f'{kind} "{obj}"', session.namespace))
            scope = (
                Scope(datasets=((session.namespace, obj),))
                if kind == "dataset"
                else Scope(pod=(session.namespace, obj))
            )
        keys = scope.dataset_keys(snap)
        probe(session.api, snap, ns or (keys[0][0] if keys else session.namespace))
    result = run(snap, scope, all_rules())
    for line in warnings(result):
        warn(line)
    if settings.output:
        write(dump(to_json(result), settings.output))
    else:
        write(render_text(result))
    if result.failed:
        click.get_current_context().exit(1)
