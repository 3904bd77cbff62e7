"""A Dataset's PV served by its runtime's client pod (SPEC §7): reading its volume context, its mount
key, and the decisions of that mode (when the node label goes, why a client is not there yet).

Upstream Fluid's fuse.csi.fluid.io contract, by its attribute names: ``fluid_path`` is the host path
where the runtime's client DaemonSet mounts the dataset (its hostPath, Bidirectional), ``fluid_sub_path``
a directory beneath it to bind (optional), ``runtime_namespace``/``runtime_name`` the runtime, whose
client runs on the nodes labelled ``fluid.io/f-{ns}-{name}``. A volume context with ``fluid_path`` and
without ``master-addrs`` is such a volume; one with ``master-addrs`` is served by the node service's
own FUSE (SPEC §5) whatever else it carries, so a PV made before §7 keeps working as it did.

One mount entry per (dataset, node): its key is a hash of the runtime's namespace and name, in the
shape of a FUSE mount key (csi/model/mountkey.py), so the node's state, locks and FuseMount names
treat it as any other key; its mount point is ``fluid_path``, and its refcount the volumes staged on
it. Pure: no I/O here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from csi.model.errors import InvalidParameter
from csi.model.fspaths import normalize_path
from csi.model.params import FuseParams
from kubectl_fluid.api import names

_KEY_VERSION = "fluid-client-key/v1"
# What a client mount entry records as its FUSE parameters: it has none of its own (no masters: the
# client reads the runtime config), and the whole mount is the root its volumes' directories are in.
CLIENT_PARAMS = FuseParams(master_addrs="", fs_path=names.DEFAULT_FS_PATH)


@dataclass(frozen=True)
class ClientVolume:
    """A volume as NodeStage sees it in client mode."""

    namespace: str  # the runtime's (and Dataset's) namespace
    name: str  # the runtime's (and Dataset's) name
    fluid_path: str  # the client's FUSE mount on the host
    sub_path: str  # the volume's directory in it, "/" for the whole mount
    mount_type: str = ""

    @property
    def key(self) -> str:
        return client_mount_key(self.namespace, self.name)


def is_client_volume(context: Mapping[str, str]) -> bool:
    return names.VOLUME_ATTR_FLUID_PATH in context and names.PARAM_MASTER_ADDRS not in context


def client_mount_key(namespace: str, name: str) -> str:
    encoded = json.dumps([_KEY_VERSION, namespace, name], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(encoded.encode()).hexdigest()[: names.MOUNT_KEY_LENGTH]


def parse_client_context(context: Mapping[str, str]) -> ClientVolume:
    """A client volume's context → ClientVolume; InvalidParameter naming the key that is missing or
    unusable. The runtime comes from upstream's ``runtime_namespace``/``runtime_name``, else from the
    Dataset attributes (a Dataset and its runtime share namespace and name)."""
    namespace = context.get(names.VOLUME_ATTR_RUNTIME_NAMESPACE) or context.get(
        names.VOLUME_ATTR_DATASET_NAMESPACE, ""
    )
    name = context.get(names.VOLUME_ATTR_RUNTIME_NAME) or context.get(names.VOLUME_ATTR_DATASET_NAME, "")
    if not namespace or not name:
        raise InvalidParameter(
            names.VOLUME_ATTR_RUNTIME_NAME,
            f"{names.VOLUME_ATTR_RUNTIME_NAMESPACE} and {names.VOLUME_ATTR_RUNTIME_NAME} are required:"
            " the runtime whose client serves the volume",
        )
    raw = context[names.VOLUME_ATTR_FLUID_PATH]
    if not raw.startswith("/"):
        raise InvalidParameter(names.VOLUME_ATTR_FLUID_PATH, f"must be an absolute host path, got {raw!r}")
    fluid_path = normalize_path(raw, names.VOLUME_ATTR_FLUID_PATH)
    if fluid_path == "/":
        raise InvalidParameter(names.VOLUME_ATTR_FLUID_PATH, "must not be the host's root")
    sub = context.get(names.VOLUME_ATTR_FLUID_SUB_PATH, "")
    sub_path = normalize_path("/" + sub.lstrip("/"), names.VOLUME_ATTR_FLUID_SUB_PATH)
    mount_type = context.get(names.VOLUME_ATTR_MOUNT_TYPE, "")
    return ClientVolume(namespace, name, fluid_path, sub_path, mount_type)


def clears_label(clean_policy: str | None, runtime_exists: bool) -> bool:
    """Whether the last unstage of a dataset on a node removes its node label (the client pod goes
    with it): under ``OnDemand``, and when the runtime is gone (nothing else would remove it).
    ``OnRuntimeDeleted`` (upstream's default when none is set) keeps it for the runtime's life."""
    if not runtime_exists:
        return True
    return (clean_policy or names.CLEAN_POLICY_ON_RUNTIME_DELETED) == names.CLEAN_POLICY_ON_DEMAND


def clean_policy_of(runtime: Mapping[str, Any] | None) -> str | None:
    """A CacheRuntime's ``spec.client.cleanPolicy`` as written (None: not set, or no runtime)."""
    if runtime is None:
        return None
    client = (runtime.get("spec") or {}).get("client") or {}
    policy = client.get("cleanPolicy")
    return policy if isinstance(policy, str) else None


def client_pod_state(pod: Mapping[str, Any] | None, volume: ClientVolume) -> str:
    """What a runtime's client pod on this node is doing, in words for a FailedMount reason."""
    if pod is None:
        label = names.fuse_node_label(volume.namespace, volume.name)
        return (
            f"no client pod of runtime {volume.namespace}/{volume.name} is scheduled on this node (is its"
            f' client DaemonSet there, and does its nodeSelector {label}: "true" match this node?)'
        )
    name = (pod.get("metadata") or {}).get("name", "?")
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending")
    for container in status.get("containerStatuses") or ():
        waiting = (container.get("state") or {}).get("waiting")
        last = (container.get("lastState") or {}).get("terminated") or {}
        restarts = container.get("restartCount", 0)
        if waiting and waiting.get("reason") in _BAD_WAITS:
            why = f" (last exit: {last.get('reason', '?')}, code {last.get('exitCode', '?')})" if last else ""
            return (
                f"client pod {name} is {waiting['reason']} after {restarts} restart(s){why}:"
                f" see kubectl logs -n {(pod.get('metadata') or {}).get('namespace', '?')} {name} --previous"
            )
    if phase != "Running":
        waits = [
            ((c.get("state") or {}).get("waiting") or {}).get("reason")
            for c in status.get("containerStatuses") or ()
        ]
        detail = ", ".join(w for w in waits if w)
        return f"client pod {name} is {phase}" + (f" ({detail})" if detail else "")
    return f"client pod {name} is Running but has not mounted its FUSE"


_BAD_WAITS = frozenset({"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerError",
                        "CreateContainerConfigError", "RunContainerError"})  # fmt: skip


def not_mounted_message(volume: ClientVolume, waited: float, pod_state: str, *, dead: bool = False) -> str:
    """The FailedPrecondition of a NodeStage whose client did not mount in time: what is missing,
    why as far as this node sees, and what to look at. ``dead``: a mount is there, but its FUSE
    process died (ENOTCONN) and no new one has replaced it yet."""
    label = names.fuse_node_label(volume.namespace, volume.name)
    where = f"at {volume.fluid_path} on this node after {waited:.0f} s"
    what = (
        f"is dead {where} (its mount answers ENOTCONN: the client's FUSE process died and no restart"
        " has mounted a new one)"
        if dead
        else f"is not mounted {where}"
    )
    return (
        f"the FUSE of dataset {volume.namespace}/{volume.name} (its runtime's client) {what}: {pod_state}."
        f' The node is labelled {label}: "true" for the client; kubelet asks again'
    )
