"""csi/node/brokenreasons.py: a client's mount (SPEC §7) is Broken in the client's words (its runtime,
its client pod), a CSI-run FUSE in its own (its masters, its process or pod); never one in the
other's."""

from __future__ import annotations

from csi.model.params import FuseParams
from csi.node import brokenreasons
from csi.node.state import ClientRef, MountEntry


def own(pid: int | None = None, pod_name: str | None = None) -> MountEntry:
    params = FuseParams(master_addrs="m0:8995,m1:8995", fs_path="/k8s")
    return MountEntry(
        key="k1", params=params, mnt_path="/var/lib/fluid/mnt/k1", mode="embedded", pid=pid, pod_name=pod_name
    )


def client(pod: str | None = "demo-client-x7") -> MountEntry:
    params = FuseParams(master_addrs="", fs_path="/")
    return MountEntry(
        key="k2",
        params=params,
        mnt_path="/runtime-mnt/cache/team/demo/cache-fuse",
        mode="client",
        client=ClientRef(namespace="team", name="demo"),
        pod_name=pod,
    )


def test_a_clients_root_gone_names_the_runtime_and_its_client_pod_not_masters() -> None:
    why = brokenreasons.root_gone(client())
    assert "runtime team/demo's client" in why
    assert "team/demo-client-x7" in why
    assert "/runtime-mnt/cache/team/demo/cache-fuse answers ENOENT" in why
    assert "fs-path" not in why
    assert "at  (" not in why


def test_a_clients_pod_unknown_is_said_so() -> None:
    assert "team/the client pod on this node" in brokenreasons.root_gone(client(pod=None))


def test_an_own_fuses_root_gone_names_its_fs_path_and_masters() -> None:
    why = brokenreasons.root_gone(own())
    assert "fs-path /k8s is gone from the cache at m0:8995,m1:8995" in why


def test_hung_says_how_to_restart_each_kind() -> None:
    assert "delete its client pod team/demo-client-x7" in brokenreasons.hung(client(), "a stat", 8)
    assert "kill its process 42" in brokenreasons.hung(own(pid=42), "a stat", 8)
    assert "delete its pod fluid-system/fuse-1" in brokenreasons.hung(own(pod_name="fuse-1"), "a stat", 8)
    assert "for more than 8 s (a stat)" in brokenreasons.hung(own(), "a stat", 8)
