"""kubelet's CSI calls for one volume of one pod, made by a test directly on a node service's socket
(where no kubelet stand-in is wanted: the test decides when each call happens)."""

from __future__ import annotations

from pathlib import Path

import grpc

from csi.proto import csi_pb2, csi_pb2_grpc

CAPABILITY = csi_pb2.VolumeCapability(
    mount=csi_pb2.VolumeCapability.MountVolume(),
    access_mode=csi_pb2.VolumeCapability.AccessMode(
        mode=csi_pb2.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER
    ),
)


def stage_and_publish(
    socket: Path, volume: str, staging: Path, target: Path, context: dict[str, str]
) -> None:
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        node = csi_pb2_grpc.NodeStub(channel)
        node.NodeStageVolume(
            csi_pb2.NodeStageVolumeRequest(
                volume_id=volume,
                staging_target_path=str(staging),
                volume_capability=CAPABILITY,
                volume_context=context,
            ),
            timeout=10,
        )
        node.NodePublishVolume(
            csi_pb2.NodePublishVolumeRequest(
                volume_id=volume,
                staging_target_path=str(staging),
                target_path=str(target),
                volume_capability=CAPABILITY,
                volume_context=context,
            ),
            timeout=10,
        )


def unpublish_and_unstage(socket: Path, volume: str, staging: Path, target: Path) -> None:
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        node = csi_pb2_grpc.NodeStub(channel)
        node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=volume, target_path=str(target)), timeout=10
        )
        node.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(volume_id=volume, staging_target_path=str(staging)), timeout=10
        )
