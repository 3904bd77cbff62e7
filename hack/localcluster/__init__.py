"""The local cluster (``make up``, ``make demo``, the e2e suite's private clusters): a real Kubernetes
control plane as local processes, its nodes, and the product and its peers run on it.

The surface, what ``import localcluster`` gives:

    up(state_dir, n_nodes, bin_dir) -> Cluster    the control plane and its kwok nodes (reused if healthy)
    down(state_dir)                               everything recorded in the state dir, stopped and removed
    status(state_dir) -> int                      what runs, and whether the API server is ready
    running(state_dir, n_nodes)                   a cluster for the length of a ``with`` block
    locked(state_dir)                             one up/down at a time per state dir
    restart_storage(cluster)                      etcd and kube-apiserver stopped and started again
    Cluster, Proc                                 the state dir's record (cluster.json)
    kwoknodes, realnodes                          the node kinds
    users_cluster(state_dir, images) -> Cluster   make demo's cluster, shaped as a user's (userscluster)

The parts, one a module, each importing only those above it:

    state         the state dir's layout, the recorded processes, the API server over HTTPS
    pki           the CA, certificates and the admin kubeconfig (cryptography, imported when used)
    mounts        FUSE processes and mounts left under a folder, stopped and unmounted
    kwoknodes     the kwok process and its fake nodes
    controlplane  etcd, kube-apiserver, kube-controller-manager, kube-scheduler (and kwok)
    serviceproxy  a process per cluster with real nodes: its ClusterIP Services as iptables rules
                  (servicerules, pure), in place of kube-proxy, which cannot be kept to one cluster
    cgroups       each real node's cgroup root: made, emptied (what a container left) and removed
    podnetwork    the real nodes' pods routed to each other through this host, and nowhere else
    realnodes     real kubelet nodes (containerd, runc, CoreDNS); nodeview sets up their mount view
    nodeloss      a real node's kubelet and containerd killed -9, and started again
    lifecycle     up, down, status, running: the control plane and real nodes composed
    userscluster  make demo's cluster: no kwok node, N untainted real nodes (3), the product's images
    product       the product as local processes (make up --fluid); needs the venv
    peers/        the product's peers as local processes (Curvine); needs the venv; and Curvine's
                  binaries and its image layout (curvinebins, curvinelayout: standard library only)
    kubeletstandin, kubelet_volumes   kubelet's CSI calls for pods on kwok nodes (a process of its own)
    __main__      the command line: ``python -m localcluster up|down|status``

It may import the standard library, hack/images (to put images on real nodes) and, in product,
peers and the kubelet stand-in only, the venv's packages and the product's own. Importing this
package, and ``down`` and ``status``, need only the standard library: ``make down`` runs on the
system python3 even when the venv is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from localcluster import kwoknodes, realnodes
from localcluster.controlplane import restart_storage
from localcluster.lifecycle import down, running, status, up
from localcluster.state import Cluster, Proc, locked


def users_cluster(state_dir: Path, images: Iterable[Callable[[], Path]] = ()) -> Cluster:
    """userscluster.up. Imported here, not above: ``python -m localcluster.userscluster`` (make demo)
    would otherwise run a module the package had already imported."""
    from localcluster import userscluster

    return userscluster.up(state_dir, images)


__all__ = [
    "Cluster",
    "Proc",
    "down",
    "kwoknodes",
    "locked",
    "realnodes",
    "restart_storage",
    "running",
    "status",
    "up",
    "users_cluster",
]
