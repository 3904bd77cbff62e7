"""What the images built here without Docker share (product.py, mooncake.py): a
Debian bookworm root file system from Debian's packages (``mmdebstrap --variant=minbase``) with a venv
installed from wheels collected on the host, since the chroot has no network; and the cache key of
an archive, from those wheels' digests.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from images import oci

CACHE = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid")) / "images"
SUITE = "bookworm"
# Debian bookworm's python3: wheels collected by another Python would not load in the image.
PYTHON = (3, 11)
# apt's lists and caches are not part of an image, as in the Dockerfiles.
CLEAN_APT = 'rm -rf "$1/var/lib/apt/lists/"* "$1/var/cache/apt/"*'


def require_mmdebstrap() -> None:
    if shutil.which("mmdebstrap") is None:
        raise SystemExit(
            "error: mmdebstrap is needed to build the image's root file system: apt-get install -y mmdebstrap"
        )


def require_python() -> None:
    if sys.version_info[:2] != PYTHON:
        raise SystemExit(
            f"error: run this with Python {'.'.join(map(str, PYTHON))} (the image's Debian {SUITE} "
            f"python3): wheels built for {sys.version.split()[0]} would not load there"
        )


def pip_wheels(out: Path, *requirements: str) -> Path:
    """Every wheel ``requirements`` need, for this Python, into ``out``."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(out), *requirements], check=True
    )
    return out


def tag(wheels: Path, *recipe: str) -> str:
    """The cache key: each wheel's name and digest in name order, then ``recipe`` (what else shapes
    the image, for an image whose packages or hooks may change while its wheels stay)."""
    digest = hashlib.sha256()
    for w in sorted(wheels.glob("*.whl")):
        digest.update(w.name.encode() + hashlib.sha256(w.read_bytes()).digest())
    for part in recipe:
        digest.update(part.encode())
    return digest.hexdigest()[:12]


def venv_hooks(wheels: Path, prefix: str, requirement: str) -> list[str]:
    """mmdebstrap hooks (``$1`` is the new root): a venv at ``prefix`` holding ``requirement``,
    installed from the local wheels alone, and without pip afterwards."""
    return [
        f'mkdir "$1/tmp/wheels" && cp {wheels}/*.whl "$1/tmp/wheels/"',
        f'chroot "$1" python3 -m venv {prefix}',
        f'chroot "$1" {prefix}/bin/pip install --quiet --no-index --no-cache-dir --find-links /tmp/wheels '
        f"{requirement}",
        f'chroot "$1" {prefix}/bin/pip uninstall --quiet --yes pip',
        'rm -rf "$1/tmp/wheels"',
    ]


def user_hooks(uid: int, name: str) -> list[str]:
    """A system user and group ``name`` with ``uid`` as both ids, no home, no login shell."""
    return [
        f'chroot "$1" groupadd --system --gid {uid} {name}',
        f'chroot "$1" useradd --system --uid {uid} --gid {uid} --no-create-home --home-dir /nonexistent '
        f"--shell /usr/sbin/nologin {name}",
    ]


def rootfs(out: Path, packages: Sequence[str], hooks: Sequence[str]) -> None:
    """The root file system as a tar at ``out``: minbase with ``packages``, then ``hooks`` in order."""
    subprocess.run(
        ["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(packages)}",
         *(f"--customize-hook={h}" for h in hooks), "--format=tar", SUITE, str(out)],
        check=True,
        # This host's pip settings (find-links, indexes) mean nothing inside the new root.
        env={k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
    )  # fmt: skip


def image(
    archive: Path,
    scratch: Path,
    *,
    name: str,
    packages: Sequence[str],
    hooks: Sequence[str],
    config: dict[str, object],
    say: Callable[[str], None],
) -> Path:
    """``archive``, named ``name``, unless it is already there: the root file system made in
    ``scratch`` (as ``rootfs``) and written as the image's one layer with ``config``."""
    if archive.is_file():
        say(f"cached: {archive}")
        return archive
    say(f"mmdebstrap {SUITE} ({', '.join(packages)})")
    layer = scratch / "rootfs.tar"
    rootfs(layer, packages, hooks)
    say("writing the OCI archive")
    oci.write_archive(archive, name, [layer], config)
    return archive


def main(build: Callable[[Path], Path], description: str | None, argv: list[str] | None) -> int:
    """The command line of an image's builder: ``--out DIR``, then the archive's path printed."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=CACHE, help="folder of the archive (default: the cache)")
    args = parser.parse_args(argv)
    print(build(args.out))
    return 0
