"""A cluster as a user's is, for the e2e tests that deploy the product with its manifests
(hack/localcluster/userscluster.py: its own local control plane whose nodes are real, untainted kubelets,
with the product's images imported into its containerd, so ``kubectl apply -k manifests/`` runs with
``IfNotPresent`` and no registry)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import localcluster
from localcluster import userscluster
from tests.e2e.test_real_node import why_no_real_node


def why_no_users_cluster() -> str | None:
    reason = why_no_real_node()
    if reason is None and shutil.which("mmdebstrap") is None:
        reason = "building the product's image needs mmdebstrap: apt-get install -y mmdebstrap"
    return reason


@contextlib.contextmanager
def users_cluster(state: Path, *images: Callable[[], Path], nodes: int = 1) -> Iterator[localcluster.Cluster]:
    """The cluster of ``nodes`` real nodes, up until the block ends; ``images`` build further archives
    to import. One node unless a test needs more: each node costs its start and the images' imports."""
    try:
        yield userscluster.up(state, images, nodes)
    finally:
        localcluster.down(state)
