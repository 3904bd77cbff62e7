"""What a Dataset's master must run now, and what mountUFS's answer means (pure).

mountUFS is due when the master pod is Ready and what last ran differs from now: the Dataset's
``spec.mounts`` (a hash of them) or the master (its pod's uid: a pod deleted and re-created, even under
its old name, has lost its mount table; and its container's restart count, as upstream remounts when
the container started after the last mount). The record of what ran, ``{uid}/{restarts}/{hash}``, is
kept in the
CacheRuntime's status (``mountedUfs``, beside upstream's ``mountTime``): it is observed state, written
by the controller alone, and survives a controller restart, so a new leader does not run every
runtime's script again; a runtime re-created starts without one and mounts.

mountUFS answers ``{"mounted": [paths]}`` on stdout (upstream's CacheRuntimeMountUfsOutput). Each
mount not of a Fluid-native scheme must be there at its path in the dataset (upstream's
``syncDatasetMounts``). Paths beyond those are reported, not failed on: Curvine's script lists every
entry of its mount table and never unmounts, so a removed mount stays listed, and upstream's strict
check would retry it for ever.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from controller.entries.output import ScriptOutputError, json_object
from kubectl_fluid.api import names


@dataclass(frozen=True)
class MasterPod:
    name: str
    uid: str
    container: str
    ready: bool
    restarts: int = 0  # of its first container


def master_pod(pod: dict[str, Any] | None) -> MasterPod | None:
    """The facts of the first master pod that matter here; None when there is none to exec in."""
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return None
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    status = pod.get("status") or {}
    ready = status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    container = containers[0]["name"]
    restarts = next(
        (
            int(c.get("restartCount") or 0)
            for c in status.get("containerStatuses") or []
            if c.get("name") == container
        ),
        0,
    )
    return MasterPod(pod["metadata"]["name"], pod["metadata"].get("uid", ""), container, ready, restarts)


def mounts_hash(mounts: list[dict[str, Any]] | None) -> str:
    """A short digest of ``spec.mounts`` as written (keys sorted): any change to them changes it."""
    text = json.dumps(mounts or [], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def mount_record(master: MasterPod, mounts: list[dict[str, Any]] | None) -> str:
    return f"{master.uid}/{master.restarts}/{mounts_hash(mounts)}"


def mount_due(record: str | None, master: MasterPod | None, mounts: list[dict[str, Any]] | None) -> bool:
    """mountUFS must run: the master is Ready and the mounts or the master changed since it last ran."""
    return master is not None and master.ready and record != mount_record(master, mounts)


class MountOutputError(ScriptOutputError):
    """mountUFS's stdout is not upstream's ``{"mounted": [...]}``."""


def mounted_paths(stdout: bytes | str) -> list[str]:
    out = json_object(stdout, "mountUFS", MountOutputError)
    mounted = out.get("mounted", [])  # upstream's field is omitempty
    if not isinstance(mounted, list) or not all(isinstance(p, str) for p in mounted):
        raise MountOutputError(f'mountUFS\'s stdout has no "mounted" list of paths: {out!r:.200}')
    return mounted


@dataclass(frozen=True)
class MountCheck:
    missing: list[str]
    extra: list[str]

    @property
    def ok(self) -> bool:
        return not self.missing


def check_mounted(expected: list[str], mounted: list[str]) -> MountCheck:
    have = set(mounted)
    return MountCheck(
        missing=[p for p in expected if p not in have],
        extra=sorted(have - set(expected)),
    )


def timeout_of(entry_timeout: int | None) -> int:
    """Seconds an entry may run: its own, at least upstream's minimum (also its default)."""
    return max(entry_timeout or 0, names.MIN_EXECUTION_TIMEOUT_SECONDS)
