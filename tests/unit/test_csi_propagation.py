"""Issue 28, item 1: after a FUSE is replaced, a pod whose containers mount the volume without
HostToContainer still shows the dead mount; the node service says so on the FuseMount (the target's
``stale``, the mount's reason) and keeps saying it while the target lives."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from csi.model.propagation import claim_volumes, pv_of_target, stale_reason, unpropagated
from csi.node import state
from csi.node.mirror import to_fusemount
from kubectl_fluid.api import names
from tests.unit.csi_samples import KEY_PARAMS, key_of

PARAMS = KEY_PARAMS[0]

UID = "0b5c3a8e-1111-4222-8333-944455556666"


def pod(*mounts: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "app", "namespace": "default", "uid": UID},
        "spec": {
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "curvine-real"}},
                {"name": "other", "persistentVolumeClaim": {"claimName": "scratch"}},
            ],
            "containers": [{"name": "app", "volumeMounts": list(mounts)}],
            "initContainers": init or [],
        },
    }


def test_the_pv_is_read_from_kubelets_target_path() -> None:
    assert pv_of_target(names.csi_publish_target(UID, "pvc-1234")) == "pvc-1234"
    assert pv_of_target("/somewhere/else/mount") is None
    assert pv_of_target(f"/var/lib/kubelet/pods/{UID}/volumes/kubernetes.io~csi/pv/mount/x") is None


def test_a_mount_without_host_to_container_of_the_claims_volume_is_named() -> None:
    volumes = claim_volumes(pod(), "curvine-real")
    assert volumes == {"data"}
    plain = pod({"name": "data", "mountPath": "/data"}, {"name": "other", "mountPath": "/o"})
    assert unpropagated(plain, volumes) == ["app:/data"]
    for propagation in ("HostToContainer", "Bidirectional"):
        seen = pod({"name": "data", "mountPath": "/data", "mountPropagation": propagation})
        assert unpropagated(seen, volumes) == []
    # A sidecar keeps its mount for the pod's life; a finished init container does not matter.
    sidecar = {
        "name": "side",
        "restartPolicy": "Always",
        "volumeMounts": [{"name": "data", "mountPath": "/s"}],
    }
    done = {"name": "setup", "volumeMounts": [{"name": "data", "mountPath": "/i"}]}
    assert unpropagated(pod(init=[sidecar, done]), volumes) == ["side:/s"]


def test_the_reason_says_what_fails_why_and_what_to_do() -> None:
    reason = stale_reason("default", "app", ["app:/data"])
    assert "Transport endpoint is not connected" in reason
    for words in ("default/app", "app:/data", "HostToContainer", "Delete the pod"):
        assert words in reason


def staged(pods: int) -> tuple[state.NodeState, str, list[str]]:
    key = key_of(0)
    s, _ = state.stage(state.NodeState(), key, PARAMS, "vol", "/staging", mnt_path="/mnt", mode="standalone")
    targets = [names.csi_publish_target(f"uid-{i}", "vol") for i in range(pods)]
    for i, target in enumerate(targets):
        s = state.publish(s, "vol", target, False, f"uid-{i}", pod=f"default/app-{i}")
    return state.set_phase(s, key, "Ready"), key, targets


def test_a_marked_target_makes_the_fusemounts_reason_and_keeps_its_first_words() -> None:
    s, key, [first, second] = staged(2)
    assert to_fusemount("node", s.mounts[key])["status"].get("reason") is None
    marked = state.mark_stale(s, key, {first: "first words"})
    assert state.mark_stale(marked, key, {first: "other words"}) is marked
    status = to_fusemount("node", marked.mounts[key])["status"]
    assert status["reason"] == "first words"
    [volume] = status["volumes"]
    assert [t.get("stale") for t in volume["targets"]] == ["first words", None]
    assert [t["pod"] for t in volume["targets"]] == ["default/app-0", "default/app-1"]
    both = state.mark_stale(marked, key, {second: "second words"})
    assert to_fusemount("node", both.mounts[key])["status"]["reason"].startswith(
        "first words (and 1 more pod"
    )
    # The pod goes: its target with it, and the reason.
    gone = state.unpublish(state.unpublish(both, first), second)
    assert to_fusemount("node", gone.mounts[key])["status"].get("reason") is None


@given(st.lists(st.sampled_from(["HostToContainer", "Bidirectional", "None", None]), min_size=1, max_size=4))
def test_only_mounts_that_receive_host_mounts_are_left_out(propagations: list[str | None]) -> None:
    mounts = [
        {"name": "data", "mountPath": f"/d{i}", **({"mountPropagation": p} if p else {})}
        for i, p in enumerate(propagations)
    ]
    expected = [
        f"app:/d{i}" for i, p in enumerate(propagations) if p not in ("HostToContainer", "Bidirectional")
    ]
    assert unpropagated(pod(*mounts), {"data"}) == expected
