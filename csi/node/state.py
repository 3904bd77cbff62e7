"""The node's bookkeeping: which FUSE mounts exist, which volumes are staged on each, and where each
volume is published. Pure data and pure transitions; the node service holds the current NodeState,
applies a transition, saves the result (csi/node/statefile.py) and only then acts on the host.

Reference counting (the bugs of Curvine's driver this avoids): a mount key's refcount is the number
of volumes *staged* on it, nothing else. Publishing and unpublishing only add and remove targets,
so unpublishing one pod's target can never stop a FUSE that other pods use; and because the count
is derived from the recorded volumes instead of kept as a counter, it is exact after a restart.

Every value is immutable: a transition returns a new NodeState sharing the unchanged parts, or the
very same object when nothing changes (so ``new is old`` tells the caller there is nothing to save).
Mappings are typed read-only; a transition that raises leaves the state it was given untouched.
A mount key whose last volume is unstaged stays recorded, phase ``Unmounting``, until the node has
stopped its FUSE and calls ``remove_mount``: a crash in between leaves a record saying what to clean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from csi.model.errors import StateConflict
from csi.model.params import FuseParams, HasFuseParams, fuse_params
from kubectl_fluid.api import names
from kubectl_fluid.api.fusemount import FuseMountPhase


class _Record(BaseModel):
    # Strict and closed: these models are also the state file's schema (csi/node/statefile.py).
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")


class TargetEntry(_Record):
    readonly: bool
    pod_uid: str | None = None
    # "namespace/name" of the pod (kubelet's podInfoOnMount), to look it up after a FUSE restart.
    pod: str | None = None
    # Why the pod's containers still show a FUSE that was replaced (csi/node/propagation.py): set
    # once, never cleared while the target lives, since such a container never sees a new mount.
    stale: str | None = None


class VolumeEntry(_Record):
    staging_path: str
    # The volume's directory in the cache filesystem: what a recovery binds at staging_path again.
    curvine_path: str = ""
    targets: Mapping[str, TargetEntry] = {}


class ClientRef(_Record):
    """The runtime (namespace and name, those of its Dataset) whose client pod serves a mount of mode
    ``client`` (SPEC §7)."""

    namespace: str
    name: str


class MountEntry(_Record):
    key: str
    params: FuseParams
    mnt_path: str
    mode: names.FuseMountMode
    # Mode client: the runtime whose client pod's FUSE is at mnt_path (no FUSE of the node service's).
    client: ClientRef | None = None
    phase: FuseMountPhase = "Mounting"
    # RFC 3339 time of the last phase change, when the caller supplied one.
    phase_time: str | None = None
    # Why the phase is Broken, in words for the FuseMount (cleared by any other phase).
    reason: str | None = None
    pid: int | None = None
    # The FUSE process's start time (/proc/PID/stat field 22): a pid alone may have been reused.
    # Absent from state files written before it was recorded.
    pid_start_time: int | None = None
    pod_name: str | None = None
    volumes: Mapping[str, VolumeEntry] = {}

    @property
    def refcount(self) -> int:
        return len(self.volumes)


@dataclass(frozen=True)
class _Where:
    """Which key each volume is staged on and which volume each target publishes: what every call
    looks up, kept beside the state instead of walked for (a node holds hundreds of each). A state
    holds a volume on one key and a target under one volume (the transitions and the state file
    refuse anything else)."""

    keys: Mapping[str, str]
    volumes: Mapping[str, str]

    @classmethod
    def of(cls, mounts: Mapping[str, MountEntry]) -> _Where:
        keys = {volume_id: key for key, entry in mounts.items() for volume_id in entry.volumes}
        volumes = {
            target: volume_id
            for entry in mounts.values()
            for volume_id, volume in entry.volumes.items()
            for target in volume.targets
        }
        return cls(keys, volumes)

    def replaced(self, old: MountEntry | None, new: MountEntry) -> _Where:
        """After one key's entry changed from ``old`` to ``new``: only what differs between them is
        looked at (a volume record that is the very same object is skipped)."""
        keys, volumes = dict(self.keys), dict(self.volumes)
        before = old.volumes if old is not None else {}
        for volume_id in before.keys() - new.volumes.keys():
            del keys[volume_id]
            for target in before[volume_id].targets:
                del volumes[target]
        for volume_id, volume in new.volumes.items():
            was = before.get(volume_id)
            if was is volume:
                continue
            keys[volume_id] = new.key
            targets = was.targets.keys() if was is not None else set()
            for target in targets - volume.targets.keys():
                del volumes[target]
            for target in volume.targets.keys() - targets:
                volumes[target] = volume_id
        return _Where(keys, volumes)


class NodeState(_Record):
    mounts: Mapping[str, MountEntry] = {}
    # The mounts the lookups were made for, and the lookups (_Where). A copy made other than through
    # this module's transitions carries the old ones: the mounts tell, and they are made afresh.
    _where: tuple[Mapping[str, MountEntry], _Where] = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._where = (self.mounts, _Where.of(self.mounts))

    def _lookups(self) -> _Where:
        mounts, where = self._where
        if mounts is not self.mounts:
            where = _Where.of(self.mounts)
            self._where = (self.mounts, where)
        return where

    def refcount(self, key: str) -> int:
        entry = self.mounts.get(key)
        return 0 if entry is None else entry.refcount

    def key_of_volume(self, volume_id: str) -> str | None:
        return self._lookups().keys.get(volume_id)

    def volume(self, volume_id: str) -> VolumeEntry | None:
        key = self.key_of_volume(volume_id)
        return None if key is None else self.mounts[key].volumes[volume_id]

    def volume_of(self, target: str) -> str | None:
        return self._lookups().volumes.get(target)


def timestamp(at: datetime | None = None) -> str:
    """RFC 3339 UTC, seconds precision, as Kubernetes writes times."""
    return (at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stage(
    state: NodeState,
    key: str,
    params: HasFuseParams,
    volume_id: str,
    staging_path: str,
    *,
    mnt_path: str,
    mode: names.FuseMountMode,
    curvine_path: str = "",
    now: str | None = None,
    client: ClientRef | None = None,
) -> tuple[NodeState, bool]:
    """Record ``volume_id`` staged at ``staging_path`` on mount ``key``. Returns the new state and
    ``fuse_needed``: True exactly when the key's refcount goes 0 → 1, i.e. the caller must make sure
    a FUSE runs (start one, or adopt a live one). ``mnt_path`` and ``mode`` describe a new mount; an
    existing one keeps its own (a running FUSE is where it is, in the mode it was started in);
    ``client`` names the runtime of a new mount of mode client.
    Staging again at the same path changes nothing; elsewhere, or on another key, is a conflict."""
    owner = state.key_of_volume(volume_id)
    if owner is not None:
        staged = state.mounts[owner].volumes[volume_id]
        if owner != key:
            raise StateConflict(
                f"volume {volume_id} is already staged on mount key {owner} with other parameters; "
                "unstage it first"
            )
        if staged.staging_path != staging_path:
            raise StateConflict(
                f"volume {volume_id} is already staged at {staged.staging_path}, not {staging_path}"
            )
        return state, False
    fuse = fuse_params(params)
    entry = state.mounts.get(key)
    if entry is None:
        entry = MountEntry(key=key, params=fuse, mnt_path=mnt_path, mode=mode, phase_time=now, client=client)
    elif entry.params != fuse:
        raise StateConflict(f"mount key {key} is recorded with other parameters: {entry.params}")
    fuse_needed = entry.refcount == 0
    update: dict[str, object] = {
        "volumes": {
            **entry.volumes,
            volume_id: VolumeEntry(staging_path=staging_path, curvine_path=curvine_path),
        }
    }
    if fuse_needed and entry.phase != "Mounting":
        update |= {"phase": "Mounting", "phase_time": now, "reason": None}
    return _put(state, entry.model_copy(update=update)), fuse_needed


def unstage(
    state: NodeState, volume_id: str, *, now: str | None = None
) -> tuple[NodeState, str | None, bool]:
    """Remove ``volume_id``. Returns the new state, the mount key it was staged on (None: it was not,
    nothing to do) and ``last``: True exactly when the key's refcount goes 1 → 0, i.e. the caller
    must stop the FUSE, unmount, then ``remove_mount``. A volume still published is refused: its
    bind mounts would outlive the FUSE they point into (kubelet unpublishes before unstaging)."""
    key = state.key_of_volume(volume_id)
    if key is None:
        return state, None, False
    entry = state.mounts[key]
    targets = entry.volumes[volume_id].targets
    if targets:
        raise StateConflict(
            f"volume {volume_id} is still published at {', '.join(sorted(targets))}; unpublish it first",
            "FAILED_PRECONDITION",
        )
    volumes = {vid: volume for vid, volume in entry.volumes.items() if vid != volume_id}
    last = not volumes
    update: dict[str, object] = {"volumes": volumes}
    if last:
        update |= {"phase": "Unmounting", "phase_time": now, "reason": None}
    return _put(state, entry.model_copy(update=update)), key, last


def publish(
    state: NodeState,
    volume_id: str,
    target: str,
    readonly: bool,
    pod_uid: str | None = None,
    *,
    pod: str | None = None,
) -> NodeState:
    """Record ``target`` as a publication of staged ``volume_id``. Publishing the same target again
    the same way changes nothing (a pod UID learnt late is filled in); the target bound to another
    volume, or with the other read-only flag, is a conflict. Refcounts never change here."""
    key = state.key_of_volume(volume_id)
    if key is None:
        raise StateConflict(
            f"volume {volume_id} is not staged on this node; NodeStageVolume must come first",
            "FAILED_PRECONDITION",
        )
    holder = state.volume_of(target)
    if holder is not None and holder != volume_id:
        raise StateConflict(f"target {target} already publishes volume {holder}")
    entry = state.mounts[key]
    volume = entry.volumes[volume_id]
    existing = volume.targets.get(target)
    if existing is not None:
        if existing.readonly != readonly:
            mode = "read-only" if existing.readonly else "read-write"
            raise StateConflict(f"target {target} already publishes volume {volume_id} {mode}")
        if (pod_uid is None or existing.pod_uid == pod_uid) and (pod is None or existing.pod == pod):
            return state
    targets = {**volume.targets, target: TargetEntry(readonly=readonly, pod_uid=pod_uid, pod=pod)}
    return _put_volume(state, entry, volume_id, volume.model_copy(update={"targets": targets}))


def mark_stale(state: NodeState, key: str, marks: Mapping[str, str]) -> NodeState:
    """Record, for each target of ``marks`` still published under ``key``, why its pod's containers
    still show an older FUSE; a target marked already keeps its first reason. Nothing new: unchanged."""
    entry = state.mounts.get(key)
    if entry is None:
        return state
    for volume_id, volume in entry.volumes.items():
        fresh = {
            target: held.model_copy(update={"stale": marks[target]})
            for target, held in volume.targets.items()
            if target in marks and held.stale is None
        }
        if fresh:
            marked = volume.model_copy(update={"targets": {**volume.targets, **fresh}})
            state = _put_volume(state, entry, volume_id, marked)
            entry = state.mounts[key]
    return state


def unpublish(state: NodeState, target: str) -> NodeState:
    """Forget ``target``. Only the target: the volume stays staged and every refcount is unchanged.
    An unknown target changes nothing (kubelet retries unpublish)."""
    volume_id = state.volume_of(target)
    if volume_id is None:
        return state
    key = state.key_of_volume(volume_id)
    assert key is not None  # volume_of found it under some key
    entry = state.mounts[key]
    volume = entry.volumes[volume_id]
    targets = {path: t for path, t in volume.targets.items() if path != target}
    return _put_volume(state, entry, volume_id, volume.model_copy(update={"targets": targets}))


def remove_mount(state: NodeState, key: str) -> NodeState:
    """Forget mount ``key`` once its FUSE is stopped and unmounted. Refused while volumes use it."""
    entry = state.mounts.get(key)
    if entry is None:
        return state
    if entry.refcount:
        raise StateConflict(
            f"mount key {key} still has {entry.refcount} staged volume(s)", "FAILED_PRECONDITION"
        )
    new = state.model_copy(update={"mounts": {k: e for k, e in state.mounts.items() if k != key}})
    new._where = (new.mounts, state._lookups())  # a key with no volumes: nothing of it is looked up
    return new


def set_phase(
    state: NodeState, key: str, phase: FuseMountPhase, *, now: str | None = None, reason: str | None = None
) -> NodeState:
    """Record a phase change of mount ``key``, with why when ``Broken`` (unknown key, or same phase
    and reason: unchanged). The time moves only with the phase."""
    entry = state.mounts.get(key)
    reason = reason if phase == "Broken" else None
    if entry is None or (entry.phase, entry.reason) == (phase, reason):
        return state
    update: dict[str, object] = {"phase": phase, "reason": reason}
    if entry.phase != phase:
        update["phase_time"] = now
    return _put(state, entry.model_copy(update=update))


def set_process(
    state: NodeState,
    key: str,
    *,
    pid: int | None = None,
    pod_name: str | None = None,
    pid_start_time: int | None = None,
) -> NodeState:
    """Record the FUSE process (embedded: ``pid`` and its ``pid_start_time``) or pod (standalone:
    ``pod_name``) of mount ``key``; all None when it is gone. Unknown key or nothing new: unchanged."""
    entry = state.mounts.get(key)
    process = {"pid": pid, "pod_name": pod_name, "pid_start_time": pid_start_time}
    if entry is None or (entry.pid, entry.pod_name, entry.pid_start_time) == (pid, pod_name, pid_start_time):
        return state
    return _put(state, entry.model_copy(update=process))


def _put(state: NodeState, entry: MountEntry) -> NodeState:
    new = state.model_copy(update={"mounts": {**state.mounts, entry.key: entry}})
    new._where = (new.mounts, state._lookups().replaced(state.mounts.get(entry.key), entry))
    return new


def _put_volume(state: NodeState, entry: MountEntry, volume_id: str, volume: VolumeEntry) -> NodeState:
    return _put(state, entry.model_copy(update={"volumes": {**entry.volumes, volume_id: volume}}))
