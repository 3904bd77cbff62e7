#!/usr/bin/env python3
"""The Mooncake image as an OCI archive, built without Docker or a registry: Debian bookworm from
Debian's packages (``mmdebstrap --variant=minbase``, debian.py), its python3, ``libibverbs1``
(with libnl-3 and libnl-route-3, which it depends on), ``libcurl4`` and ``libnuma1`` (the libraries the
wheel links but does not bundle) and the Mooncake wheel the project's
``mooncake`` extra pins (pyproject.toml) in a venv at /opt/mooncake, written by oci.py for
``ctr images import``.

    PYTHONPATH=hack python -m images.mooncake [--out DIR]     # prints the archive's path

It serves the mooncake CacheRuntimeClass (manifests/samples/cacheruntimeclass-mooncake.yaml): its
master and worker containers run ``mooncake_master`` and ``mooncake_client`` from PATH with /bin/sh,
sed and hostname (Debian's minbase has them), and applications run Mooncake's Python client
(``mooncake.store``) from the same image. The non-CUDA wheel still links ``libibverbs.so.1``, needed to
load, not to run: there is no RDMA device, the store speaks TCP. Named as the class names it
(``mooncake/mooncake-store:latest``, ``IfNotPresent``), so the manifests stay as users have them.
images/mooncake/Dockerfile is the same recipe for Docker; a unit test keeps the two in step.

The archive is cached by the wheels' digests and this recipe: built once for each.
"""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from images import debian

REPO = Path(__file__).resolve().parents[2]
# The class's image as containerd normalises it.
NAME = "docker.io/mooncake/mooncake-store:latest"
# The libraries the wheel links and does not bundle (readelf -d NEEDED of its binaries and .so files).
PACKAGES = ("python3", "python3-venv", "libibverbs1", "libcurl4", "libnuma1")
PREFIX = "/opt/mooncake"
# What the class's containers run (besides /bin/sh): each must answer --version in the new root.
COMMANDS = ("mooncake_master", "mooncake_client")
TOOLS = ("sed", "hostname", "sleep")
UID = 65532


def say(msg: str) -> None:
    print(f"[mooncakeimage] {msg}", file=sys.stderr, flush=True)


def requirement(pyproject: Path = REPO / "pyproject.toml") -> str:
    """The Mooncake wheel the project's ``mooncake`` extra pins: one pin for the venv, the tests and
    the image."""
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    [pin] = extras["mooncake"]
    return str(pin)


def image_config() -> dict[str, object]:
    return {
        "Env": [
            f"PATH={PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "PYTHONUNBUFFERED=1",
            "PYTHONDONTWRITEBYTECODE=1",
        ],
        "User": f"{UID}:{UID}",
        "WorkingDir": "/",
        "Cmd": ["mooncake_master", "--version"],
        "Labels": {
            "org.opencontainers.image.title": "mooncake-store",
            "org.opencontainers.image.description": f"Mooncake store of the mooncake class: {requirement()}",
        },
    }


def customize_hooks(wheels: Path) -> list[str]:
    """mmdebstrap hooks (``$1`` is the new root): the venv from the local wheels, the user, and the
    checks that the binaries load (libibverbs found), the Python client imports and the tools the
    class's shell uses exist."""
    name = requirement().split("==")[0]
    path = f"PATH={PREFIX}/bin:/usr/bin:/bin"
    checks = " && ".join(
        [*(f"{c} --version >/dev/null" for c in COMMANDS), *(f"command -v {t} >/dev/null" for t in TOOLS)]
    )
    return [
        *debian.venv_hooks(wheels, PREFIX, name),
        *debian.user_hooks(UID, "mooncake"),
        f'chroot "$1" env {path} sh -c "{checks}"',
        f'chroot "$1" {PREFIX}/bin/python -c ' + shlex.quote("import mooncake.store"),
        debian.CLEAN_APT,
    ]


def build(out_dir: Path = debian.CACHE) -> Path:
    t0 = time.monotonic()
    debian.require_mmdebstrap()
    debian.require_python()
    with tempfile.TemporaryDirectory(prefix="kubectl-fluid-mooncake-image-") as tmp:
        scratch = Path(tmp)
        say(f"collecting {requirement()} and its dependencies")
        found = debian.pip_wheels(scratch / "wheels", requirement())
        hooks = customize_hooks(found)
        recipe = json.dumps([PACKAGES, [h.replace(str(found), "WHEELS") for h in hooks], image_config()])
        archive = out_dir / f"mooncake-store-{debian.tag(found, recipe)}.oci.tar"
        debian.image(
            archive, scratch, name=NAME, packages=PACKAGES, hooks=hooks, config=image_config(), say=say
        )
    say(f"{archive} ({archive.stat().st_size >> 20} MiB) in {time.monotonic() - t0:.0f}s")
    return archive


def main(argv: list[str] | None = None) -> int:
    return debian.main(build, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
