"""The CSI Controller service: CreateVolume / DeleteVolume of directory volumes through a filesystem
backend (csi/backends/backend.py: the real Curvine, or a local tree), ValidateVolumeCapabilities, and the one
capability that goes with them.

The masters of a volume's cluster: CreateVolume has them (its parameters) and remembers them by
cluster-id; DeleteVolume gets only the volume handle ``{cluster-id}@{fs-path}@{pv-name}``, so after
a restart they are read from the volume's PV, which the provisioner keeps (its finalizer) until
DeleteVolume succeeded: GET of the PV named in the handle, whose ``volumeHandle`` must be this one
and whose ``master-addrs`` must hash to the cluster-id (``pv_lookup``; none in csi-sanity runs).

Idempotency, as the specification demands it:
- CreateVolume is keyed by the request's ``name`` (the PV name). Repeating it with compatible
  arguments returns the same volume; different parameters, or a capacity range the first volume does
  not fit, is ALREADY_EXISTS. What a name was created with is remembered in memory only: after a
  restart a repeat is answered from the filesystem (the directory is there, the volume id is derived
  from name and parameters), which errs on the side of success, the side a retrying provisioner needs.
- DeleteVolume of an unknown or unparseable id succeeds without touching anything.
Calls on one name are serialized, so a retried CreateVolume racing its original cannot interleave
with it (or with a DeleteVolume of the same volume).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from csi.backends.backend import Backend, Cluster
from csi.keyedlocks import KeyedLocks
from csi.model.addresses import normalize_master_addrs
from csi.model.errors import ClientlessVolume, InvalidParameter
from csi.model.params import VolumeParams, parse_params
from csi.model.volumes import (
    CreatedVolume,
    VolumeHandle,
    create_volume_ids,
    parse_volume_context,
    parse_volume_handle,
)
from csi.proto import csi_pb2, csi_pb2_grpc
from csi.rpc.capabilities import capabilities_problem
from csi.rpc.rpcerrors import Context, RpcFailure, required, rpc
from kubectl_fluid.api import names

log = logging.getLogger("csi.controller")

_CAPABILITIES = (csi_pb2.ControllerServiceCapability.RPC.CREATE_DELETE_VOLUME,)
# A PV by name → its ``spec.csi`` (None when there is no such PV): how DeleteVolume finds the masters.
PvLookup = Callable[[str], Awaitable[Mapping[str, Any] | None]]


@dataclass(frozen=True)
class _Created:
    volume_id: str
    params: VolumeParams
    capacity_bytes: int


def locate_static(volume_context: Mapping[str, str]) -> tuple[Cluster, str] | None:
    """(cluster, curvine-path) of a static PV's volume from its volume attributes, or None when
    they do not describe one (missing or invalid keys, a clientless dataset's PV)."""
    try:
        volume = parse_volume_context(volume_context)
    except (InvalidParameter, ClientlessVolume):
        return None
    masters = volume.params.master_addrs
    return Cluster(names.cluster_id(masters), masters), volume.curvine_path


def masters_of_pv(csi: Mapping[str, Any] | None, handle: VolumeHandle) -> str | None:
    """The canonical master-addrs a PV's ``spec.csi`` names for ``handle``'s volume, or None when it
    is another volume's (another handle, another driver) or names masters of another cluster."""
    if csi is None or csi.get("driver") != names.CSI_DRIVER or csi.get("volumeHandle") != str(handle):
        return None
    raw = (csi.get("volumeAttributes") or {}).get(names.PARAM_MASTER_ADDRS)
    try:
        masters = normalize_master_addrs(raw) if isinstance(raw, str) else None
    except InvalidParameter:
        return None
    return masters if masters is not None and names.cluster_id(masters) == handle.cluster_id else None


def requested_capacity(capacity_range: csi_pb2.CapacityRange) -> int:
    """The capacity to report for a new volume: a directory has no size of its own, so the request
    is the truth. 0 (the specification's "unknown") when nothing was asked."""
    required_bytes, limit = capacity_range.required_bytes, capacity_range.limit_bytes
    if required_bytes < 0 or limit < 0:
        raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, "capacity_range: byte counts must not be negative")
    if limit and required_bytes > limit:
        raise RpcFailure(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"capacity_range: required_bytes {required_bytes} exceeds limit_bytes {limit}",
        )
    return required_bytes or limit


def fits(capacity: int, capacity_range: csi_pb2.CapacityRange) -> bool:
    """Whether a volume of ``capacity`` bytes satisfies ``capacity_range`` (0: unknown, fits all)."""
    if capacity == 0:
        return True
    limit = capacity_range.limit_bytes
    return capacity >= capacity_range.required_bytes and (limit == 0 or capacity <= limit)


class ControllerServicer(csi_pb2_grpc.ControllerServicer):
    def __init__(self, backend: Backend, pv_lookup: PvLookup | None = None) -> None:
        self._backend = backend
        self._pv_lookup = pv_lookup
        self._created: dict[str, _Created] = {}
        # cluster-id → canonical master-addrs, from every volume created or looked up.
        self._masters: dict[str, str] = {}
        self._locks = KeyedLocks()

    async def _cluster(self, handle: VolumeHandle) -> Cluster:
        masters = self._masters.get(handle.cluster_id)
        if masters is None and self._pv_lookup is not None:
            try:
                found = await self._pv_lookup(handle.pv_name)
            except Exception as err:
                raise RpcFailure(
                    grpc.StatusCode.UNAVAILABLE,
                    f"cannot read PV {handle.pv_name} for the masters of cluster {handle.cluster_id}: {err}",
                ) from None
            masters = masters_of_pv(found, handle)
            if masters is not None:
                self._masters[handle.cluster_id] = masters
        return Cluster(handle.cluster_id, masters)

    @rpc
    async def CreateVolume(
        self, request: csi_pb2.CreateVolumeRequest, context: Context
    ) -> csi_pb2.CreateVolumeResponse:
        if not request.name:
            raise required("name")
        if not request.volume_capabilities:
            raise required("volume_capabilities")
        problem = capabilities_problem(request.volume_capabilities)
        if problem is not None:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"volume_capabilities: {problem}")
        if request.HasField("volume_content_source"):
            raise RpcFailure(
                grpc.StatusCode.INVALID_ARGUMENT,
                "volume_content_source: volumes cannot be created from snapshots or other volumes",
            )
        if request.mutable_parameters:
            raise RpcFailure(
                grpc.StatusCode.INVALID_ARGUMENT,
                "mutable_parameters: volume attributes classes are not supported",
            )
        capacity = requested_capacity(request.capacity_range)
        params = parse_params(request.parameters)
        created = create_volume_ids(params, request.name)
        for warning in params.warnings:
            log.warning("CreateVolume %s: %s", request.name, warning)

        async with self._locks.hold(request.name):
            previous = self._created.get(request.name)
            if previous is not None:
                self._check_compatible(request, params, created, previous)
                capacity = previous.capacity_bytes
            await self._make_directory(params, created)
            self._created[request.name] = _Created(created.volume_handle, params, capacity)

        log.info(
            "CreateVolume %s: %s",
            request.name,
            "exists" if previous else "created",
            extra={"volume_id": created.volume_handle, "curvine_path": created.curvine_path},
        )
        volume = csi_pb2.Volume(
            volume_id=created.volume_handle, capacity_bytes=capacity, volume_context=created.volume_context
        )
        return csi_pb2.CreateVolumeResponse(volume=volume)

    @staticmethod
    def _check_compatible(
        request: csi_pb2.CreateVolumeRequest, params: VolumeParams, created: CreatedVolume, previous: _Created
    ) -> None:
        if previous.params != params or previous.volume_id != created.volume_handle:
            raise RpcFailure(
                grpc.StatusCode.ALREADY_EXISTS,
                f"volume {request.name} already exists with different parameters",
            )
        if not fits(previous.capacity_bytes, request.capacity_range):
            raise RpcFailure(
                grpc.StatusCode.ALREADY_EXISTS,
                f"volume {request.name} already exists with capacity {previous.capacity_bytes} bytes, "
                "outside the requested capacity_range",
            )

    async def _make_directory(self, params: VolumeParams, created: CreatedVolume) -> None:
        self._masters[created.cluster_id] = params.master_addrs
        cluster = Cluster(created.cluster_id, params.master_addrs)
        if params.path_type == names.PATH_TYPE_DIRECTORY_OR_CREATE:
            await self._backend.mkdirs(cluster, created.curvine_path)
        elif not await self._backend.exists(cluster, created.curvine_path):
            raise RpcFailure(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{names.PARAM_PATH_TYPE} {names.PATH_TYPE_DIRECTORY} requires {created.curvine_path} "
                f"to exist in cluster {created.cluster_id} ({params.master_addrs}); create it, or use "
                f"{names.PARAM_PATH_TYPE} {names.PATH_TYPE_DIRECTORY_OR_CREATE}",
            )

    @rpc
    async def DeleteVolume(
        self, request: csi_pb2.DeleteVolumeRequest, context: Context
    ) -> csi_pb2.DeleteVolumeResponse:
        if not request.volume_id:
            raise required("volume_id")
        handle = parse_volume_handle(request.volume_id)
        if handle is None:
            # Not a handle CreateVolume makes (a static PV's, say): nothing of ours to remove.
            log.info("DeleteVolume %s: not a provisioned volume, nothing to do", request.volume_id)
            return csi_pb2.DeleteVolumeResponse()
        async with self._locks.hold(handle.pv_name):
            await self._backend.remove(await self._cluster(handle), handle.curvine_path)
            previous = self._created.get(handle.pv_name)
            if previous is not None and previous.volume_id == request.volume_id:
                del self._created[handle.pv_name]
        log.info("DeleteVolume %s: removed %s", request.volume_id, handle.curvine_path)
        return csi_pb2.DeleteVolumeResponse()

    @rpc
    async def ValidateVolumeCapabilities(
        self, request: csi_pb2.ValidateVolumeCapabilitiesRequest, context: Context
    ) -> csi_pb2.ValidateVolumeCapabilitiesResponse:
        if not request.volume_id:
            raise required("volume_id")
        if not request.volume_capabilities:
            raise required("volume_capabilities")
        handle = parse_volume_handle(request.volume_id)
        where = (
            (await self._cluster(handle), handle.curvine_path)
            if handle is not None
            else locate_static(request.volume_context)
        )
        if where is None or not await self._backend.exists(*where):
            raise RpcFailure(grpc.StatusCode.NOT_FOUND, f"volume {request.volume_id} does not exist")
        problem = capabilities_problem(request.volume_capabilities)
        if problem is not None:
            # Not an error: the specification answers "unsupported" with an unset `confirmed`.
            return csi_pb2.ValidateVolumeCapabilitiesResponse(message=problem)
        confirmed = csi_pb2.ValidateVolumeCapabilitiesResponse.Confirmed(
            volume_context=request.volume_context,
            volume_capabilities=request.volume_capabilities,
            parameters=request.parameters,
        )
        return csi_pb2.ValidateVolumeCapabilitiesResponse(confirmed=confirmed)

    @rpc
    async def ControllerGetCapabilities(
        self, request: csi_pb2.ControllerGetCapabilitiesRequest, context: Context
    ) -> csi_pb2.ControllerGetCapabilitiesResponse:
        return csi_pb2.ControllerGetCapabilitiesResponse(
            capabilities=[
                csi_pb2.ControllerServiceCapability(rpc=csi_pb2.ControllerServiceCapability.RPC(type=kind))
                for kind in _CAPABILITIES
            ]
        )
