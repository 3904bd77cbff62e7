#!/usr/bin/env python3
"""OCI image archives without Docker or a registry: layer tars, an image config, a manifest and an
index, in the OCI image layout, as one tar that ``ctr images import`` reads. Standard library only.

    cd hack && python -m images.oci pause   --binary PAUSE   --name localhost/x/pause:TAG   --out pause.tar
    cd hack && python -m images.oci busybox --binary BUSYBOX --name localhost/x/busybox:TAG --out busybox.tar

Every archive is reproducible to the byte: entries sorted, owned by root, dated at the epoch, and
layers uncompressed (the importer needs no gzip, and digests do not depend on a compressor).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
# containerd names an imported image by this annotation; the OCI one carries the tag for other tools.
CONTAINERD_NAME = "io.containerd.image.name"
OCI_REF_NAME = "org.opencontainers.image.ref.name"
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Entry:
    """One file system entry of a layer: a file (``data``), a directory, or a symlink (``target``)."""

    path: str
    data: bytes | None = None
    mode: int = 0o755
    target: str | None = None


def directories(paths: Iterable[str]) -> list[Entry]:
    """The parent directories every path needs, each once: a tar without them unpacks, but with the
    directories' modes left to the unpacker."""
    dirs: set[str] = set()
    for path in paths:
        parts = path.strip("/").split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return [Entry(d) for d in sorted(dirs)]


def layer_tar(entries: Iterable[Entry]) -> bytes:
    """An uncompressed layer, reproducible: sorted by path, root-owned, mtime 0."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(entries, key=lambda e: e.path):
            info = tarfile.TarInfo(entry.path.strip("/"))
            info.mode, info.mtime, info.uid, info.gid = entry.mode, 0, 0, 0
            if entry.target is not None:
                info.type, info.linkname = tarfile.SYMTYPE, entry.target
                tar.addfile(info)
            elif entry.data is not None:
                info.size = len(entry.data)
                tar.addfile(info, io.BytesIO(entry.data))
            else:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
    return out.getvalue()


# A blob in memory, or a file (a root file system of hundreds of megabytes is never read in whole).
Blob = bytes | Path


def _info(path: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(path)
    info.type, info.mode, info.size, info.mtime, info.uid, info.gid = kind, mode, size, 0, 0, 0
    return info


def _digest(data: Blob) -> str:
    if isinstance(data, bytes):
        return "sha256:" + hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    with open(data, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def _size(data: Blob) -> int:
    return len(data) if isinstance(data, bytes) else data.stat().st_size


def _descriptor(media_type: str, data: Blob, **extra: Any) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": _digest(data), "size": _size(data), **extra}


def image_blobs(
    name: str, layers: list[Blob], config: dict[str, Any]
) -> tuple[dict[str, Blob], dict[str, Any]]:
    """The blobs (digest -> bytes) and the index of a single-platform linux/amd64 image."""
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [_digest(layer) for layer in layers]},
        "history": [{"created_by": "hack/ociimage.py"} for _ in layers],
    }
    config_bytes = _canonical(image_config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": _descriptor(CONFIG, config_bytes),
        "layers": [_descriptor(LAYER, layer) for layer in layers],
    }
    manifest_bytes = _canonical(manifest)
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX,
        "manifests": [
            _descriptor(
                MANIFEST,
                manifest_bytes,
                platform={"architecture": "amd64", "os": "linux"},
                annotations={CONTAINERD_NAME: name, OCI_REF_NAME: tag},
            )
        ],
    }
    blobs: dict[str, Blob] = {_digest(b): b for b in (*layers, config_bytes, manifest_bytes)}
    return blobs, index


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def write_archive(out: Path, name: str, layers: list[Blob], config: dict[str, Any]) -> str:
    """The image as an OCI layout tar at ``out`` (written beside it and renamed, so a reader never
    sees half an archive), streamed: a layer given as a file is copied, never held in memory.
    Returns the manifest's digest."""
    blobs, index = image_blobs(name, layers, config)
    files: dict[str, Blob] = {
        "oci-layout": _canonical({"imageLayoutVersion": "1.0.0"}),
        "index.json": _canonical(index),
        **{f"blobs/sha256/{d.removeprefix('sha256:')}": b for d, b in blobs.items()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.NamedTemporaryFile(dir=out.parent, prefix=out.name, delete=False) as tmp,
        tarfile.open(fileobj=tmp, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for d in directories(files):
            tar.addfile(_info(d.path, tarfile.DIRTYPE, 0o755))
        for path in sorted(files):
            data = files[path]
            info = _info(path, tarfile.REGTYPE, 0o644, _size(data))
            if isinstance(data, bytes):
                tar.addfile(info, io.BytesIO(data))
            else:
                with open(data, "rb") as f:
                    tar.addfile(info, f)
    Path(tmp.name).chmod(0o644)
    Path(tmp.name).replace(out)
    digest: str = index["manifests"][0]["digest"]
    return digest


def binary_image(binary: Path, name: str, out: Path) -> str:
    """A static binary alone at ``/{its file name}``, its entrypoint: as distroless images of Go
    commands (the CSI sidecars') hold them."""
    layer = layer_tar([Entry(binary.name, binary.read_bytes())])
    return write_archive(out, name, [layer], {"Entrypoint": [f"/{binary.name}"], "Env": [DEFAULT_PATH]})


def pause_image(binary: Path, name: str, out: Path) -> str:
    """The sandbox image: the static pause binary alone."""
    return binary_image(binary, name, out)


def busybox_entries(binary: Path) -> list[Entry]:
    """A static busybox at /bin/busybox and a symlink for each applet it lists (``--list-full``),
    plus /tmp, /etc/passwd and /etc/group so that tools asking for users find root."""
    applets = subprocess.run(
        [str(binary), "--list-full"], check=True, capture_output=True, text=True
    ).stdout.split()
    links = [Entry(a, target="/bin/busybox") for a in applets if a != "bin/busybox"]
    files = [
        Entry("bin/busybox", binary.read_bytes()),
        Entry(
            "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n", 0o644
        ),
        Entry("etc/group", b"root:x:0:\nnogroup:x:65534:\n", 0o644),
    ]
    extra_dirs = [Entry("tmp", mode=0o1777), Entry("root", mode=0o700)]
    listed = {e.path for e in (*links, *files, *extra_dirs)}
    parents = [d for d in directories(listed) if d.path not in listed]
    return [*parents, *extra_dirs, *files, *links]


def busybox_image(binary: Path, name: str, out: Path) -> str:
    layer = layer_tar(busybox_entries(binary))
    return write_archive(out, name, [layer], {"Cmd": ["sh"], "Env": [DEFAULT_PATH]})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("kind", choices=["pause", "busybox"])
    parser.add_argument("--binary", type=Path, required=True)
    parser.add_argument("--name", required=True, help="the image reference containerd records")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    build = pause_image if args.kind == "pause" else busybox_image
    print(build(args.binary, args.name, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
