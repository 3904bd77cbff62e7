#!/usr/bin/env python3
"""The real Curvine's binaries for the test bed, unpacked into the version-keyed cache.

    PYTHONPATH=hack python3 -m localcluster.peers.curvinebins

prints the directory holding curvine-server, curvine-fuse and Curvine's CLI ``cv``.

Curvine is on no package registry this machine reaches: the test peer folder (``../shared/peers/
curvine`` beside the repository, or ``$CURVINE_PEER_DIR``) holds its source at the pinned commit and
stripped binaries built from it. They are unpacked, checked against the pinned sha256, into
``$KUBECTL_FLUID_CACHE/curvine-{CURVINE_VERSION}`` (default ``~/.cache/kubectl-fluid``), beside the
control plane's, once: a temporary folder renamed at the end, so an interrupted unpack never leaves
an entry later runs would trust. The folder also keeps the peer's single-node example configuration,
from which curvinecluster.py derives the test bed's. The source stays in the peer folder, for a
rebuild (its README says how).

Standard library only (``make bins`` runs it before the venv exists).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

HACK = Path(__file__).resolve().parents[2]
REPO = HACK.parent
TARBALL = "curvine-bins-stripped.tar.gz"
# The CLI, built later from the same commit (crate curvine-cli, with S3), in a tarball of its own.
CLI_TARBALL = "curvine-cli-cv-stripped.tar.gz"
EXAMPLE = "curvine-cluster.example.toml"
# Tarball → (its pin in hack/versions.env, member of the tarball → name in the cache).
TARBALLS = {
    TARBALL: (
        "CURVINE_BINS_SHA256",
        {"curvine-server.stripped": "curvine-server", "curvine-fuse.stripped": "curvine-fuse"},
    ),
    CLI_TARBALL: ("CURVINE_CLI_SHA256", {"cv": "cv"}),
}
BINARIES = {member: name for _, members in TARBALLS.values() for member, name in members.items()}
SERVER, FUSE, CLI = BINARIES.values()


class CurvineBinsError(Exception):
    """The binaries are neither cached nor unpackable; the message says what to do."""


def pins() -> dict[str, str]:
    pinned = {}
    for line in (HACK / "versions.env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            pinned[key.strip()] = value.strip()
    return pinned


def version() -> str:
    return pins()["CURVINE_VERSION"]


def peer_dir() -> Path:
    given = os.environ.get("CURVINE_PEER_DIR")
    return Path(given) if given else REPO.parent / "shared" / "peers" / "curvine"


def cache_dir() -> Path:
    cache = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid"))
    return cache / f"curvine-{version()}"


def cached(directory: Path | None = None) -> bool:
    where = directory or cache_dir()
    return all(os.access(where / name, os.X_OK) for name in BINARIES.values()) and (where / EXAMPLE).is_file()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure() -> Path:
    """The cache folder with both binaries and the example configuration, unpacked if needed."""
    dest = cache_dir()
    if cached(dest):
        return dest
    source = peer_dir()
    missing = [f for f in (*TARBALLS, EXAMPLE) if not (source / f).is_file()]
    if missing:
        raise CurvineBinsError(
            f"the real Curvine's binaries are not cached in {dest} and {source} has no "
            f"{' and '.join(missing)}: put the test peer folder there or point CURVINE_PEER_DIR at it"
        )
    pinned = pins()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for name, (pin, members) in TARBALLS.items():
            _unpack(source / name, pinned[pin], members, tmp)
        shutil.copyfile(source / EXAMPLE, tmp / EXAMPLE)
        tmp.chmod(0o755)  # mkdtemp's 0700 would keep FUSE pods' other users from the binaries
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _unpack(tarball: Path, sha256: str, members: dict[str, str], into: Path) -> None:
    got = _sha256(tarball)
    if got != sha256:
        raise CurvineBinsError(f"{tarball} has sha256 {got}, the pin (hack/versions.env) is {sha256}")
    with tarfile.open(tarball) as tar:
        for member, name in members.items():
            extracted = tar.extractfile(member)
            if extracted is None:
                raise CurvineBinsError(f"{tarball} holds no file {member}")
            with extracted, open(into / name, "wb") as out:
                shutil.copyfileobj(extracted, out)
            (into / name).chmod(0o755)


def find() -> Path | None:
    """The cache folder, unpacked if the peer folder allows; None when neither is there."""
    try:
        return ensure()
    except CurvineBinsError:
        return None


def main(make: Callable[[], Path] = ensure) -> int:
    """Print the folder ``make`` returns (curvinelayout.py's main too), or say why there is none."""
    try:
        print(make())
    except CurvineBinsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
