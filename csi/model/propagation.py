"""Whether a pod's containers see a FUSE mount re-made on the node (issue 28, item 1). A container
runtime gives each container a copy of the pod's target as it was when the container started; only a
mount with ``mountPropagation`` HostToContainer (or Bidirectional) receives what is mounted on the
host afterwards. So after a FUSE is replaced and the target bound again, a container whose mount of
the volume has neither keeps the dead FUSE (``Transport endpoint is not connected``) until the pod is
deleted. Pure: the node service looks up the pod and its PV (``csi/node/propagation.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubectl_fluid.api import names

_CSI_VOLUMES: Final = "/volumes/kubernetes.io~csi/"


@dataclass(frozen=True, slots=True)
class TargetRef:
    """A published target and the pod it was published for (kubelet's podInfoOnMount)."""

    target: str
    namespace: str
    pod: str
    pod_uid: str | None


def pv_of_target(target: str) -> str | None:
    """The PV name in kubelet's target path ``…/pods/UID/volumes/kubernetes.io~csi/PV/mount``."""
    head, found, tail = target.rpartition(_CSI_VOLUMES)
    if not found or not head:
        return None
    pv, _, rest = tail.partition("/")
    return pv if pv and rest == "mount" else None


def claim_volumes(pod: Mapping[str, Any], claim: str) -> set[str]:
    """The names of the pod's volumes that mount ``claim``."""
    return {
        volume.get("name", "")
        for volume in (pod.get("spec") or {}).get("volumes") or ()
        if (volume.get("persistentVolumeClaim") or {}).get("claimName") == claim
    }


def _running_containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    yield from spec.get("containers") or ()
    # Sidecars (init containers that keep running) hold their mounts for the pod's life too.
    yield from (c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always")


def unpropagated(pod: Mapping[str, Any], volumes: set[str]) -> list[str]:
    """``container:mountPath`` of each running container's mount of ``volumes`` that does not
    receive host mounts, in the pod's order."""
    lacking = []
    for container in _running_containers(pod.get("spec") or {}):
        for mount in container.get("volumeMounts") or ():
            if mount.get("name") in volumes and mount.get("mountPropagation") not in names.PROPAGATING:
                lacking.append(f"{container.get('name')}:{mount.get('mountPath')}")
    return lacking


def stale_reason(namespace: str, pod: str, lacking: list[str]) -> str:
    return (
        f"pod {namespace}/{pod} still shows the FUSE that was replaced (its reads fail: Transport endpoint"
        f" is not connected) at {', '.join(lacking)}: mounted without mountPropagation HostToContainer,"
        " its containers never see the new mount. Delete the pod so that it mounts the volume again; pods"
        " the webhook admits get HostToContainer (kubectl fluid inject --fuse makes it an ask)"
    )
