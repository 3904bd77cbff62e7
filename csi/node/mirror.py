"""The FuseMount object mirroring one mount of the node's state (SPEC §1, §5), for the publisher to
apply. Volumes and targets are listed sorted, so one state always yields the same object and an
unchanged mount never causes a write."""

from __future__ import annotations

from typing import Any

from csi.model.fusecmd import fuse_args
from csi.node.state import MountEntry
from kubectl_fluid.api import names
from kubectl_fluid.api.fusemount import (
    FuseMount,
    FuseMountDataset,
    FuseMountSpec,
    FuseMountStatus,
    PublishTarget,
    StagedVolume,
)


def to_fusemount(
    node: str, entry: MountEntry, program: str | None = None, image: str | None = None
) -> dict[str, Any]:
    """The FuseMount of ``entry`` on ``node`` as Kubernetes JSON (spec and status; the publisher
    sends the status through the status subresource). ``program``: the node's FUSE command, and
    ``image`` the image of its FUSE pods (standalone)."""
    params = entry.params
    if entry.client is not None:
        # Client mode (SPEC §7): the runtime's client pod runs the FUSE; no masters, program nor args
        # of this service's.
        spec = FuseMountSpec(
            node_name=node,
            mount_key=entry.key,
            fs_path=params.fs_path,
            mnt_path=entry.mnt_path,
            mode=entry.mode,
            dataset=FuseMountDataset(namespace=entry.client.namespace, name=entry.client.name),
        )
    else:
        spec = _own_spec(node, entry, program, image)
    status = FuseMountStatus(
        phase=entry.phase,
        ref_count=entry.refcount,
        volumes=[
            StagedVolume(
                volume_id=volume_id,
                staging_path=volume.staging_path,
                targets=[
                    PublishTarget(path=path, pod_uid=target.pod_uid, pod=target.pod, stale=target.stale)
                    for path, target in sorted(volume.targets.items())
                ],
            )
            for volume_id, volume in sorted(entry.volumes.items())
        ],
        pid=entry.pid,
        pod_name=entry.pod_name,
        last_transition_time=entry.phase_time,
        reason=entry.reason or stale_summary(entry),
    )
    return {
        "apiVersion": names.API_VERSION,
        "kind": FuseMount.crd.kind,
        "metadata": {
            "name": names.fuse_mount_name(node, entry.key),
            "labels": names.fuse_mount_labels(node, entry.key),
        },
        "spec": spec.to_kube(),
        "status": status.to_kube(),
    }


def _own_spec(node: str, entry: MountEntry, program: str | None, image: str | None) -> FuseMountSpec:
    """The spec of a mount whose FUSE this node service runs (embedded or standalone)."""
    params = entry.params
    return FuseMountSpec(
        node_name=node,
        mount_key=entry.key,
        cluster_id=names.cluster_id(params.master_addrs),
        master_addrs=params.master_addrs,
        fs_path=params.fs_path,
        mnt_path=entry.mnt_path,
        mode=entry.mode,
        fuse_args=fuse_args(params, entry.mnt_path),
        program=program,
        image=image if entry.mode == "standalone" else None,
    )


def stale_summary(entry: MountEntry) -> str | None:
    """The reason of a mount whose FUSE serves, but some pods' containers still show the one it
    replaced: the first such target's words, and how many more there are."""
    stale = [t.stale for v in entry.volumes.values() for _, t in sorted(v.targets.items()) if t.stale]
    if not stale:
        return None
    more = (
        f" (and {len(stale) - 1} more pod(s) likewise: see status.volumes[].targets[].stale)"
        if len(stale) > 1
        else ""
    )
    return stale[0] + more
