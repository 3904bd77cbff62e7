"""``kubectl fluid mounts`` (SPEC §6): the FUSE mounts of the CSI driver, one row per (node, mount key),
from the FuseMount objects its node services publish.

``-o wide`` adds the staged volumes, the number of publish targets and the pods behind them (pods
are matched by UID among the pods of the mounts' nodes; a pod that cannot be read shows its UID), and
the reason a mount is Broken or Unknown. Mounts whose node is lost (PHASE Unknown: the controller says
nobody reports them) are summed up in a warning on stderr, as the stand-in's are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

HEADERS = ("NODE", "MOUNT-KEY", "MASTER-ADDRS", "FS-PATH", "MODE", "REFS", "PHASE", "AGE")
# REASON last: it is a sentence (why a mount is Broken), as kubectl puts MESSAGE last.
WIDE_HEADERS = (*HEADERS, "PROGRAM", "VOLUMES", "TARGETS", "PODS", "REASON")


def _spec(fm: Mapping[str, Any]) -> Mapping[str, Any]:
    return fm.get("spec") or {}


def _status(fm: Mapping[str, Any]) -> Mapping[str, Any]:
    return fm.get("status") or {}


def short_key(mount_key: str) -> str:
    """The mount key as FuseMount names show it (its first 16 hex digits)."""
    from kubectl_fluid.api import names

    return mount_key[: names.FUSE_MOUNT_KEY_PREFIX_LENGTH]


def select(items: Sequence[Mapping[str, Any]], node: str | None) -> list[Mapping[str, Any]]:
    """Mounts of ``node`` (all without), ordered by node then mount key. The label selector sent to
    the server narrows the list; this check is exact where a long node name made the label shorter."""
    chosen = [fm for fm in items if node is None or _spec(fm).get("nodeName") == node]
    return sorted(
        chosen, key=lambda fm: (str(_spec(fm).get("nodeName", "")), str(_spec(fm).get("mountKey", "")))
    )


def pod_uids(fm: Mapping[str, Any]) -> list[str]:
    uids = []
    for volume in _status(fm).get("volumes") or ():
        for target in volume.get("targets") or ():
            uid = target.get("podUID")
            if uid and uid not in uids:
                uids.append(str(uid))
    return uids


def program_cell(spec: Mapping[str, Any], status: Mapping[str, Any] | None = None) -> str | None:
    """The FUSE program's short name, marked when it is the test bed's stand-in; None for objects
    of a node service older than the field. Mode client: the runtime's client pod that serves it."""
    from kubectl_fluid.api import names

    if spec.get("mode") == names.CLIENT_MODE:
        pod = (status or {}).get("podName")
        return f"client-pod:{pod}" if pod else "client-pod"
    program = spec.get("program")
    if not program:
        return None
    short = names.fuse_program_name(str(program))
    return f"{short}(stand-in)" if names.is_fuse_standin(str(program)) else short


def _client_of(spec: Mapping[str, Any]) -> str | None:
    dataset = spec.get("dataset") or {}
    return f"client:{dataset.get('namespace')}/{dataset.get('name')}" if dataset else None


def standin_nodes(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The nodes whose mounts the stand-in serves."""
    from kubectl_fluid.api import names

    return sorted(
        {
            str(_spec(fm).get("nodeName"))
            for fm in items
            if names.is_fuse_standin(str(_spec(fm).get("program") or ""))
        }
    )


def unknown_nodes(items: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The nodes with mounts in phase Unknown (their node lost), and how many each."""
    counts: dict[str, int] = {}
    for fm in items:
        if _status(fm).get("phase") == "Unknown":
            node = str(_spec(fm).get("nodeName"))
            counts[node] = counts.get(node, 0) + 1
    return dict(sorted(counts.items()))


def row(
    fm: Mapping[str, Any], now: datetime, wide: bool = False, pods: Mapping[str, str] | None = None
) -> list[str]:
    from kubectl_fluid.cli.table import age, cell

    spec, status = _spec(fm), _status(fm)
    cells = [
        cell(spec.get("nodeName")),
        cell(short_key(str(spec.get("mountKey") or ""))),
        # Mode client: the client reads its masters from the runtime config; the Dataset is named.
        cell(spec.get("masterAddrs") or _client_of(spec)),
        cell(spec.get("fsPath")),
        cell(spec.get("mode")),
        str(int(status.get("refCount") or 0)),
        cell(status.get("phase")),
        age((fm.get("metadata") or {}).get("creationTimestamp"), now),
    ]
    if wide:
        volumes = status.get("volumes") or []
        targets = sum(len(v.get("targets") or []) for v in volumes)
        names_by_uid = pods or {}
        cells += [
            cell(program_cell(spec, status)),
            cell(",".join(str(v.get("volumeID", "")) for v in volumes)),
            str(targets),
            cell(",".join(names_by_uid.get(uid, uid) for uid in pod_uids(fm))),
            cell(status.get("reason")),
        ]
    return cells


@click.command(epilog="\b\nExamples:\n  kubectl fluid mounts\n  kubectl fluid mounts --node node-1 -o wide")
@click.option("--node", metavar="NODE", shell_complete=completers.nodes, help="Only the mounts of this node.")
@kube_command(outputs=("json", "yaml", "wide", "name"), lists=True)
def mounts(node: str | None, settings: Settings) -> None:
    """List the shared FUSE mounts per node.

    One row per node and mount key, with its reference count (staged volumes) and phase.

    \b
    NODE          the node the CSI node service runs on
    MOUNT-KEY     the first 16 characters of the mount key (master-addrs + fs-path + tuning)
    MASTER-ADDRS  the Curvine masters; client:NS/NAME for a Dataset's PV, whose FUSE is its
                  runtime's client pod
    FS-PATH       the path in Curvine that the FUSE mounts
    MODE          embedded (FUSE in the node service), standalone (a FUSE pod) or client (the
                  runtime's client pod, on the node by the label fluid.io/f-NS-NAME)
    REFS          volumes staged on it; at 0 the FUSE mount is taken down (client: the node label,
                  under the runtime's cleanPolicy OnDemand)
    PHASE         Mounting, Ready, Broken or Unmounting. A FUSE that died is started again and
                  its targets bound again; a Broken mount is left as it is: REASON says why
                  and what to do (its fs-path gone, its FUSE not answering). A Ready mount has a
                  REASON when a pod still shows the FUSE that was replaced (its volume mounted
                  without HostToContainer propagation): delete that pod. Unknown: its node is
                  NotReady or gone, so nothing reports the mount; REASON says since when and
                  its last known phase, and it comes back when the node does
    -o wide adds PROGRAM (the FUSE program that serves the mount, "(stand-in)" for the test bed's
    curvine-fuse-standin, which serves a node directory and is warned about; client-pod:NAME),
    VOLUMES (their IDs), TARGETS (bind mounts into pods), PODS and REASON.

    FuseMount objects are cluster-scoped: -n and -A are accepted and change nothing.
    Needs: list on fusemounts.data.fluid.io (and, for -o wide, list on pods).
    """
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.output import as_list, dump, nothing_found, write
    from kubectl_fluid.cli.table import render
    from kubectl_fluid.kube import resources

    session = settings.open()
    params = {"labelSelector": names.fuse_mount_node_selector(node)} if node else None
    with session.api:
        items = select(session.api.list(resources.FUSEMOUNTS.collection_path(), params), node)
        output = settings.output
        if output in ("json", "yaml"):
            write(dump(as_list(items), output))
            return
        if not items:
            nothing_found(None)
            return
        _warn_standin(items)
        _warn_unknown(items)
        if output == "name":
            write("".join(f"fusemount.{names.GROUP}/{fm['metadata']['name']}\n" for fm in items))
            return
        wide = output == "wide"
        pods = _pods_by_uid(session.api, items) if wide else {}
    now = datetime.now(UTC)
    rows = [row(fm, now, wide, pods) for fm in items]
    write(render(WIDE_HEADERS if wide else HEADERS, rows, settings.no_headers))


def _warn_standin(items: Sequence[Mapping[str, Any]]) -> None:
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.output import warn

    nodes = standin_nodes(items)
    if nodes:
        warn(
            f"the mounts of node(s) {', '.join(nodes)} are served by {names.FUSE_STANDIN_PROGRAM}, the test "
            "bed's stand-in: it serves a directory of the node, not a Curvine cache (no default install "
            "runs it)"
        )


def _warn_unknown(items: Sequence[Mapping[str, Any]]) -> None:
    from kubectl_fluid.cli.output import warn

    nodes = unknown_nodes(items)
    if nodes:
        counted = ", ".join(f"{node} ({n})" for node, n in nodes.items())
        warn(
            f"the mounts of node(s) {counted} are Unknown: their node is NotReady or gone and nothing "
            "reports them; they are shown as last known (-o wide's REASON says since when)"
        )


def _pods_by_uid(api: Any, items: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``namespace/name`` of the pods behind the targets, read per node (the way ``kubectl describe
    node`` finds a node's pods). Without the right to list pods, UIDs are shown instead."""
    from kubectl_fluid.cli.output import warn
    from kubectl_fluid.kube import resources
    from kubectl_fluid.kube.errors import ApiError

    wanted = {uid for fm in items for uid in pod_uids(fm)}
    found: dict[str, str] = {}
    for node in sorted({str(_spec(fm).get("nodeName")) for fm in items if pod_uids(fm)}):
        try:
            pods = api.list(resources.PODS.collection_path(), {"fieldSelector": f"spec.nodeName={node}"})
        except ApiError as e:
            warn(f"cannot list the pods of node {node} ({e.reason or e.code}); PODS shows their UIDs")
            continue
        for pod in pods:
            meta = pod.get("metadata") or {}
            if meta.get("uid") in wanted:
                found[meta["uid"]] = f"{meta.get('namespace')}/{meta.get('name')}"
    return found
