"""A cluster shaped as a user's: the local control plane with no kwok node and real, untainted kubelet
nodes (three for ``make demo``: ``LOCALCLUSTER_REAL_NODES=N`` for another number), into each of whose
containerd the images of the default install are imported (the product's, Curvine's, whose
curvine-fuse the CSI driver runs, and the CSI controller's csi-provisioner sidecar, by the manifests'
names), and any other image asked for, so that ``kubectl apply -k manifests/`` runs there with
``IfNotPresent`` and no registry. ``make demo`` runs on it, and so do the e2e tests that deploy the
product with its manifests (one node each, but the multi-node module's three).

The state dir is marked as holding this shape: ``make up``'s cluster (kwok nodes, the product as local
processes) and this one never share a state dir, since the product would then run twice.

    PYTHONPATH=hack python -m localcluster.userscluster [--state-dir .dev] [--mooncake] [--nodes 3]
    PYTHONPATH=hack python -m localcluster down [--state-dir .dev]   # make down, as for make up's
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from images import oci
from localcluster import controlplane, lifecycle, realnodes
from localcluster.state import DEFAULT_STATE, REPO, USERS_CLUSTER_MARKER, Cluster, locked, log

MARKER = USERS_CLUSTER_MARKER
# A cluster of several nodes, as users run: one shared FUSE per node, a DaemonSet on each, a cache's
# workers one per node (Fluid's Exclusive placement), a master on one node serving the others.
DEFAULT_NODES = 3
PROVISIONER_MANIFEST = REPO / "manifests" / "csi" / "controller-deployment.yaml"


def is_users_cluster(state_dir: Path) -> bool:
    return (state_dir / MARKER).exists()


def provisioner_image() -> str:
    """The csi-provisioner image the CSI controller's manifest names."""
    import yaml  # the venv's: importing this module (the package's surface) stays standard library only

    for doc in yaml.safe_load_all(PROVISIONER_MANIFEST.read_text()):
        if doc and doc["kind"] == "Deployment":
            containers = doc["spec"]["template"]["spec"]["containers"]
            return str(next(c["image"] for c in containers if c["name"] == "csi-provisioner"))
    raise SystemExit(f"error: no csi-provisioner container in {PROVISIONER_MANIFEST}")


def curvine_image() -> Callable[[], Path]:
    """What builds Curvine's image (hack/images/curvine.py) from the test peer's binaries: the default
    install's FUSE runs it, so a user's cluster cannot do without it. The binaries are looked for now,
    so that a machine without them is told so before a cluster is started."""
    from images import curvine
    from localcluster.peers import curvinebins, curvinelayout

    try:
        bins = curvinebins.ensure()
        curvinelayout.ensure()
    except curvinebins.CurvineBinsError as err:
        raise SystemExit(
            f"error: Curvine's image, which the default install runs, cannot be built: {err}"
        ) from None
    return lambda: curvine.build(bins, curvinelayout.root_dir(), curvinebins.version())


def refuse_other_shape(state_dir: Path) -> None:
    """A running cluster of make up's shape in ``state_dir`` is not taken over."""
    existing = Cluster.load(state_dir)
    if existing is not None and not is_users_cluster(state_dir) and controlplane.healthy(existing):
        raise SystemExit(
            f"error: {state_dir} holds the cluster `make up` started (kwok nodes, the product as local "
            f"processes); stop it with `make down STATE={state_dir}`, or give this one another STATE"
        )


def node_count(asked: str | None) -> int:
    """``LOCALCLUSTER_REAL_NODES`` as given, DEFAULT_NODES when it is not: a users' cluster has at
    least one node (no kwok node would take its pods)."""
    if asked is None or asked.strip() == "":
        return DEFAULT_NODES
    try:
        count = int(asked)
    except ValueError:
        count = 0
    if count < 1:
        raise SystemExit(
            f"error: LOCALCLUSTER_REAL_NODES={asked!r}: a users' cluster needs 1 or more real nodes"
        )
    return count


def up(state_dir: Path, images: Iterable[Callable[[], Path]] = (), nodes: int = DEFAULT_NODES) -> Cluster:
    """The cluster, started or reused, with ``nodes`` real nodes and the default install's images on
    each; ``images`` build further archives (a cached build returns at once) to import too."""
    from images import product

    refuse_other_shape(state_dir)
    curvine = curvine_image()
    cluster = lifecycle.up(state_dir, 0, None)  # no kwok node: every pod lands on a real one
    (state_dir / MARKER).touch()
    started = realnodes.ensure(cluster, nodes, tainted=False)
    bins = realnodes.node_bins()
    # The CSI controller's sidecar, from the csi-provisioner the control plane's build made at the
    # manifest's pin (tests/unit/test_manifests checks the tag).
    provisioner = Path(cluster.state_dir) / "images" / "csi-provisioner.tar"
    if not provisioner.exists():  # written once per cluster, so imported once per node
        oci.binary_image(Path(cluster.bin_dir) / "csi-provisioner", provisioner_image(), provisioner)
    archives = [product.build(), curvine(), provisioner, *(build() for build in images)]

    t0 = time.monotonic()
    # One node after another: side by side they took as long (98 s against 100 s for three nodes
    # here), each containerd unpacking its own copy on the same two cores.
    for node in started:
        for archive in archives:
            t1 = time.monotonic()
            if realnodes.import_archive_once(bins, node, archive):
                log(
                    f"{archive.name} ({archive.stat().st_size >> 20} MiB) imported into {node.name} "
                    f"in {time.monotonic() - t1:.1f}s"
                )
    log(f"images on {len(started)} node(s) in {time.monotonic() - t0:.1f}s")
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)
    parser.add_argument(
        "--mooncake", action="store_true", help="also import the Mooncake image (images/mooncake.py)"
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=None,
        help=f"real nodes (default: LOCALCLUSTER_REAL_NODES, or {DEFAULT_NODES})",
    )
    args = parser.parse_args(argv)
    nodes = args.nodes if args.nodes is not None else node_count(os.environ.get("LOCALCLUSTER_REAL_NODES"))
    builds = []
    if args.mooncake:
        from images import mooncake

        builds.append(mooncake.build)
    state_dir = args.state_dir.resolve()
    with locked(state_dir):
        cluster = up(state_dir, builds, nodes)
    log(f"KUBECONFIG={cluster.kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
