"""Client mode (SPEC §7) with a real FUSE and real bind mounts: a Dataset's PV (``fluid_path``, no
``master-addrs``) is served by its runtime's client, here the FUSE stand-in started by the test at
the PV's fluid_path as a client pod would. The node service waits for that mount, binds beneath it,
never starts a FUSE of its own, re-binds when the client is replaced, says why when it never comes,
and leaves the client's mount alone at the last unstage. (Node labels need an API server: the e2e
module and test_csi_client_fuse.py cover them.)"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from csi.fuse import mounts
from csi.model.clientvolume import client_mount_key
from csi.proto import csi_pb2
from kubectl_fluid.api import names
from tests.standinclient import StandinClient
from tests.unit.test_csi_node import Driver, leftovers, running

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="real FUSE mounts need root and /dev/fuse"
)

WAIT = 3.0


def client_at(root: Path) -> StandinClient:
    return StandinClient(root / "runtime-mnt" / "cache" / "team" / "ds" / "cache-fuse", root / "client-data")


def client_volume(client: StandinClient, volume_id: str, sub_path: str = "") -> csi_pb2.Volume:
    context = {
        names.VOLUME_ATTR_DATASET_NAMESPACE: "team",
        names.VOLUME_ATTR_DATASET_NAME: "ds",
        names.VOLUME_ATTR_FLUID_PATH: str(client.fluid_path),
        names.VOLUME_ATTR_MOUNT_TYPE: "curvine",
        names.VOLUME_ATTR_RUNTIME_NAMESPACE: "team",
        names.VOLUME_ATTR_RUNTIME_NAME: "ds",
    }
    if sub_path:
        context[names.VOLUME_ATTR_FLUID_SUB_PATH] = sub_path
    return csi_pb2.Volume(volume_id=volume_id, volume_context=context)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[StandinClient]:
    c = client_at(tmp_path)
    try:
        yield c
    finally:
        c.stop()
        for m in reversed(mounts.mounted_at(c.fluid_path)):
            mounts.unmount(m.mount_point, lazy=True)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Driver]:
    with running(Driver(tmp_path, extra=("--client-wait", str(WAIT)))) as d:
        yield d


def own_leftovers(driver: Driver, client: StandinClient) -> list[str]:
    return [path for path in leftovers(driver) if not path.startswith(str(client.fluid_path))]


def read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def test_stage_waits_for_the_client_binds_beneath_it_and_volumes_share_it(
    driver: Driver, client: StandinClient
) -> None:
    whole, sub = client_volume(client, "team-ds"), client_volume(client, "team-ds-sub", "sub")
    staged: dict[str, str] = {}
    waiting = threading.Thread(target=lambda: staged.update(whole=driver.stage(whole)))
    waiting.start()
    time.sleep(0.5)
    assert waiting.is_alive()  # no client mount yet: NodeStage waits for it
    client.start()
    waiting.join(WAIT + 5)
    assert "whole" in staged
    (client.data / names.cluster_id("client:1") / "sub").mkdir(parents=True)
    staged["sub"] = driver.stage(sub)
    key = client_mount_key("team", "ds")
    assert driver.refcounts() == {key: 2}
    entry = driver.state()["mounts"][key]
    assert (entry["mode"], entry["mnt_path"], entry["client"]) == (
        "client",
        str(client.fluid_path),
        {"namespace": "team", "name": "ds"},
    )
    pods = driver.root / "pods"
    driver.publish(whole, staged["whole"], str(pods / "a"))
    driver.publish(whole, staged["whole"], str(pods / "b"), readonly=True)
    driver.publish(sub, staged["sub"], str(pods / "c"))
    (pods / "a" / "sub" / "f").write_text("through a")
    assert read(pods / "b" / "sub" / "f") == read(pods / "c" / "f") == "through a"
    with pytest.raises(OSError, match="Read-only file system"):
        (pods / "b" / "g").write_text("read-only")
    assert driver.fuse_starts() == 0  # never a FUSE of its own
    for target in ("a", "b"):
        driver.unpublish(whole, str(pods / target))
    driver.unpublish(sub, str(pods / "c"))
    driver.unstage(sub, staged["sub"])
    driver.unstage(whole, staged["whole"])
    assert driver.state()["mounts"] == {}
    assert own_leftovers(driver, client) == []
    assert client.mounted() is not None  # the client's mount is the client's: left alone


def test_a_replaced_client_gets_the_running_targets_bound_again(
    driver: Driver, client: StandinClient
) -> None:
    client.start()
    volume = client_volume(client, "team-ds")
    staging = driver.stage(volume)
    target = driver.root / "pods" / "a"
    driver.publish(volume, staging, str(target))
    (target / "f").write_text("before")
    first = client.mounted()
    client.kill_9()
    assert read(target / "f") is None  # the bind into the dead FUSE
    client.start()
    assert client.mounted() != first
    deadline = time.monotonic() + 10
    while read(target / "f") != "before":
        assert time.monotonic() < deadline, "the target was never bound into the new client mount"
        time.sleep(0.1)
    driver.unpublish(volume, str(target))
    driver.unstage(volume, staging)
    assert own_leftovers(driver, client) == []


def test_a_client_that_never_mounts_is_failed_precondition_saying_so(
    driver: Driver, client: StandinClient
) -> None:
    volume = client_volume(client, "team-ds")
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as caught:
        driver.stage(volume)
    assert time.monotonic() - started >= WAIT
    error = caught.value
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    details = error.details() or ""
    assert f"not mounted at {client.fluid_path}" in details
    assert "fluid.io/f-team-ds" in details
    assert driver.state()["mounts"] == {}  # nothing recorded: kubelet asks again
    client.start()
    staging = driver.stage(volume)  # and then it works
    driver.unstage(volume, staging)


def test_a_dead_client_mount_is_waited_for_and_failed_precondition_saying_so(
    driver: Driver, client: StandinClient
) -> None:
    """A client whose FUSE died leaves its mount (ENOTCONN) until its restart: NodeStage does not bind
    beneath it (an Internal errno 107 before), it waits and says the mount is dead."""
    client.start()
    client.kill_9(dead_mount_stays=True)
    assert client.mounted() is not None  # the dead mount stays at the target path
    volume = client_volume(client, "team-ds")
    with pytest.raises(grpc.RpcError) as caught:
        driver.stage(volume)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"is dead at {client.fluid_path}" in (caught.value.details() or "")
    assert "ENOTCONN" in (caught.value.details() or "")
    assert driver.state()["mounts"] == {}
    client.start()  # the restart mounts anew
    staging = driver.stage(volume)
    driver.unstage(volume, staging)
    assert own_leftovers(driver, client) == []


def test_a_restarted_node_service_adopts_the_client_mount_and_binds_again(
    driver: Driver, client: StandinClient
) -> None:
    client.start()
    volume = client_volume(client, "team-ds")
    staging = driver.stage(volume)
    target = driver.root / "pods" / "a"
    driver.publish(volume, staging, str(target))
    (target / "f").write_text("kept")
    driver.kill()
    client.kill_9()
    client.start()
    driver.start()
    assert read(target / "f") == "kept"
    driver.unpublish(volume, str(target))
    driver.unstage(volume, staging)
    assert own_leftovers(driver, client) == []
    assert client.mounted() is not None
