#!/usr/bin/env python3
"""Curvine's own image layout, taken from Curvine's source at the pinned commit, for Curvine's image
(hack/images/curvine.py): the files Curvine's Dockerfile (``curvine-docker/deploy/Dockerfile_*``, its
runtime stage) copies, at the paths it copies them to.

    PYTHONPATH=hack python3 -m localcluster.peers.curvinelayout

prints a folder whose ``root/`` mirrors the image's root: ``entrypoint.sh`` (Curvine's container
entrypoint, which hands Fluid mode to ``fluid-entrypoint.sh``), ``fluid-entrypoint.sh``, and
``app/curvine/`` (``CURVINE_HOME``) with Curvine's Fluid scripts (``generate_config.py``,
``config-parse.py``, ``mountUfs.sh``, ``reportSummary.sh``), ``bin/`` (Curvine's launch scripts and
its ``cv`` wrapper, which runs ``lib/curvine-cli``) and ``conf/`` (Curvine's ``etc/`` but its Grafana
dashboards). Curvine's binaries are not in it: the image links ``app/curvine/lib/`` to them (the CSI
driver runs them at /opt/curvine). Beside ``root/``, ``cache-runtime/`` holds Curvine's own
CacheRuntime files (its class, a Dataset and CacheRuntime, a test pod), which
manifests/samples/curvine-fluid/ follows.

The scripts are Curvine's, never committed here: the source tarball in the test peer folder
(curvinebins.peer_dir()) is checked against ``CURVINE_SRC_SHA256`` (hack/versions.env), the files are
taken from it, a Curvine bug that blocks them is patched (PATCHES: images/curvine/*.patch, each saying
why; ``patch`` must be installed), and they are unpacked into
``curvine-{CURVINE_VERSION}-layout-{digest of the patches}`` in the cache (beside the binaries'
folder, which curvinebins replaces whole), once, through a temporary folder renamed at the end.
Standard library only, as curvinebins.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from localcluster.peers import curvinebins
from localcluster.peers.curvinebins import REPO, CurvineBinsError, _sha256, cache_dir, peer_dir, pins, version

ROOT = "root"
CACHE_RUNTIME_DIR = "cache-runtime"
# Curvine's Dockerfile: COPY source → destination in the image (a folder's files go beneath it).
FILES = {
    "curvine-docker/deploy/entrypoint.sh": "entrypoint.sh",
    "curvine-docker/fluid/entrypoint.sh": "fluid-entrypoint.sh",
    "curvine-docker/fluid/generate_config.py": "app/curvine/generate_config.py",
    "curvine-docker/fluid/config-parse.py": "app/curvine/config-parse.py",
    "curvine-docker/fluid/mountUfs.sh": "app/curvine/mountUfs.sh",
    "curvine-docker/fluid/reportSummary.sh": "app/curvine/reportSummary.sh",
}
# build.sh's dist: build/bin/* → bin/, etc/. → conf/ (dashboards are for Grafana, not the pods).
FOLDERS = {"build/bin": "app/curvine/bin", "etc": "app/curvine/conf"}
SKIPPED = ("etc/grafana",)
# Curvine bugs that block its files here, fixed in the image (never in the files users apply):
# patch → the source file it changes.
PATCH_DIR = REPO / "images" / "curvine"
PATCHES = {
    "fluid-client-options-to-fuse.patch": "curvine-docker/fluid/generate_config.py",
    "fluid-client-dead-mount.patch": "curvine-docker/fluid/entrypoint.sh",
    "fluid-report-summary-totals.patch": "curvine-docker/fluid/reportSummary.sh",
}
# Curvine's cache-runtime files (the class, a Dataset and CacheRuntime, a test pod), beside the layout
# for whoever copies them (the e2e's samples say how theirs differ).
CACHE_RUNTIME = "curvine-docker/fluid/cache-runtime"


def source_tarball() -> Path:
    return peer_dir() / f"curvine-src-{version()}.tar.xz"


def layout_dir() -> Path:
    digest = hashlib.sha256()
    for patch in sorted(PATCHES):
        digest.update((PATCH_DIR / patch).read_bytes())
    return cache_dir().with_name(f"{cache_dir().name}-layout-{digest.hexdigest()[:8]}")


def root_dir() -> Path:
    """The folder that mirrors the image's root."""
    return layout_dir() / ROOT


def destination(member: str) -> str | None:
    """Where a member of the source tarball lands in the layout; None for one the image leaves out."""
    path = str(PurePosixPath(member.removeprefix("./")))
    if path in FILES:
        return FILES[path]
    if path.startswith(SKIPPED):
        return None
    for source, dest in FOLDERS.items():
        if path.startswith(f"{source}/"):
            return f"{dest}/{path.removeprefix(f'{source}/')}"
    return None


def ensure() -> Path:
    """The layout folder, unpacked from the pinned source tarball if it is not there yet."""
    dest = layout_dir()
    if (dest / ROOT / FILES["curvine-docker/fluid/entrypoint.sh"]).is_file():
        return dest
    tarball = source_tarball()
    if not tarball.is_file():
        raise CurvineBinsError(
            f"Curvine's image layout is not cached in {dest} and {tarball} is not there: put the test "
            "peer folder there or point CURVINE_PEER_DIR at it"
        )
    got, pinned = _sha256(tarball), pins()["CURVINE_SRC_SHA256"]
    if got != pinned:
        raise CurvineBinsError(f"{tarball} has sha256 {got}, the pin (hack/versions.env) is {pinned}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        _unpack(tarball, tmp)
        for patch, source in PATCHES.items():
            _patch(tmp / ROOT / FILES[source], PATCH_DIR / patch)
        tmp.chmod(0o755)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _unpack(tarball: Path, into: Path) -> None:
    found: set[str] = set()
    with tarfile.open(tarball) as tar:
        for member in tar:
            if not member.isfile():
                continue
            name = str(PurePosixPath(member.name.removeprefix("./")))
            where = destination(name)
            if where is not None:
                where = f"{ROOT}/{where}"
            elif name.startswith(f"{CACHE_RUNTIME}/"):
                where = f"{CACHE_RUNTIME_DIR}/{name.removeprefix(f'{CACHE_RUNTIME}/')}"
            else:
                continue
            extracted = tar.extractfile(member)
            assert extracted is not None  # a regular file
            target = into / where
            target.parent.mkdir(parents=True, exist_ok=True)
            with extracted, open(target, "wb") as out:
                shutil.copyfileobj(extracted, out)
            # Curvine's Dockerfile makes every script executable; the rest is read by all.
            target.chmod(0o755 if where.endswith((".sh", ".py")) or "/bin/" in where else 0o644)
            found.add(name)
    missing = sorted(set(FILES) - found)
    if missing:
        raise CurvineBinsError(f"{tarball} holds no {', '.join(missing)}")


def _patch(target: Path, patch: Path) -> None:
    done = subprocess.run(
        ["patch", "--quiet", "--forward", "--no-backup-if-mismatch", str(target), str(patch)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise CurvineBinsError(f"{patch.name} does not apply to {target.name}: {done.stdout}{done.stderr}")


def main() -> int:
    return curvinebins.main(ensure)


if __name__ == "__main__":
    raise SystemExit(main())
