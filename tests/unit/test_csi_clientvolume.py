"""Client mode's pure parts (SPEC §7): which volume is a client's, its context read back, its mount
key, the label's fate at the last unstage, the words of a FailedMount, the state and mirror of a
client mount; and the client runner's label and watch decisions against a fake API server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from csi.fuse import clientfuse
from csi.fuse.clientfuse import ClientFuse
from csi.fuse.mounts import MountInfo
from csi.model.clientvolume import (
    CLIENT_PARAMS,
    ClientVolume,
    clean_policy_of,
    clears_label,
    client_mount_key,
    client_pod_state,
    is_client_volume,
    not_mounted_message,
    parse_client_context,
)
from csi.model.errors import FuseUnavailable, InvalidParameter
from csi.node import state as nst
from csi.node.mirror import to_fusemount
from csi.node.statefile import from_json, to_json
from kubectl_fluid.api import names

FLUID_PATH = "/runtime-mnt/cache/team/ds/cache-fuse"
CONTEXT = {
    names.VOLUME_ATTR_DATASET_NAMESPACE: "team",
    names.VOLUME_ATTR_DATASET_NAME: "ds",
    names.VOLUME_ATTR_FLUID_PATH: FLUID_PATH,
    names.VOLUME_ATTR_MOUNT_TYPE: "curvine",
    names.VOLUME_ATTR_RUNTIME_NAMESPACE: "team",
    names.VOLUME_ATTR_RUNTIME_NAME: "ds",
}
VOLUME = ClientVolume("team", "ds", FLUID_PATH, "/")
NAMES = st.from_regex(r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)


def test_a_client_volume_has_a_fluid_path_and_no_masters() -> None:
    assert is_client_volume(CONTEXT)
    assert not is_client_volume({**CONTEXT, names.PARAM_MASTER_ADDRS: "m:8995"})  # SPEC §5 wins
    assert not is_client_volume({names.PARAM_MASTER_ADDRS: "m:8995", names.PARAM_CURVINE_PATH: "/x"})


def test_the_context_reads_back_with_upstreams_names() -> None:
    assert parse_client_context(CONTEXT) == ClientVolume("team", "ds", FLUID_PATH, "/", "curvine")
    sub = parse_client_context({**CONTEXT, names.VOLUME_ATTR_FLUID_SUB_PATH: "a//b/"})
    assert sub.sub_path == "/a/b"
    # The runtime from the Dataset's attributes when upstream's are absent (they share the name).
    bare = {k: v for k, v in CONTEXT.items() if not k.startswith("runtime_")}
    assert parse_client_context(bare).key == VOLUME.key


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({names.VOLUME_ATTR_FLUID_PATH: "relative/path"}, names.VOLUME_ATTR_FLUID_PATH),
        ({names.VOLUME_ATTR_FLUID_PATH: "/"}, names.VOLUME_ATTR_FLUID_PATH),
        ({names.VOLUME_ATTR_FLUID_PATH: "/a/../b"}, names.VOLUME_ATTR_FLUID_PATH),
        ({names.VOLUME_ATTR_FLUID_SUB_PATH: "../escape"}, names.VOLUME_ATTR_FLUID_SUB_PATH),
    ],
)
def test_an_unusable_context_names_its_key(change: dict[str, str], key: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_client_context({**CONTEXT, **change})
    assert caught.value.key == key


def test_a_context_without_its_runtime_is_refused() -> None:
    bare = {names.VOLUME_ATTR_FLUID_PATH: FLUID_PATH}
    with pytest.raises(InvalidParameter, match="runtime_namespace and runtime_name are required"):
        parse_client_context(bare)


@given(NAMES, NAMES, NAMES, NAMES)
def test_one_key_per_dataset_stable_and_distinct(ns1: str, n1: str, ns2: str, n2: str) -> None:
    key = client_mount_key(ns1, n1)
    assert key == client_mount_key(ns1, n1)
    assert len(key) == names.MOUNT_KEY_LENGTH
    assert all(c in "0123456789abcdef" for c in key)
    assert (key == client_mount_key(ns2, n2)) == ((ns1, n1) == (ns2, n2))


@pytest.mark.parametrize(
    ("policy", "exists", "clears"),
    [
        ("OnDemand", True, True),
        ("OnRuntimeDeleted", True, False),
        (None, True, False),  # upstream's default: OnRuntimeDeleted
        ("OnRuntimeDeleted", False, True),  # the runtime is gone: nothing else removes it
        (None, False, True),
    ],
)
def test_the_label_goes_at_the_last_unstage_as_the_clean_policy_says(
    policy: str | None, exists: bool, clears: bool
) -> None:
    assert clears_label(policy, exists) is clears


def test_the_clean_policy_is_read_from_the_runtimes_client() -> None:
    assert clean_policy_of({"spec": {"client": {"cleanPolicy": "OnDemand"}}}) == "OnDemand"
    assert clean_policy_of({"spec": {}}) is None
    assert clean_policy_of(None) is None


def pod(phase: str, **container: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "ds-client-x", "namespace": "team"},
        "status": {"phase": phase, "containerStatuses": [container] if container else []},
    }


@pytest.mark.parametrize(
    ("client", "words"),
    [
        (None, "no client pod of runtime team/ds is scheduled on this node (is its client DaemonSet there,"
               ' and does its nodeSelector fluid.io/f-team-ds: "true"'),
        (pod("Running", state={"waiting": {"reason": "CrashLoopBackOff"}}, restartCount=4,
             lastState={"terminated": {"reason": "OOMKilled", "exitCode": 137}}),
         "client pod ds-client-x is CrashLoopBackOff after 4 restart(s) (last exit: OOMKilled, code 137):"
         " see kubectl logs -n team ds-client-x --previous"),
        (pod("Pending", state={"waiting": {"reason": "ContainerCreating"}}),
         "client pod ds-client-x is Pending (ContainerCreating)"),
        (pod("Running"), "client pod ds-client-x is Running but has not mounted its FUSE"),
    ],
)  # fmt: skip
def test_a_failed_mount_says_what_the_client_pod_does(client: dict[str, Any] | None, words: str) -> None:
    state = client_pod_state(client, VOLUME)
    assert state.startswith(words)
    message = not_mounted_message(VOLUME, 60, state)
    assert message.startswith(
        f"the FUSE of dataset team/ds (its runtime's client) is not mounted at {FLUID_PATH}"
    )
    assert "after 60 s" in message


def test_a_dead_mount_is_said_to_be_dead_not_missing() -> None:
    message = not_mounted_message(VOLUME, 60, "client pod ds-client-x is Running", dead=True)
    assert message.startswith(f"the FUSE of dataset team/ds (its runtime's client) is dead at {FLUID_PATH}")
    assert "ENOTCONN" in message
    assert "not mounted" not in message


def client_state() -> nst.NodeState:
    new, needed = nst.stage(
        nst.NodeState(), VOLUME.key, CLIENT_PARAMS, "team-ds", "/stage/1", mnt_path=FLUID_PATH,
        mode="client", curvine_path="/", client=nst.ClientRef(namespace="team", name="ds"),
    )  # fmt: skip
    assert needed
    return new


def test_a_client_mount_round_trips_through_the_state_file() -> None:
    state = nst.set_process(client_state(), VOLUME.key, pod_name="ds-client-x")
    again = from_json(to_json(state))
    assert again == state
    assert again.mounts[VOLUME.key].client == nst.ClientRef(namespace="team", name="ds")


def test_a_state_file_of_before_loads_without_clients() -> None:
    old = (
        '{"mounts":{"k":{"key":"k","mnt_path":"/m","mode":"embedded","params":{"fs_path":"/",'
        '"master_addrs":"m:1","pod":[],"tuning":[]},"phase":"Ready","volumes":{}}},"version":1}'
    )
    assert from_json(old).mounts["k"].client is None


def test_a_client_mount_is_a_fusemount_of_mode_client() -> None:
    state = nst.set_process(client_state(), VOLUME.key, pod_name="ds-client-x")
    obj = to_fusemount("n1", state.mounts[VOLUME.key], program="curvine-fuse", image="img")
    spec, status = obj["spec"], obj["status"]
    assert spec["mode"] == "client"
    assert spec["dataset"] == {"namespace": "team", "name": "ds"}
    assert spec["mntPath"] == FLUID_PATH
    assert not spec.get("masterAddrs")
    assert "program" not in spec
    assert "fuseArgs" not in spec or spec["fuseArgs"] == []
    assert (status["podName"], status["refCount"]) == ("ds-client-x", 1)


# --- the runner's decisions, against a fake API server -------------------------------------------


class FakeApi:
    def __init__(self, runtime: dict[str, Any] | None, pod: dict[str, Any] | None = None) -> None:
        self.labels: list[tuple[str, str, bool]] = []
        self._runtime, self._pod = runtime, pod

    async def set_label(self, namespace: str, name: str, present: bool) -> None:
        self.labels.append((namespace, name, present))

    async def runtime(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._runtime

    async def client_pod(self, namespace: str, runtime: str) -> dict[str, Any] | None:
        return self._pod


def fuse_at(path: str, mount_id: int = 40, device: str = "0:50") -> MountInfo:
    return MountInfo(mount_id, 1, "/", path, ("rw",), "fuse.curvine", "curvine", device)


def runtime(policy: str | None) -> dict[str, Any]:
    return {"spec": {"client": {"cleanPolicy": policy}} if policy else {}}


def test_attach_labels_the_node_and_returns_the_client_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clientfuse, "client_mount", lambda path, table=None: fuse_at(path))
    api = FakeApi(runtime("OnDemand"), pod("Running"))
    runner = ClientFuse(api, wait=1)

    async def go() -> tuple[str | None, bool]:
        name = await runner.attach(VOLUME.key, VOLUME)
        removed = await runner.detach(VOLUME.key, "team", "ds")
        await runner.close()
        return name, removed

    assert asyncio.run(go()) == ("ds-client-x", True)
    assert api.labels == [("team", "ds", True), ("team", "ds", False)]


@pytest.mark.parametrize("policy", [None, "OnRuntimeDeleted"])
def test_detach_keeps_the_label_under_on_runtime_deleted(policy: str | None) -> None:
    api = FakeApi(runtime(policy))
    assert asyncio.run(ClientFuse(api).detach("k", "team", "ds")) is False
    assert api.labels == []


def test_a_client_that_never_mounts_times_out_with_the_pods_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clientfuse, "client_mount", lambda path, table=None: None)
    crashing = pod("Running", state={"waiting": {"reason": "CrashLoopBackOff"}}, restartCount=2)
    runner = ClientFuse(FakeApi(runtime(None), crashing), wait=0.2, poll=0.05)
    with pytest.raises(FuseUnavailable, match="CrashLoopBackOff after 2 restart"):
        asyncio.run(runner.attach(VOLUME.key, VOLUME))


def test_the_watcher_tells_a_new_client_mount_once() -> None:
    told: list[str] = []
    runner = ClientFuse(None, on_restart=told.append)
    runner._watched[VOLUME.key] = (FLUID_PATH, (40, "0:50"))
    assert runner.check([fuse_at(FLUID_PATH)]) == []
    assert runner.check([]) == []  # the client died and took its mount off
    # Its successor: the same mount id (reused) but another device (the old one is held by binds).
    assert runner.check([fuse_at(FLUID_PATH, 40, "0:51")]) == [VOLUME.key]
    assert runner.check([fuse_at(FLUID_PATH, 40, "0:51")]) == []
    assert told == [VOLUME.key]


def test_a_failed_stage_keeps_the_label_even_under_on_demand() -> None:
    # Taken off at each failure, the label would delete a slow client (an image pull) before it starts.
    api = FakeApi(runtime("OnDemand"))
    assert asyncio.run(ClientFuse(api).detach("k", "team", "ds", unlabel=False)) is False
    assert api.labels == []


@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["v1", "v2", "v3"])), max_size=30))
def test_the_last_unstage_of_a_dataset_on_a_node_is_said_exactly_once(steps: list[tuple[bool, str]]) -> None:
    """Refcount per (dataset, node) = its staged volumes; ``last`` (the label's moment) exactly when
    it goes to 0, ``fuse_needed`` (label and wait) exactly when it leaves 0."""
    state, staged = nst.NodeState(), set[str]()
    for stage, volume in steps:
        if stage:
            state, needed = nst.stage(
                state, VOLUME.key, CLIENT_PARAMS, volume, f"/stage/{volume}", mnt_path=FLUID_PATH,
                mode="client", client=nst.ClientRef(namespace="team", name="ds"),
            )  # fmt: skip
            assert needed == (not staged)
            staged.add(volume)
        else:
            state, key, last = nst.unstage(state, volume)
            assert (key is not None) == (volume in staged)
            staged.discard(volume)
            assert last == (key is not None and not staged)
            if last:
                state = nst.remove_mount(state, VOLUME.key)
        assert state.refcount(VOLUME.key) == len(staged)
