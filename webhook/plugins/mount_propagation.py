"""MountPropagationInjector (SPEC §4): mounts of a volume the CSI driver serves (a Dataset's PVC, a
claim of its StorageClass or PV: ``webhook/drivermounts.py``) get ``mountPropagation: HostToContainer``,
so a FUSE mount that is (re)made on the host after the container started still shows up inside it.
Without it a container keeps the dead FUSE's mount (``Transport endpoint is not connected``) until the
pod is deleted (issue 28)."""

from __future__ import annotations

from typing import Any, Final

from kubectl_fluid.api import names
from webhook import podedit
from webhook.drivermounts import driver_volumes
from webhook.plugins.base import Context

# Left alone: Bidirectional already propagates host mounts into the container, and downgrading it
# would break a privileged container that relies on the other direction.
_KEEP: Final = names.PROPAGATING
HOST_TO_CONTAINER: Final = names.HOST_TO_CONTAINER


class MountPropagationInjector:
    name: Final = "MountPropagationInjector"

    def mutate(self, pod: dict[str, Any], ctx: Context) -> None:
        fluid_volumes = driver_volumes(pod, ctx.namespace, ctx.lookup)
        if not fluid_volumes:
            return
        for container in podedit.app_containers(pod):
            mounts = container.get("volumeMounts")
            if not mounts:
                continue
            for index, mount in enumerate(mounts):
                if mount.get("name") in fluid_volumes and mount.get("mountPropagation") not in _KEEP:
                    mounts[index] = {**mount, "mountPropagation": HOST_TO_CONTAINER}
