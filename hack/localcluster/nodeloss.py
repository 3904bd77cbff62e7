"""A real node lost and brought back, as a node is in a cluster (realnodes.py): ``lose`` kills its
kubelet and containerd with SIGKILL, as a crashed host's are gone without a word; the containers keep
running under their shims, as they do when only the node's agents die. The Node goes NotReady once
kube-controller-manager's grace period passes without a heartbeat. ``revive`` starts containerd and
kubelet again on the node's own folders, configuration and certificates: containerd finds its running
containers through their shims, kubelet adopts them, and the Node is Ready again.

A node's agents restart in the host's mount namespace, where its pods' mounts are. Here that is the
node's own namespace (nodeview.py), which the shims and containers keep alive: ``revive`` starts
containerd there again (a fresh view would hold the pods' volumes twice, once through the node's
shared folder and once through the view, and kubelet could never remove one: ``unlinkat …: device or
resource busy`` on every teardown). Only where nothing of the node lives on does it make a new one.

The node's coredns stays: it stands for the cluster's DNS, which a node's loss does not take.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from localcluster import realnodes, state
from localcluster.state import Cluster, log

AGENTS = ("kubelet", "containerd")
# The node's mount namespace, as lose() found it (its record's folder).
NAMESPACE_FILE = "lost-mount-namespace"


def lose(cluster: Cluster, node: realnodes.RealNode) -> None:
    """SIGKILL to the node's kubelet and containerd; they are forgotten by the cluster's record."""
    names = {f"{agent}-{node.name}" for agent in AGENTS}
    procs = [p for p in cluster.procs if p.name in names]
    for proc in procs:
        if proc.name.startswith("containerd-") and proc.alive():
            with contextlib.suppress(OSError):
                namespace = os.readlink(f"/proc/{proc.pid}/ns/mnt")
                (Path(node.record) / NAMESPACE_FILE).write_text(namespace + "\n")
    for proc in procs:
        if proc.alive():
            log(f"killing {proc.name} (pid {proc.pid}) with SIGKILL: {node.name} is lost")
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(p.alive() for p in procs) and time.monotonic() < deadline:
        for proc in procs:
            state.reap(proc.pid)
        time.sleep(0.05)
    cluster.procs = [p for p in cluster.procs if p not in procs]
    cluster.save()


def revive(cluster: Cluster, node: realnodes.RealNode, timeout: float = realnodes.READY_TIMEOUT) -> float:
    """containerd and kubelet started again as ``realnodes.start`` started them; the seconds until
    the Node is Ready. The lost agents' logs are kept beside the new ones (``*.lost.log``)."""
    t0 = time.monotonic()
    bins = realnodes.node_bins()
    for agent in AGENTS:
        log_file = cluster.logs / f"{agent}-{node.name}.log"
        if log_file.exists():
            log_file.replace(log_file.with_suffix(".lost.log"))
    env = {"PATH": f"{bins}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
    member = namespace_member(node)
    if member is None:
        log(f"nothing of {node.name}'s mount namespace lives on: containerd starts in a new view")
        command = realnodes.containerd_command(node, bins)
    else:
        command = [
            "nsenter", f"--mount=/proc/{member}/ns/mnt", "--",
            str(bins / "containerd"), f"--config={node.root / 'containerd' / 'config.toml'}",
        ]  # fmt: skip
    containerd = state.start(cluster, f"containerd-{node.name}", command, env=env)
    state.wait_for(
        f"containerd of {node.name}",
        lambda: realnodes.ctr(bins, node, "version").returncode == 0,
        cluster,
        30,
        [f"containerd-{node.name}"],
    )
    state.start(
        cluster, f"kubelet-{node.name}", realnodes.kubelet_command(node, bins, containerd.pid), env=env
    )
    state.wait_for(
        f"real node {node.name} Ready again",
        lambda: realnodes.node_ready(cluster, node.name),
        cluster,
        timeout,
        [f"containerd-{node.name}", f"kubelet-{node.name}"],
    )
    seconds = time.monotonic() - t0
    log(f"real node {node.name} back and Ready in {seconds:.1f}s")
    return seconds


def namespace_member(node: realnodes.RealNode) -> int | None:
    """A live process of the node's mount namespace as ``lose`` left it (a shim, a container)."""
    try:
        namespace = (Path(node.record) / NAMESPACE_FILE).read_text().strip()
    except OSError:
        return None
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "mnt") == namespace:
                    return int(entry.name)
    return None
