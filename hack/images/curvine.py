"""Curvine's image as an OCI archive, built without Docker or a registry: Debian bookworm minbase with
what Curvine's binaries link (``libssl3``; curvine-fuse and cv link only libc, libm and libgcc_s) and
``fuse3``, and Curvine's binaries from a folder (the test bed's, unpacked by
localcluster/peers/curvinebins.py) at ``/opt/curvine/``: ``curvine-fuse`` where the CSI driver's
``--fuse-binary`` defaults to, ``curvine-server`` (master and worker) and the CLI ``cv``.

The default install runs it: the CSI node's standalone FUSE pods (``--fuse-image``), the CSI
controller's copy of curvine-fuse (its init container), and the sample Curvine cluster
(manifests/samples/curvine-cluster.yaml). images/curvine/Dockerfile is the same recipe for Docker
(tests/unit/test_curvineimage.py keeps them in step).

    PYTHONPATH=hack python -m images.curvine --bins DIR --version REV [--out DIR]   # the archive's path

Cached by the binaries' digests and the recipe: the same Curvine gives the same archive, built once.
Every binary must answer ``--help`` inside the new root before the archive is written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

from images import debian
from kubectl_fluid.api import names

# Where the CSI driver's --fuse-binary defaults to: its folder.
PREFIX = names.FUSE_BINARY.rsplit("/", 1)[0]
BINARIES = ("curvine-fuse", "curvine-server", "cv")
PACKAGES = ("fuse3", "libssl3")


# The reference the manifests use (IfNotPresent), tagged with the Curvine commit; the project's own
# build of Curvine, so not under Curvine's name.
REPOSITORY = "kubectl-fluid/curvine"


def name(version: str) -> str:
    """The image's reference as containerd normalises it, tagged with the Curvine commit its binaries
    were built from."""
    return f"docker.io/{REPOSITORY}:{version}"


def say(msg: str) -> None:
    print(f"[curvineimage] {msg}", file=sys.stderr, flush=True)


def image_config(version: str) -> dict[str, object]:
    return {
        "Env": [f"PATH={PREFIX}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        "WorkingDir": "/",
        "Cmd": [f"{PREFIX}/curvine-fuse", "--help"],
        "Labels": {
            "org.opencontainers.image.title": "curvine",
            "org.opencontainers.image.revision": version,
        },
    }


def customize_hooks(bins: Path) -> list[str]:
    """mmdebstrap hooks (``$1`` is the new root): the binaries in, and each one's ``--help``."""
    return [
        f'mkdir -p "$1{PREFIX}"',
        *(f'install -m 0755 {bins / b} "$1{PREFIX}/{b}"' for b in BINARIES),
        *(f'chroot "$1" {PREFIX}/{b} --help >/dev/null' for b in BINARIES),
        debian.CLEAN_APT,
    ]


def tag(bins: Path, recipe: str) -> str:
    digest = hashlib.sha256(recipe.encode())
    for b in BINARIES:
        digest.update(hashlib.sha256((bins / b).read_bytes()).digest())
    return digest.hexdigest()[:12]


def build(bins: Path, version: str, out_dir: Path = debian.CACHE) -> Path:
    """The archive of the binaries in ``bins``, built from Curvine ``version``."""
    t0 = time.monotonic()
    debian.require_mmdebstrap()
    hooks = customize_hooks(bins)
    config = image_config(version)
    recipe = json.dumps([PACKAGES, [h.replace(str(bins), "BINS") for h in hooks], config])
    archive = out_dir / f"curvine-{tag(bins, recipe)}.oci.tar"
    with tempfile.TemporaryDirectory(prefix="kubectl-fluid-curvine-image-") as tmp:
        debian.image(
            archive, Path(tmp), name=name(version), packages=PACKAGES, hooks=hooks, config=config, say=say
        )
    say(f"{archive} ({archive.stat().st_size >> 20} MiB) in {time.monotonic() - t0:.0f}s")
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--bins", type=Path, required=True, help="the folder holding curvine-fuse, curvine-server and cv"
    )
    parser.add_argument("--version", required=True, help="the Curvine commit they were built from (the tag)")
    parser.add_argument(
        "--out", type=Path, default=debian.CACHE, help="folder of the archive (default: the cache)"
    )
    args = parser.parse_args(argv)
    print(build(args.bins, args.version, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
