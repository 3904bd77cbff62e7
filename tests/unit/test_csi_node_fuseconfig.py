"""The node service and curvine-fuse's configuration: a file per mount key beside its mount point
(the node's --fuse-config settings with the volume's masters), checked by the binary's own
``validate-config`` beside the FUSE's start, gone with the key; each FUSE's output kept per key; the
exit code of a FUSE stopped at the last unstage logged."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import grpc
import pytest

from kubectl_fluid.api import names
from tests.unit.curvine_real import FUSE_BINARY, requires_real_fuse
from tests.unit.test_csi_node import MASTERS, Driver, leftovers, running

NODE_SETTINGS = '[fuse]\nenable_splice = false\n\n[client]\nhostname = "node-1"\n'


def mount_dir(driver: Driver) -> Path:
    (key,) = driver.state()["mounts"]
    return Path(driver.state()["mounts"][key]["mnt_path"])


def test_each_key_gets_a_configuration_file_that_goes_with_it(tmp_path: Path) -> None:
    settings = tmp_path / "node.toml"
    settings.write_text(NODE_SETTINGS)
    with running(Driver(tmp_path, extra=("--fuse-config", str(settings)))) as driver:
        volume = driver.create("pv-a")
        staging = driver.stage(volume)
        mnt = mount_dir(driver)
        conf = Path(names.fuse_config_path(str(mnt)))
        config = tomllib.loads(conf.read_text())
        assert config["client"] == {"hostname": "node-1", "master_addrs": [{"hostname": "m1", "port": 8995}]}
        assert config["fuse"]["enable_splice"] is False
        (pid,) = driver.fuse_pids()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert argv[3:5] == [b"--conf", str(conf).encode()]
        (key,) = driver.refcounts()
        log = tmp_path / "state" / "fuse-logs" / f"{key}.log"
        assert log.exists()

        driver.unstage(volume, staging)
        assert not conf.exists()
        assert not mnt.parent.exists(), "the key's directory stays behind"
        assert not log.exists()
        assert leftovers(driver) == []
        stopped = [json.loads(line) for line in (tmp_path / "driver.log").read_text().splitlines()]
        assert any(entry.get("msg") == "stopped FUSE (exit 0)" for entry in stopped), stopped[-5:]


def test_a_node_settings_file_that_is_not_toml_stops_the_node_service(tmp_path: Path) -> None:
    settings = tmp_path / "node.toml"
    settings.write_text("[fuse\n")
    driver = Driver(tmp_path, extra=("--fuse-config", str(settings)))
    with pytest.raises(AssertionError, match="is not valid TOML"):
        driver.start()
    driver.stop()


@requires_real_fuse
def test_what_validate_config_refuses_fails_node_stage_with_curvine_fuses_words(tmp_path: Path) -> None:
    """A node setting curvine-fuse cannot start with: the real binary's validate-config says so at
    NodeStage (FAILED_PRECONDITION; the FUSE started beside the check is stopped), and nothing is left."""
    settings = tmp_path / "node.toml"
    settings.write_text("[fuse]\nio_threads = 0\nenable_splice = false\n")
    with running(Driver(tmp_path, fuse_binary=str(FUSE_BINARY), extra=("--fuse-config", str(settings)))) as d:
        volume = d.create("pv-a")
        with pytest.raises(grpc.RpcError) as caught:
            d.stage(volume)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        details = caught.value.details() or ""
        assert "validate-config exited 1" in details, details
        assert "fuse.io_threads must be > 0" in details, details
        assert MASTERS in details
        assert d.state()["mounts"] == {}
        assert leftovers(d) == []
        assert not any((tmp_path / "plugins").rglob(names.FUSE_CONFIG_FILE))
