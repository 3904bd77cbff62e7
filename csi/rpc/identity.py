"""The CSI Identity service: who the plugin is, what it offers, whether it is ready."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from google.protobuf import wrappers_pb2

from csi.proto import csi_pb2, csi_pb2_grpc
from csi.rpc.rpcerrors import Context, rpc
from kubectl_fluid.api import names

DISTRIBUTION = "kubectl-fluid"


def vendor_version() -> str:
    """The installed package's version; the specification makes vendor_version REQUIRED, so a
    source tree run without installing still answers something recognisable."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


class IdentityServicer(csi_pb2_grpc.IdentityServicer):
    """Answers the same on every instance, whatever services it serves: the specification wants the
    plugin's capabilities "as a whole", so a node-only instance still reports CONTROLLER_SERVICE."""

    def __init__(self, ready: Callable[[], bool] = lambda: True) -> None:
        # The node service passes its own readiness (state recovered, FUSE manager up).
        self._ready = ready
        self._version = vendor_version()

    @rpc
    async def GetPluginInfo(
        self, request: csi_pb2.GetPluginInfoRequest, context: Context
    ) -> csi_pb2.GetPluginInfoResponse:
        return csi_pb2.GetPluginInfoResponse(name=names.CSI_DRIVER, vendor_version=self._version)

    @rpc
    async def GetPluginCapabilities(
        self, request: csi_pb2.GetPluginCapabilitiesRequest, context: Context
    ) -> csi_pb2.GetPluginCapabilitiesResponse:
        service = csi_pb2.PluginCapability.Service(type=csi_pb2.PluginCapability.Service.CONTROLLER_SERVICE)
        return csi_pb2.GetPluginCapabilitiesResponse(capabilities=[csi_pb2.PluginCapability(service=service)])

    @rpc
    async def Probe(self, request: csi_pb2.ProbeRequest, context: Context) -> csi_pb2.ProbeResponse:
        # Always set: an unset `ready` means "ready" to the CO, which would be a lie while recovering.
        return csi_pb2.ProbeResponse(ready=wrappers_pb2.BoolValue(value=self._ready()))
