"""A cluster shaped as a user's: the local control plane with no kwok node and one real, untainted
kubelet node, into whose containerd the product's image (and the CSI controller's csi-provisioner
sidecar, by the manifest's name, and any other image asked for) is imported, so that
``kubectl apply -k manifests/`` runs there with ``IfNotPresent`` and no registry. ``make demo`` runs on
it, and so do the e2e tests that deploy the product with its manifests.

The state dir is marked as holding this shape: ``make up``'s cluster (kwok nodes, the product as local
processes) and this one never share a state dir, since the product would then run twice.

    python hack/userscluster.py [--state-dir .dev] [--mooncake]     # make demo's first step
    python hack/localcluster.py down [--state-dir .dev]              # make down, as for make up's
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml

import localcluster
import ociimage
import realnode

REPO = Path(__file__).resolve().parent.parent
MARKER = localcluster.USERS_CLUSTER_MARKER
PROVISIONER_MANIFEST = REPO / "manifests" / "csi" / "controller-deployment.yaml"


def is_users_cluster(state_dir: Path) -> bool:
    return (state_dir / MARKER).exists()


def provisioner_image() -> str:
    """The csi-provisioner image the CSI controller's manifest names."""
    for doc in yaml.safe_load_all(PROVISIONER_MANIFEST.read_text()):
        if doc and doc["kind"] == "Deployment":
            containers = doc["spec"]["template"]["spec"]["containers"]
            return str(next(c["image"] for c in containers if c["name"] == "csi-provisioner"))
    raise SystemExit(f"error: no csi-provisioner container in {PROVISIONER_MANIFEST}")


def refuse_other_shape(state_dir: Path) -> None:
    """A running cluster of make up's shape in ``state_dir`` is not taken over."""
    existing = localcluster.Cluster.load(state_dir)
    if existing is not None and not is_users_cluster(state_dir) and localcluster.healthy(existing):
        raise SystemExit(
            f"error: {state_dir} holds the cluster `make up` started (kwok nodes, the product as local "
            f"processes); stop it with `make down STATE={state_dir}`, or give this one another STATE"
        )


def up(state_dir: Path, images: Iterable[Callable[[], Path]] = ()) -> localcluster.Cluster:
    """The cluster, started or reused, with the product's images on its node; ``images`` build
    further archives (a cached build returns at once) to import too."""
    import productimage

    refuse_other_shape(state_dir)
    cluster = localcluster.up(state_dir, 0, None)  # no kwok node: every pod lands on the real one
    (state_dir / MARKER).touch()
    [node] = realnode.ensure(cluster, 1, tainted=False)
    bins = realnode.node_bins()
    # The CSI controller's sidecar, from the csi-provisioner the control plane's build made at the
    # manifest's pin (tests/unit/test_manifests checks the tag).
    provisioner = node.root / "images" / "csi-provisioner.tar"
    if not provisioner.exists():  # the node's own folder: written once per node, so imported once
        ociimage.binary_image(Path(cluster.bin_dir) / "csi-provisioner", provisioner_image(), provisioner)
    for archive in (productimage.build(), provisioner, *(build() for build in images)):
        t0 = time.monotonic()
        if not realnode.import_archive_once(bins, node, archive):
            continue
        localcluster.log(
            f"{archive.name} ({archive.stat().st_size >> 20} MiB) imported into {node.name} "
            f"in {time.monotonic() - t0:.1f}s"
        )
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--state-dir", type=Path, default=localcluster.DEFAULT_STATE)
    parser.add_argument(
        "--mooncake", action="store_true", help="also import the Mooncake image (hack/mooncakeimage.py)"
    )
    args = parser.parse_args(argv)
    images = []
    if args.mooncake:
        import mooncakeimage

        images.append(mooncakeimage.build)
    state_dir = args.state_dir.resolve()
    with localcluster.locked(state_dir):
        cluster = up(state_dir, images)
    localcluster.log(f"KUBECONFIG={cluster.kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
