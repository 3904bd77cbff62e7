"""Which CSI volume capabilities the driver supports, for CreateVolume and ValidateVolumeCapabilities
(and NodeStage/NodePublish, which receive the same message).

A volume is a directory of a shared filesystem reached through FUSE: it can be mounted, on any number
of nodes, by any number of writers, so every access mode is supported and only block access is not.
``fs_type`` is accepted and ignored: the filesystem is always FUSE, and the external-provisioner may
pass a default fs type the StorageClass author never chose.
"""

from __future__ import annotations

from collections.abc import Iterable

from csi.proto import csi_pb2

_Mode = csi_pb2.VolumeCapability.AccessMode
SUPPORTED_MODES = frozenset(
    {
        _Mode.SINGLE_NODE_WRITER,
        _Mode.SINGLE_NODE_READER_ONLY,
        _Mode.MULTI_NODE_READER_ONLY,
        _Mode.MULTI_NODE_SINGLE_WRITER,
        _Mode.MULTI_NODE_MULTI_WRITER,
        _Mode.SINGLE_NODE_SINGLE_WRITER,
        _Mode.SINGLE_NODE_MULTI_WRITER,
    }
)


# The CSI spec's modes that allow no writer: a volume published under one is mounted read-only,
# whatever NodePublish's readonly says (kubelet sends false for a ReadOnlyMany claim unless the pod
# itself says readOnly).
READER_ONLY_MODES = frozenset({_Mode.SINGLE_NODE_READER_ONLY, _Mode.MULTI_NODE_READER_ONLY})


def reader_only(capability: csi_pb2.VolumeCapability) -> bool:
    return capability.access_mode.mode in READER_ONLY_MODES


def capability_problem(capability: csi_pb2.VolumeCapability) -> str | None:
    """Why ``capability`` cannot be served, or None when it can."""
    access = capability.WhichOneof("access_type")
    if access is None:
        return "a volume capability needs an access type (mount)"
    if access == "block":
        return "block access is not supported: volumes are directories of a shared filesystem"
    if not capability.HasField("access_mode") or capability.access_mode.mode == _Mode.UNKNOWN:
        return "a volume capability needs an access mode"
    if capability.access_mode.mode not in SUPPORTED_MODES:
        return f"access mode {capability.access_mode.mode} is not supported"
    return None


def capabilities_problem(capabilities: Iterable[csi_pb2.VolumeCapability]) -> str | None:
    """The first problem among ``capabilities``, or None when all can be served."""
    for capability in capabilities:
        problem = capability_problem(capability)
        if problem is not None:
            return problem
    return None
