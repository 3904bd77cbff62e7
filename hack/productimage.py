#!/usr/bin/env python3
"""The product's image as an OCI archive, built without Docker or a registry: a Debian bookworm root
file system from Debian's packages (``mmdebstrap --variant=minbase``), the project's wheel and its
dependencies from PyPI in a venv at /opt/fluid, written by hack/ociimage.py for ``ctr images import``.

    python hack/productimage.py [--out DIR]     # prints the archive's path

Its contents follow the Dockerfile: Python 3.11, fuse3 (libfuse3 for curvine-fuse-standin's mfusepy,
fusermount3), the venv on PATH, user and group ``fluid`` 65532 as the default user, no entrypoint and
``fluid-csi --help`` as the command; every console script must answer ``--help`` inside the root file
system before the archive is written. Differences: Debian's python3 (3.11.2) instead of the
python:3.11-slim image's python.org build, and the CSI stubs come with the wheel (built from this tree).

The archive is cached by the wheels' digests: the same sources and dependencies give the same archive
path, built once.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ociimage

HACK = Path(__file__).resolve().parent
REPO = HACK.parent
CACHE = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid")) / "images"
# The name the manifests use (kubectl-fluid:latest, IfNotPresent), as containerd normalises it.
NAME = "docker.io/library/kubectl-fluid:latest"
SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "fuse3")
CONSOLE_SCRIPTS = ("fluid-controller", "fluid-webhook", "fluid-csi", "curvine-fuse-standin", "kubectl-fluid")
UID = 65532


def say(msg: str) -> None:
    print(f"[productimage] {msg}", file=sys.stderr, flush=True)


def image_config() -> dict[str, object]:
    return {
        "Env": [
            "PATH=/opt/fluid/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "PYTHONUNBUFFERED=1",
            "PYTHONDONTWRITEBYTECODE=1",
        ],
        "User": f"{UID}:{UID}",
        "WorkingDir": "/",
        "Cmd": ["fluid-csi", "--help"],
        "Labels": {
            "org.opencontainers.image.title": "kubectl-fluid",
            "org.opencontainers.image.licenses": "Apache-2.0",
        },
    }


def customize_hooks(wheels: Path) -> list[str]:
    """mmdebstrap hooks (``$1`` is the new root): the venv from the local wheels alone (no network in
    the chroot), the user, the check that every entry point starts and libfuse3 is found."""
    checks = " && ".join(f"{c} --help >/dev/null" for c in CONSOLE_SCRIPTS)
    return [
        f'mkdir "$1/tmp/wheels" && cp {wheels}/*.whl "$1/tmp/wheels/"',
        'chroot "$1" python3 -m venv /opt/fluid',
        'chroot "$1" /opt/fluid/bin/pip install --quiet --no-index --no-cache-dir --find-links /tmp/wheels '
        "kubectl-fluid",
        'chroot "$1" /opt/fluid/bin/pip uninstall --quiet --yes pip',
        'rm -rf "$1/tmp/wheels"',
        f'chroot "$1" groupadd --system --gid {UID} fluid',
        f'chroot "$1" useradd --system --uid {UID} --gid {UID} --no-create-home --home-dir /nonexistent '
        "--shell /usr/sbin/nologin fluid",
        'chroot "$1" /opt/fluid/bin/python -c '
        + shlex.quote("import ctypes.util, sys; sys.exit(ctypes.util.find_library('fuse3') is None)"),
        f'chroot "$1" env PATH=/opt/fluid/bin:/usr/bin:/bin sh -c "{checks}"',
        # apt's lists and caches are not part of the image, as in the Dockerfile.
        'rm -rf "$1/var/lib/apt/lists/"* "$1/var/cache/apt/"*',
    ]


def wheels(scratch: Path) -> Path:
    """The project's wheel and every runtime dependency's, for the Python of the image (3.11)."""
    if sys.version_info[:2] != (3, 11):
        raise SystemExit(
            f"error: run this with Python 3.11 (the image's Debian {SUITE} python3): wheels built for "
            f"{sys.version.split()[0]} would not load there"
        )
    dist, out = scratch / "dist", scratch / "wheels"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    [wheel] = dist.glob("*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(out), str(wheel)], check=True
    )
    return out


def build(out_dir: Path = CACHE) -> Path:
    t0 = time.monotonic()
    if shutil.which("mmdebstrap") is None:
        raise SystemExit(
            "error: mmdebstrap is needed to build the image's root file system: apt-get install -y mmdebstrap"
        )
    with tempfile.TemporaryDirectory(prefix="kubectl-fluid-image-") as tmp:
        scratch = Path(tmp)
        say("building the wheel and collecting its dependencies")
        found = wheels(scratch)
        digest = hashlib.sha256()
        for w in sorted(found.glob("*.whl")):
            digest.update(w.name.encode() + hashlib.sha256(w.read_bytes()).digest())
        tag = digest.hexdigest()[:12]
        archive = out_dir / f"kubectl-fluid-{tag}.oci.tar"
        if archive.is_file():
            say(f"cached: {archive}")
            return archive
        say(f"mmdebstrap {SUITE} ({', '.join(PACKAGES)}) with the venv")
        rootfs = scratch / "rootfs.tar"
        hooks = [f"--customize-hook={h}" for h in customize_hooks(found)]
        subprocess.run(
            ["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(PACKAGES)}", *hooks,
             "--format=tar", SUITE, str(rootfs)],
            check=True,
            # This host's pip settings (find-links, indexes) mean nothing inside the new root.
            env={k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
        )  # fmt: skip
        say("writing the OCI archive")
        ociimage.write_archive(archive, NAME, [rootfs], image_config())
    say(f"{archive} ({archive.stat().st_size >> 20} MiB) in {time.monotonic() - t0:.0f}s")
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=CACHE, help="folder of the archive (default: the cache)")
    args = parser.parse_args(argv)
    print(build(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
