"""``kubectl fluid inspect dataset DS`` (or ``dataset/DS``): one view of everything a dataset is right
now, as a tree (default), a wide tree, or a ``DatasetInspection`` object (-o json|yaml).

The verb reads: one list per kind in the namespace (``snapshot.read()``), never a request per
object, so a dataset with a thousand pods costs the same dozen requests as one with none. The model
and its renderings are ``inspectview.py``'s.
"""

from __future__ import annotations

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.datasetnames import DATASET_WORDS
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

USAGE = "inspect takes a dataset, as dataset DS or dataset/DS"
# What the verb lists (``snapshot.KINDS``' names): a dataset's parts, and no more.
KINDS = (
    "datasets",
    "cacheruntimes",
    "cacheruntimeclasses",
    "configmaps",
    "persistentvolumeclaims",
    "persistentvolumes",
    "statefulsets",
    "daemonsets",
    "pods",
    "fusemounts",
    "dataloads",
)
EPILOG = """\b
Examples:
  kubectl fluid inspect dataset ds1 -n team-a
  kubectl fluid inspect dataset/ds1 -o wide
  kubectl fluid inspect dataset ds1 -o json | jq '.appPods | length'
"""


def parse_target(kind: str, name: str | None) -> str:
    """The dataset's name from ``dataset DS`` or ``dataset/DS``; an error for anything else."""
    from kubectl_fluid.cli.errors import CliError

    word, slash, rest = kind.partition("/")
    if slash and name is not None:
        raise CliError(f'{USAGE}, not "{kind} {name}"')
    if word.lower() not in DATASET_WORDS:
        raise CliError(f'{USAGE}, not "{kind}"')
    found = rest if slash else name
    if not found:
        raise CliError(f"{USAGE}: which dataset? (kubectl fluid datasets lists them)")
    return found


@click.command(epilog=EPILOG)
@click.argument("kind", metavar="dataset[/DS]", shell_complete=completers.inspected)
@click.argument("name", metavar="[DS]", required=False, shell_complete=completers.inspected_name)
@kube_command(outputs=("tree", "wide", "json", "yaml"))
def inspect(kind: str, name: str | None, settings: Settings) -> None:
    """Show everything a dataset consists of right now, as a tree.

    One line per object with its state: the Dataset's phase and conditions; its CacheRuntime, class,
    and each component (master, worker, client: ready/desired of its StatefulSet or DaemonSet, its
    pods per node); the runtime config ConfigMap (keys, their sizes, when it last changed); the PVC
    and PV; the FuseMounts serving it per node (phase, mode, references, targets, why Broken); its
    DataLoads; and the app pods that use it (injected with its runtime config, or mounting its PVC).
    A part that is not there says "not found"; a disabled component (a clientless runtime's client)
    says so.

    \b
    -o tree   (default) more than 20 pods under one object are summed per node
    -o wide   every pod listed, condition messages, the FUSE targets, the mount points
    -o json|yaml prints a DatasetInspection (apiVersion cli.fluid.io/v1alpha1, the plugin's own: no
              API server serves it): metadata {name, namespace, creationTimestamp} as the Dataset's;
              dataset {phase, conditions, mountPoints}; runtime {name, found, runtimeClass,
              runtimeClassFound, fileSystemType, ready}; components[] {component, kind, name, found,
              disabled, desired, ready, phase, pods}; configMap {name, found, keys[] {name, size},
              lastChange, resourceVersion}; persistentVolumeClaim {name, found, phase, volumeName};
              persistentVolume {name, found, phase, claim}; fuseMounts[] {name, node, mode, refCount,
              targets, phase, reason, podName}; dataLoads[] {name, phase, duration}; appPods[] {name,
              node, status, ready, via: injected|pvc}; unreadable {kind: why}. A pod is
              {name, node, status, ready}; found is null and a list null where the kind could not be
              read.

    Reads with one list per kind (Datasets, CacheRuntimes, CacheRuntimeClasses, ConfigMaps, PVCs,
    PVs, StatefulSets, DaemonSets, Pods, FuseMounts, DataLoads), never one request per object. Only
    the Datasets are required: a list RBAC forbids shows as <unknown>, with a warning naming it.
    """
    from datetime import UTC, datetime

    from kubectl_fluid.cli import snapshot
    from kubectl_fluid.cli.checks import not_found
    from kubectl_fluid.cli.datasetnames import checked_dataset
    from kubectl_fluid.cli.errors import CliError
    from kubectl_fluid.cli.inspectview import inspect as build
    from kubectl_fluid.cli.inspectview import render_tree, tree
    from kubectl_fluid.cli.output import dump, warn, write

    dataset = checked_dataset(parse_target(kind, name))
    session = settings.open()
    ns = session.namespace
    with session.api:
        snap = snapshot.read(session.api, ns, KINDS)
        found = build(snap, ns, dataset)
        if found is None:
            hint = "check the name, or find its namespace with kubectl fluid datasets -A"
            raise CliError(not_found(session.api, f'dataset "{dataset}"', ns, hint))
    for unread, why in sorted(snap.unreadable.items()):
        warn(f"cannot list {unread} ({why}): shown as <unknown>")
    if settings.output in ("json", "yaml"):
        write(dump(found.to_json(), settings.output))
    else:
        write(render_tree(tree(found, datetime.now(UTC), wide=settings.output == "wide")))
