"""The test bed's real Curvine: its binaries unpacked into the version-keyed cache (sha256-pinned,
once, never half), and its configuration derived from the peer's example on free ports."""

from __future__ import annotations

import hashlib
import io
import tarfile
import tomllib
from pathlib import Path

import pytest

from localcluster.peers import curvinebins, curvinecluster


def peer(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A peer folder with each tarball of fake binaries, and the pins of their digests."""
    folder = tmp_path / "peer"
    folder.mkdir()
    pins = {"CURVINE_VERSION": "abc1234"}
    for tarball, (pin, members) in curvinebins.TARBALLS.items():
        with tarfile.open(folder / tarball, "w:gz") as tar:
            for name in members:
                data = f"#!/bin/sh\necho {name}\n".encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        pins[pin] = hashlib.sha256((folder / tarball).read_bytes()).hexdigest()
    (folder / curvinebins.EXAMPLE).write_text("[fuse]\nenable_splice = false\n")
    return folder, pins


@pytest.fixture
def fake_peer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder, pins = peer(tmp_path)
    monkeypatch.setenv("CURVINE_PEER_DIR", str(folder))
    monkeypatch.setenv("KUBECTL_FLUID_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(curvinebins, "pins", lambda: pins)
    return folder


def test_unpacked_once_into_the_version_keyed_cache(fake_peer: Path, tmp_path: Path) -> None:
    dest = curvinebins.ensure()
    assert dest == tmp_path / "cache" / "curvine-abc1234"
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        [*curvinebins.BINARIES.values(), curvinebins.EXAMPLE]
    )
    assert (dest / "curvine-fuse").stat().st_mode & 0o111
    assert dest.stat().st_mode & 0o755 == 0o755
    before = (dest / "curvine-fuse").stat().st_mtime_ns
    for tarball in curvinebins.TARBALLS:
        (fake_peer / tarball).unlink()  # cached: the peer folder is not read again
    assert curvinebins.ensure() == dest
    assert (dest / "curvine-fuse").stat().st_mtime_ns == before
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]  # no temporary folder left


@pytest.mark.parametrize("pin", [pin for pin, _ in curvinebins.TARBALLS.values()])
def test_a_tarball_that_is_not_the_pinned_one_is_refused(
    fake_peer: Path, monkeypatch: pytest.MonkeyPatch, pin: str
) -> None:
    pins = {**curvinebins.pins(), pin: "0" * 64}
    monkeypatch.setattr(curvinebins, "pins", lambda: pins)
    with pytest.raises(curvinebins.CurvineBinsError, match="the pin"):
        curvinebins.ensure()
    assert not curvinebins.cached()
    assert curvinebins.find() is None


def test_without_the_peer_folder_the_error_says_where_to_put_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURVINE_PEER_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("KUBECTL_FLUID_CACHE", str(tmp_path / "cache"))
    with pytest.raises(curvinebins.CurvineBinsError, match="CURVINE_PEER_DIR"):
        curvinebins.ensure()


def test_the_pin_is_the_peer_folders_commit() -> None:
    assert curvinebins.version() == "bff4e7d"
    for pin, _ in curvinebins.TARBALLS.values():
        assert len(curvinebins.pins()[pin]) == 64


EXAMPLE_CONFIG = """
format_master = true
format_worker = true
[master]
hostname = "127.0.0.1"
rpc_port = 18995
web_port = 19001
meta_dir = "/var/tmp/curvine/meta"
heartbeat_interval = "500ms"
[journal]
hostname = "127.0.0.1"
rpc_port = 18996
journal_addrs = [ { id = 1, hostname = "127.0.0.1", port = 18996 } ]
journal_dir = "/var/tmp/curvine/journal"
raft_tick_interval_ms = 100
[worker]
rpc_port = 18997
web_port = 19002
data_dir = [ "[DISK]/var/tmp/curvine/data" ]
[client]
hostname = "127.0.0.1"
master_addrs = [ { hostname = "127.0.0.1", port = 18995 } ]
[fuse]
web_port = 19003
enable_splice = false
"""


def test_the_clusters_configuration_keeps_the_settings_this_machine_needs(tmp_path: Path) -> None:
    ports = dict(zip(curvinecluster.PORTS, range(40001, 40007), strict=True))
    config = curvinecluster.cluster_config(tomllib.loads(EXAMPLE_CONFIG), tmp_path, ports)
    assert config["master"]["heartbeat_interval"] == "500ms"
    assert config["journal"]["raft_tick_interval_ms"] == 100
    assert config["fuse"]["enable_splice"] is False
    # A restarted master keeps its namespace.
    assert (config["format_master"], config["format_worker"]) == (False, False)
    assert (config["master"]["rpc_port"], config["master"]["web_port"]) == (40001, 40002)
    assert config["journal"]["journal_addrs"] == [{"id": 1, "hostname": "127.0.0.1", "port": 40003}]
    assert (config["worker"]["rpc_port"], config["worker"]["web_port"], config["fuse"]["web_port"]) == (
        40004,
        40005,
        40006,
    )
    assert config["client"]["master_addrs"] == [{"hostname": "127.0.0.1", "port": 40001}]
    assert config["worker"]["data_dir"] == [f"[DISK]{tmp_path / 'data'}"]
    assert "/var/tmp" not in repr(config)
    assert curvinecluster.node_settings(config) == {
        "fuse": {"web_port": 40006, "enable_splice": False},
        "client": {"hostname": "127.0.0.1"},
    }


def test_free_ports_are_distinct() -> None:
    ports = curvinecluster.free_ports(len(curvinecluster.PORTS))
    assert len(set(ports)) == len(curvinecluster.PORTS)
