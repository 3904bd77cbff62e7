#!/usr/bin/env python3
"""The product's image as an OCI archive, built without Docker or a registry: a Debian bookworm root
file system from Debian's packages (``mmdebstrap --variant=minbase``), the project's wheel and its
dependencies from PyPI in a venv at /opt/fluid, written by oci.py for ``ctr images import``.

    PYTHONPATH=hack python -m images.product [--out DIR]     # prints the archive's path

Its contents follow the Dockerfile: Python 3.11, fuse3 (libfuse3 for curvine-fuse-standin's mfusepy,
fusermount3), the venv on PATH, user and group ``fluid`` 65532 as the default user, no entrypoint and
``fluid-csi --help`` as the command; every console script must answer ``--help`` inside the root file
system before the archive is written. Differences: Debian's python3 (3.11.2) instead of the
python:3.11-slim image's python.org build, and the CSI stubs come with the wheel (built from this tree).

The archive is cached by the wheels' digests: the same sources and dependencies give the same archive
path, built once.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from images import debian

HACK = Path(__file__).resolve().parents[1]
REPO = HACK.parent
CACHE = debian.CACHE
# The name the manifests use (kubectl-fluid:latest, IfNotPresent), as containerd normalises it.
NAME = "docker.io/library/kubectl-fluid:latest"
SUITE = debian.SUITE
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
        *debian.venv_hooks(wheels, "/opt/fluid", "kubectl-fluid"),
        *debian.user_hooks(UID, "fluid"),
        'chroot "$1" /opt/fluid/bin/python -c '
        + shlex.quote("import ctypes.util, sys; sys.exit(ctypes.util.find_library('fuse3') is None)"),
        f'chroot "$1" env PATH=/opt/fluid/bin:/usr/bin:/bin sh -c "{checks}"',
        debian.CLEAN_APT,
    ]


def wheels(scratch: Path) -> Path:
    """The project's wheel and every runtime dependency's, for the Python of the image (3.11)."""
    debian.require_python()
    dist = scratch / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    [wheel] = dist.glob("*.whl")
    return debian.pip_wheels(scratch / "wheels", str(wheel))


def build(out_dir: Path = CACHE) -> Path:
    t0 = time.monotonic()
    debian.require_mmdebstrap()
    with tempfile.TemporaryDirectory(prefix="kubectl-fluid-image-") as tmp:
        scratch = Path(tmp)
        say("building the wheel and collecting its dependencies")
        found = wheels(scratch)
        archive = out_dir / f"kubectl-fluid-{debian.tag(found)}.oci.tar"
        debian.image(
            archive,
            scratch,
            name=NAME,
            packages=PACKAGES,
            hooks=customize_hooks(found),
            config=image_config(),
            say=say,
        )
    say(f"{archive} ({archive.stat().st_size >> 20} MiB) in {time.monotonic() - t0:.0f}s")
    return archive


def main(argv: list[str] | None = None) -> int:
    return debian.main(build, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
