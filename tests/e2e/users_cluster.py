"""A cluster as a user's is, for the e2e tests that deploy the product with its manifests: its own
local control plane whose one node is a real, untainted kubelet, with the product's image (and the
CSI controller's csi-provisioner sidecar, by the manifest's name) imported into its containerd, so
``kubectl apply -k manifests/`` runs with ``IfNotPresent`` and no registry."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

import localcluster
import ociimage
import realnode
from tests.e2e.fluid import MANIFESTS
from tests.e2e.test_real_node import why_no_real_node


def why_no_users_cluster() -> str | None:
    reason = why_no_real_node()
    if reason is None and shutil.which("mmdebstrap") is None:
        reason = "building the product's image needs mmdebstrap: apt-get install -y mmdebstrap"
    return reason


def provisioner_image() -> str:
    for doc in yaml.safe_load_all((MANIFESTS / "csi" / "controller-deployment.yaml").read_text()):
        if doc and doc["kind"] == "Deployment":
            containers = doc["spec"]["template"]["spec"]["containers"]
            return str(next(c["image"] for c in containers if c["name"] == "csi-provisioner"))
    raise AssertionError("no csi-provisioner container in manifests/csi/controller-deployment.yaml")


@contextlib.contextmanager
def users_cluster(state: Path, *images: Callable[[], Path]) -> Iterator[localcluster.Cluster]:
    """The cluster, up until the block ends; ``images`` build further archives to import."""
    import productimage

    cluster = localcluster.up(state, 0, None)  # no kwok node: every pod lands on the real one
    try:
        [node] = realnode.ensure(cluster, 1, tainted=False)
        bins = realnode.node_bins()
        realnode.import_archive(bins, node, productimage.build())
        # The CSI controller's sidecar by the name the manifest gives it, from the csi-provisioner the
        # control plane's build made at the same pin (tests/unit/test_manifests checks the tag).
        archive = node.root / "images" / "csi-provisioner.tar"
        ociimage.binary_image(Path(cluster.bin_dir) / "csi-provisioner", provisioner_image(), archive)
        realnode.import_archive(bins, node, archive)
        for build in images:
            archive = build()
            t0 = time.monotonic()
            realnode.import_archive(bins, node, archive)
            size = archive.stat().st_size >> 20
            print(f"\n{archive.name} ({size} MiB) imported in {time.monotonic() - t0:.1f}s")
        yield cluster
    finally:
        localcluster.down(state)
