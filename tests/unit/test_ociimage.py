"""OCI image archives written with the standard library (hack/images/oci.py): a layout ``ctr images
import`` reads, every digest true to its blob, and reproducible to the byte."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from images import oci


def members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def blob(files: dict[str, bytes], digest: str) -> bytes:
    data = files[f"blobs/sha256/{digest.removeprefix('sha256:')}"]
    assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
    return data


def test_archive_is_an_oci_layout_whose_digests_and_sizes_are_true(tmp_path: Path) -> None:
    layer = oci.layer_tar([oci.Entry("pause", b"\x7fELF...")])
    out = tmp_path / "img.tar"
    digest = oci.write_archive(out, "localhost/x/pause:v1", [layer], {"Entrypoint": ["/pause"]})
    files = members(out.read_bytes())
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    [entry] = index["manifests"]
    assert entry["digest"] == digest
    assert entry["annotations"][oci.CONTAINERD_NAME] == "localhost/x/pause:v1"
    assert entry["annotations"][oci.OCI_REF_NAME] == "v1"
    assert entry["platform"] == {"architecture": "amd64", "os": "linux"}
    manifest_bytes = blob(files, digest)
    assert entry["size"] == len(manifest_bytes)
    manifest = json.loads(manifest_bytes)
    assert manifest["mediaType"] == oci.MANIFEST
    config = json.loads(blob(files, manifest["config"]["digest"]))
    [layer_desc] = manifest["layers"]
    assert blob(files, layer_desc["digest"]) == layer
    assert layer_desc["size"] == len(layer)
    # Uncompressed layers: the diff ID is the layer's own digest.
    assert config["rootfs"]["diff_ids"] == [layer_desc["digest"]]
    assert config["config"]["Entrypoint"] == ["/pause"]
    assert (config["os"], config["architecture"]) == ("linux", "amd64")


def test_archives_are_reproducible_to_the_byte(tmp_path: Path) -> None:
    entries = [oci.Entry("bin/a", b"a"), oci.Entry("bin/b", target="a")]
    a, b = tmp_path / "a.tar", tmp_path / "b.tar"
    oci.write_archive(a, "localhost/x/y:1", [oci.layer_tar(entries)], {})
    oci.write_archive(b, "localhost/x/y:1", [oci.layer_tar(reversed(entries))], {})
    assert a.read_bytes() == b.read_bytes()


def test_an_untagged_name_is_latest(tmp_path: Path) -> None:
    # A registry port is not a tag.
    oci.write_archive(tmp_path / "i.tar", "localhost:5000/x/y", [oci.layer_tar([])], {})
    index = json.loads(members((tmp_path / "i.tar").read_bytes())["index.json"])
    assert index["manifests"][0]["annotations"][oci.OCI_REF_NAME] == "latest"


paths = st.lists(
    st.lists(
        st.text("abcxyz-_.0", min_size=1, max_size=6).filter(lambda s: s not in (".", "..")),
        min_size=1,
        max_size=3,
    ).map("/".join),
    min_size=1,
    max_size=8,
    unique=True,
)


@settings(max_examples=60, deadline=None)
@given(paths, st.data())
def test_layer_round_trips_its_files_with_root_owner_and_epoch_dates(
    names: list[str], data: st.DataObject
) -> None:
    # A path that is also a parent of another cannot be a file: keep the leaves.
    leaves = [n for n in names if not any(o.startswith(n + "/") for o in names)]
    contents = {n: data.draw(st.binary(max_size=64)) for n in leaves}
    entries = [*oci.directories(contents), *(oci.Entry(n, c, 0o640) for n, c in contents.items())]
    raw = oci.layer_tar(entries)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        infos = tar.getmembers()
        assert [i.name for i in infos] == sorted(i.name for i in infos)
        assert all((i.uid, i.gid, i.mtime) == (0, 0, 0) for i in infos)
        got = {i.name: tar.extractfile(i).read() for i in infos if i.isfile()}  # type: ignore[union-attr]
        dirs = {i.name for i in infos if i.isdir()}
    assert got == contents
    # Every parent directory is in the layer, so its mode is the layer's, not the unpacker's.
    assert all("/".join(n.split("/")[:k]) in dirs for n in contents for k in range(1, n.count("/") + 1))


@pytest.mark.skipif(
    shutil.which("busybox") is None, reason="busybox (a Debian prerequisite) is not installed"
)
def test_busybox_image_has_a_shell_and_every_applet_as_a_symlink(tmp_path: Path) -> None:
    binary = Path(shutil.which("busybox") or "")
    entries = {e.path: e for e in oci.busybox_entries(binary)}
    assert entries["bin/busybox"].data == binary.read_bytes()
    assert entries["bin/sh"].target == "/bin/busybox"
    assert entries["tmp"].mode == 0o1777
    assert b"root:x:0:0" in (entries["etc/passwd"].data or b"")
    # Each parent exactly once, none of them also a file or a link.
    tar = oci.layer_tar(entries.values())
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        names = [m.name for m in t.getmembers()]
    assert len(names) == len(set(names))
    assert {"bin", "usr", "usr/bin", "sbin"} <= {
        m for m in names if entries[m].data is None and entries[m].target is None
    }


def test_a_layer_given_as_a_file_is_streamed_into_the_same_archive(tmp_path: Path) -> None:
    layer = oci.layer_tar([oci.Entry("etc/os-release", b"ID=debian\n", 0o644)])
    (tmp_path / "rootfs.tar").write_bytes(layer)
    from_bytes, from_file = tmp_path / "a.tar", tmp_path / "b.tar"
    oci.write_archive(from_bytes, "localhost/x/y:1", [layer], {})
    oci.write_archive(from_file, "localhost/x/y:1", [tmp_path / "rootfs.tar"], {})
    assert from_bytes.read_bytes() == from_file.read_bytes()


def test_a_static_binary_image_holds_the_binary_at_its_name_as_entrypoint(tmp_path: Path) -> None:
    # As distroless images of Go commands hold them (the CSI sidecars'): /NAME and nothing else.
    binary = tmp_path / "csi-provisioner"
    binary.write_bytes(b"\x7fELF provisioner")
    out = tmp_path / "img.tar"
    digest = oci.binary_image(binary, "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0", out)
    files = members(out.read_bytes())
    manifest = json.loads(blob(files, digest))
    config = json.loads(blob(files, manifest["config"]["digest"]))
    assert config["config"]["Entrypoint"] == ["/csi-provisioner"]
    [layer] = manifest["layers"]
    assert members(blob(files, layer["digest"])) == {"csi-provisioner": b"\x7fELF provisioner"}
    # The pause image is one of these.
    (tmp_path / "pause").write_bytes(b"p")
    assert oci.pause_image(tmp_path / "pause", "x:1", tmp_path / "a.tar") == oci.binary_image(
        tmp_path / "pause", "x:1", tmp_path / "b.tar"
    )
