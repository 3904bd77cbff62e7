"""Sample parameters and hypothesis strategies shared by the CSI core's tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hypothesis import strategies as st

from csi.model.errors import StateConflict
from csi.model.mountkey import fuse_mount_dir, mount_key
from csi.model.params import VolumeParams, parse_params
from csi.node import state as node
from kubectl_fluid.api import names

ROOT = "/plugins"
MASTERS = "m1.team-a.svc:8995,m2.team-a.svc:8995"


def params(**extra: str) -> VolumeParams:
    return parse_params({names.PARAM_MASTER_ADDRS: MASTERS, **extra})


# A few volumes on a few mount keys: v0, v1, v2 on key A, v3, v4 on key B (another fs-path), v5 on
# key C (A's fs-path with a tuning parameter).
KEY_PARAMS = (
    params(),
    params(**{names.PARAM_FS_PATH: "/b"}),
    params(**{"worker-threads": "4"}),
)
VOLUME_KEYS = (0, 0, 0, 1, 1, 2)
TARGETS = ("/pods/p1/mount", "/pods/p2/mount", "/pods/p3/mount")


def key_of(volume: int) -> str:
    return mount_key(KEY_PARAMS[VOLUME_KEYS[volume]])


def staging(volume: int, elsewhere: bool = False) -> str:
    return f"/staging/{'x' if elsewhere else ''}v{volume}"


OpName = Literal["stage", "stage-elsewhere", "publish", "unpublish", "unstage", "remove"]


@dataclass(frozen=True)
class Op:
    name: OpName
    volume: int
    target: int
    readonly: bool

    def apply(self, state: node.NodeState) -> node.NodeState:
        """Apply to ``state``; a refused operation leaves it as it was."""
        volume_id = f"v{self.volume}"
        key = key_of(self.volume)
        try:
            if self.name in ("stage", "stage-elsewhere"):
                path = staging(self.volume, self.name == "stage-elsewhere")
                mnt_path = fuse_mount_dir(ROOT, key)
                params = KEY_PARAMS[VOLUME_KEYS[self.volume]]
                return node.stage(state, key, params, volume_id, path, mnt_path=mnt_path, mode="embedded")[0]
            if self.name == "publish":
                return node.publish(
                    state, volume_id, TARGETS[self.target], self.readonly, f"uid-{self.target}"
                )
            if self.name == "unpublish":
                return node.unpublish(state, TARGETS[self.target])
            if self.name == "unstage":
                return node.unstage(state, volume_id)[0]
            return node.remove_mount(state, key)
        except StateConflict:
            return state


OPS = st.builds(
    Op,
    # Weighted towards the calls that undo: random sequences otherwise rarely empty a key.
    st.sampled_from(
        [
            *("stage", "stage", "stage-elsewhere", "publish", "publish"),
            *("unpublish", "unpublish", "unpublish", "unstage", "unstage", "unstage", "remove"),
        ]
    ),
    st.integers(0, len(VOLUME_KEYS) - 1),
    st.integers(0, len(TARGETS) - 1),
    st.booleans(),
)


@st.composite
def states(draw: st.DrawFn) -> node.NodeState:
    """Node states reachable through the transitions."""
    state = node.NodeState()
    for op in draw(st.lists(OPS, max_size=30)):
        state = op.apply(state)
    if draw(st.booleans()):
        for key in list(state.mounts):
            started = draw(st.none() | st.integers(0, 2**63 - 1))
            state = node.set_process(state, key, pid=draw(st.integers(1, 2**22)), pid_start_time=started)
            state = node.set_phase(state, key, "Ready", now="2025-01-02T03:04:05Z")
    return state
