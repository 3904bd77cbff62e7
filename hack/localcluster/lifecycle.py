"""The cluster as a whole: ``up`` (the control plane with its kwok nodes, reused when healthy),
``down`` (everything recorded in the state dir: real nodes, the product's processes, FUSE mounts,
Curvine, then the API server and etcd), ``status``, and ``running`` for a ``with`` block.

``down`` and ``status`` need only the standard library; ``up`` also needs ``cryptography`` (the PKI).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from localcluster import controlplane, mounts, realnodes
from localcluster.state import (
    CSI_CONTROLLER_DIR,
    CURVINE_DIR,
    CURVINE_PROCS,
    HOSTS_FILE,
    NODES_DIR,
    STATE_FILE,
    USERS_CLUSTER_MARKER,
    Cluster,
    free_ports,
    log,
    stop,
)


def up(state_dir: Path, n_nodes: int, bin_dir: str | None) -> Cluster:
    t0 = time.monotonic()
    existing = Cluster.load(state_dir)
    if existing is not None:
        if controlplane.healthy(existing):
            log(f"cluster already running at {existing.server}; KUBECONFIG={existing.kubeconfig}")
            return existing
        log("a previous cluster in this state dir is not healthy; stopping what is left of it")
        down(state_dir)

    bins = bin_dir or controlplane.build_bins(kwok=n_nodes > 0)
    state_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("pki", "logs"):
        shutil.rmtree(state_dir / stale, ignore_errors=True)
    (state_dir / HOSTS_FILE).unlink(missing_ok=True)
    cluster = Cluster(
        state_dir=state_dir,
        bin_dir=bins,
        etcd_data_dir=tempfile.mkdtemp(prefix="kubectl-fluid-etcd-"),
        ports=free_ports(["etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok"]),
        nodes=[f"kwok-node-{i}" for i in range(n_nodes)],
    )
    cluster.save()
    try:
        controlplane.start_control_plane(cluster)
    except BaseException:
        down(state_dir)
        raise
    log(f"ready in {time.monotonic() - t0:.1f}s: {len(cluster.nodes)} nodes; KUBECONFIG={cluster.kubeconfig}")
    return cluster


def down(state_dir: Path) -> None:
    cluster = Cluster.load(state_dir)
    if cluster is None:
        log(f"no cluster recorded in {state_dir}")
        return
    # Real nodes first: their containers are stopped through their own runtime, which must be up.
    realnodes.stop_all(cluster)
    # Clients of the API server first, together (each takes ~2 s to shut down gracefully); then the API
    # server, which waits on etcd while shutting down if etcd goes at the same time; then etcd.
    storage = ("kube-apiserver", "etcd")
    stop([p for p in cluster.procs if p.name not in (*storage, *CURVINE_PROCS)])
    mounts.release_node_mounts(state_dir / NODES_DIR)
    mounts.release_node_mounts(state_dir / CSI_CONTROLLER_DIR)
    for name in CURVINE_PROCS:
        stop([p for p in cluster.procs if p.name == name], grace=0 if name == "curvine-worker" else 15)
    shutil.rmtree(state_dir / CURVINE_DIR, ignore_errors=True)
    for name in storage:
        stop([p for p in cluster.procs if p.name == name])
    if cluster.etcd_data_dir:
        shutil.rmtree(cluster.etcd_data_dir, ignore_errors=True)
    shutil.rmtree(cluster.pki, ignore_errors=True)
    cluster.kubeconfig.unlink(missing_ok=True)
    (state_dir / HOSTS_FILE).unlink(missing_ok=True)
    # Logs stay for post-mortems; the next `up` replaces them.
    (state_dir / STATE_FILE).unlink(missing_ok=True)
    (state_dir / USERS_CLUSTER_MARKER).unlink(missing_ok=True)
    log("stopped")


def status(state_dir: Path) -> int:
    cluster = Cluster.load(state_dir)
    if cluster is None:
        print(f"no cluster recorded in {state_dir}")
        return 1
    for proc in cluster.procs:
        print(f"{proc.name:<26} pid {proc.pid:<8} {'running' if proc.alive() else 'GONE'}")
    ok = controlplane.healthy(cluster)
    print(f"api server {cluster.server}: {'ready' if ok else 'NOT READY'}")
    print(f"KUBECONFIG={cluster.kubeconfig}")
    return 0 if ok else 1


@contextlib.contextmanager
def running(state_dir: Path, n_nodes: int = 2) -> Iterator[Cluster]:
    """A cluster for the length of a ``with`` block (the e2e fixture's private cluster)."""
    cluster = up(state_dir, n_nodes, None)
    try:
        yield cluster
    finally:
        down(state_dir)
