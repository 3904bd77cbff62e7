"""NodePublish mounts a volume read-only when its access mode allows no writer (issue 27, item 3).

kubelet sends ``readonly=false`` for a ReadOnlyMany claim unless the pod itself says readOnly, and a
Dataset's PVC is ReadOnlyMany by default: honouring ``readonly`` alone let any reader pod overwrite
the shared dataset. Upstream Fluid's node server mounts MULTI_NODE_READER_ONLY read-only; here every
reader-only mode of the CSI spec is (SINGLE_NODE_READER_ONLY too), and ``readonly=true`` still is
for any mode. Real FUSE (the stand-in), real bind mounts, the node service as a process."""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from csi.fuse import mounts
from csi.proto import csi_pb2
from kubectl_fluid.api import names
from tests.unit.test_csi_node import Driver, running

Mode = csi_pb2.VolumeCapability.AccessMode
READER_ONLY = [Mode.SINGLE_NODE_READER_ONLY, Mode.MULTI_NODE_READER_ONLY]
WRITERS = [
    Mode.SINGLE_NODE_WRITER,
    Mode.SINGLE_NODE_SINGLE_WRITER,
    Mode.SINGLE_NODE_MULTI_WRITER,
    Mode.MULTI_NODE_SINGLE_WRITER,
    Mode.MULTI_NODE_MULTI_WRITER,
]


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[Driver]:
    """The node service as a process (tests/unit/test_csi_node.py), nothing of it left afterwards."""
    with running(Driver(tmp_path)) as started:
        yield started


def access(mode: Mode.Mode.ValueType) -> csi_pb2.VolumeCapability:
    return csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume(), access_mode=Mode(mode=mode))


def shared_dataset(d: Driver, name: str) -> tuple[csi_pb2.Volume, str, Path]:
    """A staged volume holding a file, as the cache has it: the volume, its staging path, the file."""
    volume = d.create(name)
    staging = d.stage(volume)
    backing = d.backing(volume.volume_context[names.PARAM_CURVINE_PATH]) / "shared"
    backing.write_text("the dataset")
    return volume, staging, backing


def options(target: str) -> tuple[str, ...]:
    (mount,) = mounts.mounted_at(target)
    return mount.options


@pytest.mark.parametrize("mode", READER_ONLY, ids=Mode.Mode.Name)
def test_a_reader_only_access_mode_mounts_the_target_read_only(
    plugin: Driver, mode: Mode.Mode.ValueType
) -> None:
    volume, staging, backing = shared_dataset(plugin, "ro")
    target = str(plugin.root / "pods" / "reader")
    plugin.publish(
        volume, staging, target, access(mode)
    )  # readonly=false: kubelet's for a ReadOnlyMany claim
    assert "ro" in options(target)
    with pytest.raises(OSError, match="Read-only file system") as refused:
        Path(target, "shared").write_text("a reader pod's overwrite")
    assert refused.value.errno == errno.EROFS
    assert backing.read_text() == "the dataset"
    plugin.publish(volume, staging, target, access(mode))  # kubelet's retry: the same
    plugin.unpublish(volume, target)
    plugin.unstage(volume, staging)
    assert plugin.fuse_pids() == []


@pytest.mark.parametrize("mode", WRITERS, ids=Mode.Mode.Name)
def test_a_writer_access_mode_mounts_read_write_unless_readonly_is_asked(
    plugin: Driver, mode: Mode.Mode.ValueType
) -> None:
    volume, staging, backing = shared_dataset(plugin, "rw")
    writer, reader = (str(plugin.root / "pods" / pod) for pod in ("writer", "reader"))
    plugin.publish(volume, staging, writer, access(mode))
    plugin.publish(volume, staging, reader, access(mode), readonly=True)
    assert "rw" in options(writer)
    assert "ro" in options(reader)
    Path(writer, "shared").write_text("written")
    assert backing.read_text() == "written"
    for target in (writer, reader):
        plugin.unpublish(volume, target)
    plugin.unstage(volume, staging)


def test_a_target_published_again_with_another_read_only_ness_is_refused(plugin: Driver) -> None:
    volume, staging, _ = shared_dataset(plugin, "again")
    target = str(plugin.root / "pods" / "p")
    plugin.publish(volume, staging, target, access(Mode.MULTI_NODE_READER_ONLY))
    # The same read-only-ness by the other road: the same publication.
    plugin.publish(volume, staging, target, access(Mode.MULTI_NODE_MULTI_WRITER), readonly=True)
    with pytest.raises(grpc.RpcError) as caught:
        plugin.publish(volume, staging, target, access(Mode.MULTI_NODE_MULTI_WRITER))
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS, caught.value.details()
    assert "read-only" in (caught.value.details() or "")
    assert "ro" in options(target)
    plugin.unpublish(volume, target)
    plugin.unstage(volume, staging)


@pytest.mark.parametrize("mode", READER_ONLY, ids=Mode.Mode.Name)
def test_a_reader_only_volume_stays_read_only_when_a_runtime_binds_it_read_write(
    plugin: Driver, mode: Mode.Mode.ValueType, tmp_path: Path
) -> None:
    """What a container runtime does with a target whose pod's volumeMount is not readOnly: it binds
    the target afresh and remounts that bind read-write (runc 1.5 does, seen on the real node: the
    reader pod overwrote the dataset). A read-only bind alone cannot hold against it; a FUSE staged
    read-only for a reader-only access mode can (curvine-fuse --readonly: MS_RDONLY on its mount)."""
    volume = plugin.create("rox")
    staging = plugin.stage(volume, access(mode))
    backing = plugin.backing(volume.volume_context[names.PARAM_CURVINE_PATH]) / "shared"
    backing.write_text("the dataset")
    target = str(plugin.root / "pods" / "reader")
    plugin.publish(volume, staging, target, access(mode))
    container = tmp_path / "container-data"
    container.mkdir()
    mounts.bind(target, str(container))
    try:
        subprocess.run(["mount", "-o", "remount,bind,rw", str(container)], check=True)
        assert "rw" in options(str(container))
        with pytest.raises(OSError, match="Read-only file system") as refused:
            (container / "shared").write_text("a reader pod's overwrite")
        assert refused.value.errno == errno.EROFS
        assert backing.read_text() == "the dataset"
    finally:
        mounts.unmount(str(container), lazy=True)
    plugin.unpublish(volume, target)
    plugin.unstage(volume, staging)
    assert plugin.fuse_pids() == []
