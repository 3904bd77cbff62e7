"""Where NodeStage's and NodePublish's time goes, as the node service logs it at debug
(kubectl_fluid/spans.py; the bench reads the same lines): a cold stage's steps, validate-config
beside the FUSE's start, the FUSE's record on disk before its start and the call's last write
done while it mounts; a warm publish's bind and its state write. At info, no such line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.unit.test_csi_node import Driver, running


def steps(driver: Driver, call: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (driver.root / "driver.log").read_text().splitlines()]
    return [entry for entry in lines if entry.get("msg") == f"{call} steps"]


def test_a_cold_stage_and_a_warm_publish_log_their_steps_at_debug(tmp_path: Path) -> None:
    with running(Driver(tmp_path, extra=("--log-level", "debug"))) as driver:
        volume = driver.create("pv-a")
        staging = driver.stage(volume)
        driver.publish(volume, staging, str(tmp_path / "pods" / "a"))
        (stage,) = steps(driver, "NodeStage")
        assert stage["volume_id"] == volume.volume_id
        (key,) = driver.refcounts()
        assert stage["mount_key"] == key
        # Steps side by side end in either order: validate-config beside the FUSE's start and mount.
        assert set(stage["steps_ms"]) == {
            "volume context read",
            "config file written",
            "state written before the FUSE",
            "FUSE spawned",
            "validate-config",  # the stand-in takes the real binary's command line: it runs too
            "state written while the FUSE mounts",
            "FUSE mount awaited",
            "directory looked up through the FUSE",
            "volume bound",
            "state written",
        }, stage
        assert isinstance(stage["total_ms"], float)
        # The call's last write was the FUSE's record: the phase goes with the next write.
        on_disk = driver.state()["mounts"][key]
        assert on_disk["pid"] == driver.fuse_pids()[0]
        (publish,) = steps(driver, "NodePublish")
        assert set(publish["steps_ms"]) == {
            "state written beside the bind",
            "volume bound",
            "state written",
        }


def test_at_info_no_steps_are_logged(tmp_path: Path) -> None:
    with running(Driver(tmp_path)) as driver:
        driver.stage(driver.create("pv-a"))
        assert steps(driver, "NodeStage") == []
