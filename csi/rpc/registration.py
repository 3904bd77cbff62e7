"""kubelet's plugin registration (``pluginregistration.v1``), served by the node service itself: what
the node-driver-registrar sidecar does, without the sidecar.

kubelet's plugin watcher watches ``{kubelet root}/plugins_registry``. For a socket appearing there
it calls ``GetInfo`` (within 1 s), checks the answer (type ``CSIPlugin``: its CSI handler; a 1.x
version among ``supported_versions``), calls ``NodeGetInfo`` at the answer's ``endpoint`` to write
the CSINode object, and tells the plugin how that went with ``NotifyRegistrationStatus``; it retries
a failed registration with back-off. It deregisters the driver when the socket file goes away.

Hence the order here: this socket appears only once the CSI socket serves (kubelet calls it at
once), and goes before the CSI socket stops. A refusal from kubelet is logged with kubelet's own
error and is the node service's readiness problem until kubelet registers the driver.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Final

import grpc

from csi.proto import pluginregistration_pb2, pluginregistration_pb2_grpc
from csi.rpc.rpcerrors import Context
from csi.rpc.server import EndpointError, UnixGrpcServer
from kubectl_fluid.api import names

# The name it logged under before csi/ had sub-packages: log filters and tests match it.
log = logging.getLogger("csi.registration")

# kubelet's handler key for CSI drivers (k8s.io/kubelet pluginregistration/v1 constants.go).
PLUGIN_TYPE: Final = "CSIPlugin"
# The CSI specification version served (csi.v1); kubelet keeps the highest 1.x it is offered.
SUPPORTED_VERSIONS: Final = ("1.0.0",)
# kubelet registers a new socket within a second or two: silence for this long means it is not
# watching this directory.
UNASKED_WARNING_SECONDS: Final = 30.0


class RegistrationServicer(pluginregistration_pb2_grpc.RegistrationServicer):
    """The two calls, and what kubelet last said."""

    def __init__(self, driver: str, endpoint: str) -> None:
        self.info = pluginregistration_pb2.PluginInfo(
            type=PLUGIN_TYPE, name=driver, endpoint=endpoint, supported_versions=SUPPORTED_VERSIONS
        )
        self.asked = False
        # None until kubelet has said: no kubelet at all (a local run) is nothing to complain of.
        self.registered: bool | None = None
        self.error = ""

    async def GetInfo(
        self, request: pluginregistration_pb2.InfoRequest, context: Context
    ) -> pluginregistration_pb2.PluginInfo:
        self.asked = True
        log.info(
            "kubelet asked for the plugin's registration (GetInfo): %s at %s",
            self.info.name,
            self.info.endpoint,
        )
        return self.info

    async def NotifyRegistrationStatus(
        self, request: pluginregistration_pb2.RegistrationStatus, context: Context
    ) -> pluginregistration_pb2.RegistrationStatusResponse:
        self.registered, self.error = request.plugin_registered, request.error
        if request.plugin_registered:
            log.info("kubelet registered CSI driver %s (endpoint %s)", self.info.name, self.info.endpoint)
        else:
            log.error(
                "kubelet refused to register CSI driver %s (endpoint %s): %s",
                self.info.name,
                self.info.endpoint,
                request.error or "(kubelet gave no reason)",
            )
        return pluginregistration_pb2.RegistrationStatusResponse()


class KubeletRegistration:
    """The registration socket ``{directory}/{driver}-reg.sock``, answering that kubelet should dial
    ``endpoint`` (the CSI socket's path on the node, as kubelet sees it) for the driver's calls."""

    def __init__(
        self,
        directory: str | Path,
        endpoint: str,
        driver: str = names.CSI_DRIVER,
        unasked_warning: float = UNASKED_WARNING_SECONDS,
    ) -> None:
        self.directory = Path(directory).absolute()
        self.path = self.directory / names.registration_socket_name(driver)
        self.servicer = RegistrationServicer(driver, endpoint)
        self._unix = UnixGrpcServer(self.path, "kubelet plugin registration", self._add_services)
        self._unasked_warning = unasked_warning
        self._watchdog: asyncio.TimerHandle | None = None
        self._serving = False

    def _add_services(self, server: grpc.aio.Server) -> None:
        pluginregistration_pb2_grpc.add_RegistrationServicer_to_server(self.servicer, server)

    @property
    def registered(self) -> bool | None:
        return self.servicer.registered

    async def start(self) -> None:
        # Not created when missing: kubelet makes it at its start, so a missing one means another
        # kubelet root (or none), and a socket put there would never be found.
        if not self.directory.is_dir():
            raise EndpointError(
                f"kubelet's plugin registration directory {self.directory} does not exist: point "
                "--plugin-registration-dir at {kubelet root}/plugins_registry of this node's kubelet, "
                "or run with --no-registration where no kubelet is to find the driver"
            )
        await self._unix.start()
        self._serving = True
        self._watchdog = asyncio.get_running_loop().call_later(self._unasked_warning, self._warn_if_unasked)

    def _warn_if_unasked(self) -> None:
        if not self.servicer.asked:
            log.warning(
                "kubelet has not called GetInfo on %s within %.0f s: is %s the plugins_registry of this "
                "node's kubelet (its --root-dir)? Until kubelet registers the driver, pods cannot mount "
                "its volumes on this node",
                self.path,
                self._unasked_warning,
                self.directory,
            )

    async def stop(self) -> None:
        """Remove the socket (kubelet then deregisters the driver); safe to call when not started."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        self._serving = False
        await self._unix.stop(0)

    def problem(self) -> str | None:
        """kubelet's refusal, while it stands (readiness)."""
        if self.servicer.registered is False:
            return f"kubelet refused to register the driver: {self.servicer.error or '(no reason given)'}"
        return None

    def socket_problem(self) -> str | None:
        """The registration socket is gone or not ours (liveness): kubelet has deregistered the
        driver and will not find it again until this process makes a new socket. Nothing before
        the socket is made (the node service recovers its mounts first) or once it is stopped."""
        if not self._serving or self._unix.owns_socket():
            return None
        return f"the kubelet registration socket {self.path} was removed or replaced"
