"""Curvine's image as an OCI archive, built without Docker or a registry: Debian bookworm minbase with
what Curvine's binaries link (``libssl3``; curvine-fuse and cv link only libc, libm and libgcc_s),
``fuse3``, and Curvine's binaries from a folder (the test bed's, unpacked by
localcluster/peers/curvinebins.py) at ``/opt/curvine/``: ``curvine-fuse`` where the CSI driver's
``--fuse-binary`` defaults to, ``curvine-server`` (master and worker) and the CLI ``cv``.

It is also an image in Curvine's own layout, the one Curvine's Dockerfile makes and its Fluid
CacheRuntimeClass (manifests/samples/curvine-fluid/) runs: ``/entrypoint.sh`` and
``/fluid-entrypoint.sh``, ``CURVINE_HOME=/app/curvine`` with Curvine's Fluid scripts, ``bin/`` (its
``cv`` wrapper and launch scripts), ``conf/``, and ``lib/`` whose ``curvine-server``,
``curvine-fuse`` and ``curvine-cli`` link to the binaries at /opt/curvine (one copy of each, at the
path each user expects). Those files are Curvine's, from its source at the pinned commit
(localcluster/peers/curvinelayout.py), with ``python3`` (generate_config.py, mountUfs.sh) and
``procps`` (the entrypoint's pgrep) beside them, and the environment Curvine's image sets.

The default install runs it: the CSI node's standalone FUSE pods (``--fuse-image``), the CSI
controller's copy of curvine-fuse (its init container), and the sample Curvine cluster
(manifests/samples/curvine-cluster.yaml); Curvine's own class runs its master, worker and client.
images/curvine/Dockerfile is the same recipe for Docker (tests/unit/test_curvineimage.py keeps them
in step).

    PYTHONPATH=hack python -m images.curvine --bins DIR --layout DIR --version REV [--out DIR]

prints the archive's path. Cached by the binaries' and Curvine's files' digests and the recipe: the
same Curvine gives the same archive, built once. Every binary must answer ``--help`` inside the new
root, and so must Curvine's ``cv`` wrapper, before the archive is written.
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
PACKAGES = ("fuse3", "libssl3", "procps", "python3")
# Curvine's layout (its Dockerfile's runtime stage): CURVINE_HOME, and where its scripts run each
# binary from (the entrypoints' lib/curvine-server and lib/curvine-fuse, bin/cv's lib/curvine-cli).
CURVINE_HOME = "/app/curvine"
LIB = {"curvine-server": "curvine-server", "curvine-fuse": "curvine-fuse", "curvine-cli": "cv"}


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
        "Env": [
            f"PATH={PREFIX}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:{CURVINE_HOME}/bin",
            # As Curvine's image sets them: its scripts and servers read them.
            f"CURVINE_HOME={CURVINE_HOME}",
            f"CURVINE_CONF_FILE={CURVINE_HOME}/conf/curvine-cluster.toml",
            "ORPC_BIND_HOSTNAME=0.0.0.0",
        ],
        "WorkingDir": "/",
        "Cmd": [f"{PREFIX}/curvine-fuse", "--help"],
        "Labels": {
            "org.opencontainers.image.title": "curvine",
            "org.opencontainers.image.revision": version,
        },
    }


def customize_hooks(bins: Path, layout: Path) -> list[str]:
    """mmdebstrap hooks (``$1`` is the new root): the binaries in, Curvine's layout (``layout``, a
    folder mirroring the root) over them with lib/ linked to the binaries, and each one's ``--help``."""
    return [
        f'mkdir -p "$1{PREFIX}" "$1{CURVINE_HOME}/lib"',
        *(f'install -m 0755 {bins / b} "$1{PREFIX}/{b}"' for b in BINARIES),
        f'cp -R --preserve=mode {layout}/. "$1/"',
        *(f'ln -s {PREFIX}/{b} "$1{CURVINE_HOME}/lib/{name}"' for name, b in LIB.items()),
        *(f'chroot "$1" {PREFIX}/{b} --help >/dev/null' for b in BINARIES),
        f'chroot "$1" {CURVINE_HOME}/bin/cv --help >/dev/null',
        debian.CLEAN_APT,
    ]


def tag(bins: Path, layout: Path, recipe: str) -> str:
    digest = hashlib.sha256(recipe.encode())
    for b in BINARIES:
        digest.update(hashlib.sha256((bins / b).read_bytes()).digest())
    for f in sorted(p for p in layout.rglob("*") if p.is_file()):
        digest.update(str(f.relative_to(layout)).encode() + hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()[:12]


def build(bins: Path, layout: Path, version: str, out_dir: Path = debian.CACHE) -> Path:
    """The archive of the binaries in ``bins`` and Curvine's files in ``layout``, built from Curvine
    ``version``."""
    t0 = time.monotonic()
    debian.require_mmdebstrap()
    hooks = customize_hooks(bins, layout)
    config = image_config(version)
    recipe = json.dumps(
        [PACKAGES, [h.replace(str(bins), "BINS").replace(str(layout), "LAYOUT") for h in hooks], config]
    )
    archive = out_dir / f"curvine-{tag(bins, layout, recipe)}.oci.tar"
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
    parser.add_argument(
        "--layout",
        type=Path,
        required=True,
        help="the folder mirroring the image's root with Curvine's own files (curvinelayout.py's root/)",
    )
    parser.add_argument("--version", required=True, help="the Curvine commit they were built from (the tag)")
    parser.add_argument(
        "--out", type=Path, default=debian.CACHE, help="folder of the archive (default: the cache)"
    )
    args = parser.parse_args(argv)
    print(build(args.bins, args.layout, args.version, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
