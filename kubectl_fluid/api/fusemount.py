"""FuseMount: the CSI node service's published view of one FUSE mount on one node (SPEC §1, §5).
Written by the node service; read by ``kubectl fluid mounts``. While the node is lost (not Ready, or its
Node gone) nobody reports for it, and the controller says so: phase ``Unknown`` and a reason
(controller/nodeloss.py), until the node service publishes again."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, DATE_TIME, CrdInfo, KubeModel, PrinterColumn, Resource

# The node service writes the first four; only the controller writes Unknown (its node is lost).
FuseMountPhase = Literal["Mounting", "Ready", "Broken", "Unmounting", "Unknown"]


class FuseMountDataset(KubeModel):
    """The Dataset whose runtime's client serves a mount of mode ``client``."""

    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)


class FuseMountSpec(KubeModel):
    """Which FUSE mount this is: its node, key, cluster and how it runs."""

    node_name: str = Field(min_length=1, description="The node the FUSE mount is on.")
    mount_key: str = Field(
        min_length=1,
        description="Hash of master-addrs, fs-path and tuning: volumes of one key share the mount.",
    )
    cluster_id: str = Field(
        default="", description="First 8 hex digits of sha256(master-addrs); empty in mode client."
    )
    master_addrs: str = Field(
        default="",
        description="host:port[,host:port...] of the cache masters; empty in mode client (the client knows).",
    )
    fs_path: str = Field(description="The directory of the cache's filesystem the FUSE serves.")
    mnt_path: str = Field(description="Host path of the FUSE mount.")
    mode: names.FuseMountMode = Field(
        description=(
            "embedded (a child of the CSI node service), standalone (a FUSE pod of its own) or client"
            " (the Dataset's runtime's client pod, which the node service waits for and binds beneath)."
        )
    )
    dataset: FuseMountDataset | None = Field(
        default=None, description="Mode client: the Dataset whose runtime's client pod runs the FUSE."
    )
    fuse_args: list[str] = Field(default_factory=list, description="The FUSE program's arguments.")
    program: str | None = Field(
        default=None,
        description="The FUSE program serving the mount, as the node service runs it (fuseArgs follow it).",
    )
    image: str | None = Field(default=None, description="The image of the FUSE pod (standalone mode).")


class PublishTarget(KubeModel):
    path: str
    pod_uid: str | None = None
    pod: str | None = Field(default=None, description="namespace/name of the pod it was published for.")
    stale: str | None = Field(
        default=None,
        description=(
            "Why the pod's containers still show a FUSE that was replaced: they mount the volume without"
            " HostToContainer propagation. Delete the pod to mount it again."
        ),
    )


class StagedVolume(KubeModel):
    volume_id: str
    staging_path: str
    targets: list[PublishTarget] = Field(default_factory=list)


class FuseMountStatus(KubeModel):
    """The mount's state as the CSI node service last saw it."""

    phase: FuseMountPhase | None = Field(
        default=None,
        description=(
            "Mounting, Ready, Broken or Unmounting, as the node service says; Unknown while its node is"
            " not Ready or gone (nothing reports the mount: reason says since when and the last known phase)."
        ),
    )
    ref_count: int = Field(default=0, ge=0, description="Number of staged volumes using the mount.")
    volumes: list[StagedVolume] = Field(
        default_factory=list, description="The volumes staged on the mount and the pod targets of each."
    )
    pid: int | None = Field(default=None, description="FUSE process id (embedded mode).")
    pod_name: str | None = Field(
        default=None, description="FUSE pod (standalone mode), or the runtime's client pod (client mode)."
    )
    last_transition_time: str | None = Field(
        default=None, description="When the phase last changed.", json_schema_extra=DATE_TIME
    )
    reason: str | None = Field(
        default=None,
        description=(
            "Why the mount is Broken or Unknown, or which pods still show a replaced FUSE; and what to do."
        ),
    )


class FuseMount(Resource):
    """One FUSE mount of one (node, mount key), named {node}-{mountKey[:16]}."""

    crd: ClassVar[CrdInfo] = CrdInfo(
        kind="FuseMount",
        plural="fusemounts",
        scope="Cluster",
        printer_columns=(
            PrinterColumn("Node", ".spec.nodeName"),
            PrinterColumn("Mode", ".spec.mode"),
            PrinterColumn("Refs", ".status.refCount", "integer"),
            PrinterColumn("Phase", ".status.phase"),
            PrinterColumn("Master-Addrs", ".spec.masterAddrs", priority=1),
            PrinterColumn("FS-Path", ".spec.fsPath", priority=1),
            AGE,
        ),
        short_names=("fm",),
    )

    kind: str = "FuseMount"
    spec: FuseMountSpec
    status: FuseMountStatus | None = None
