"""``fluid-csi``: the CSI driver's process (SPEC §5). ``--mode controller`` serves Identity and
Controller, ``--mode node`` Identity and Node, ``--mode all`` everything on one socket (csi-sanity,
local runs). The node service mirrors its mounts to FuseMount objects unless ``--no-mirror``
(csi-sanity and runs without a cluster).

The controller's backend (``--backend``): ``curvine``, the default, makes and removes volume
directories in the real Curvine cluster through FUSE mounts this process owns (csi/backends/curvinebackend.py,
under ``--state-dir``); it reads a deleted volume's masters from its PV (``--kubeconfig``, or in
cluster). ``local`` (implied by ``--backend-root``) uses the directory tree the FUSE stand-in
serves, for development and tests that need no Curvine.

``--mode node`` also registers the driver with kubelet itself, as the node-driver-registrar sidecar
would (csi/rpc/registration.py): a socket in kubelet's ``plugins_registry`` (``--plugin-registration-dir``)
telling kubelet where the CSI socket is (``--kubelet-registration-path``); ``--no-registration`` for a
node service no kubelet is to find (the local cluster's stand-in).

Mount modes (``--mount-mode``) and what each survives:

- ``embedded``: FUSE is a child of this process, in a session of its own. It survives a restart of
  this process, not of its container: a container's end takes its pid namespace and cgroup, and
  with them every FUSE in them, so every volume on the node breaks until the node service is back
  and has remounted them (pods then see the volume again, through new binds). The default of the
  command: for a node service run on the host (``make up``, tests).
- ``standalone``: one FUSE pod per mount key on this node, created through the API server. It
  survives a restart of this process and of its container (an upgrade of the DaemonSet): the
  restarted node service adopts the pods and their mounts. The manifests' default, as Curvine
  recommends for production. Needs the API server to start a FUSE (not to keep one running).

Whatever the mode, a Dataset's PV (``fluid_path``, no ``master-addrs``: SPEC §7) is served by its
runtime's client pod, never by a FUSE of this process: NodeStage labels the node for the client and
waits for its mount (``--client-wait``), then binds beneath it (csi/fuse/clientfuse.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import kr8s.asyncio

from csi.backends.backend import Backend, LocalBackend
from csi.backends.curvinebackend import DEFAULT_DEADLINE as BACKEND_DEADLINE
from csi.backends.curvinebackend import CurvineBackend
from csi.fuse.clientfuse import DEFAULT_CLIENT_WAIT, ClientFuse
from csi.fuse.clientnode import ClientNode
from csi.fuse.fusebinary import fuse_binary_problem
from csi.fuse.fuseconfig import NodeSettingsError, load_node_settings
from csi.fuse.fusepods import FusePodManager
from csi.fuse.fuserunner import FuseRunner
from csi.keyedthreads import DEFAULT_DEADLINE
from csi.model.fusepodparams import node_resources
from csi.node.nodewatch import NodeWatch
from csi.node.propagation import PropagationCheck
from csi.node.publisher import MirrorPublisher
from csi.rpc.controller_service import ControllerServicer, PvLookup
from csi.rpc.identity import IdentityServicer
from csi.rpc.node_service import NodeService
from csi.rpc.registration import KubeletRegistration
from csi.rpc.server import DEFAULT_GRACE_SECONDS, CsiServer, EndpointError, serve_until_signalled, socket_path
from kubectl_fluid import logs
from kubectl_fluid.api import names
from kubectl_fluid.health import HealthServer
from kubectl_fluid.kube import client, http
from kubectl_fluid.kube.resources import PERSISTENT_VOLUMES

log = logging.getLogger("csi")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

MODES = ("controller", "node", "all")
BACKENDS = ("curvine", "local")
# Inside --state-dir: the controller's FUSE mounts of each cluster's root (curvine backend).
CLUSTER_MOUNTS_DIR = "cluster-mounts"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fluid-csi", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--endpoint", required=True, help="unix:///path/csi.sock, unix:/path or a bare path")
    p.add_argument("--node-id", help="this node's name (node and all modes)")
    p.add_argument("--state-dir", default="/var/lib/fluid-csi", help="where the node keeps its state file")
    p.add_argument(
        "--mount-root", default=names.KUBELET_PLUGINS_ROOT, help="replaces /var/lib/kubelet/plugins"
    )
    p.add_argument(
        "--fuse-binary",
        default=names.FUSE_BINARY,
        help="the FUSE program, the real curvine-fuse by default; several words (e.g. the development "
        "stand-in 'python -m csi.standin.fusestandin') are split on spaces",
    )
    p.add_argument(
        "--fuse-config",
        metavar="FILE",
        help="this node's curvine-fuse settings (TOML, e.g. [fuse] enable_splice = false): the base of "
        "every mount key's configuration file, whose [client] master_addrs the volume decides",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        help="controller: where volume directories are made: curvine (the real cluster, through FUSE "
        "mounts of its root under --state-dir; the default) or local (--backend-root; the default when "
        "--backend-root is given)",
    )
    p.add_argument(
        "--backend-root",
        help="controller, local backend: the directory holding one sub-directory per cluster-id (the FUSE "
        "stand-in's data)",
    )
    p.add_argument(
        "--backend-deadline",
        type=float,
        default=BACKEND_DEADLINE,
        metavar="SECONDS",
        help="controller, curvine backend: how long a volume's mkdir or remove waits on the cluster's FUSE "
        "mount before the call fails UNAVAILABLE and the mount is replaced (keep it below csi-provisioner's "
        "--timeout; default: %(default)s)",
    )
    p.add_argument(
        "--grace", type=float, default=DEFAULT_GRACE_SECONDS, help="seconds running calls get at stop"
    )
    p.add_argument(
        "--client-wait",
        type=float,
        default=DEFAULT_CLIENT_WAIT,
        metavar="SECONDS",
        help="node mode: how long NodeStage of a Dataset's PV waits for its runtime's client pod to mount"
        " the FUSE at the PV's fluid_path (SPEC §7) before it answers FailedPrecondition saying what the"
        " client pod is doing; kubelet asks again (default: %(default)s)",
    )
    p.add_argument(
        "--fuse-deadline",
        type=float,
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help="node mode: how long a call waits on a FUSE mount that does not answer (its cache's master "
        "hangs, say) before it answers an error naming the mount; the work goes on and ends when the FUSE "
        "answers, and the FuseMount says Broken meanwhile (default: %(default)s)",
    )
    p.add_argument(
        "--mount-mode",
        choices=["embedded", "standalone"],
        default="embedded",
        help="embedded: FUSE is a child of this process; it survives a restart of this process, not of "
        "its container (default). standalone: one FUSE pod per mount key; it survives a restart of "
        "this process and of its container (the manifests' default)",
    )
    p.add_argument(
        "--fuse-image",
        default=os.environ.get("FUSE_IMAGE", "kubectl-fluid:latest"),
        help="standalone: the image of the FUSE pods (it must hold --fuse-binary)",
    )
    p.add_argument(
        "--fuse-env",
        action="append",
        default=[],
        type=_env_var,
        metavar="NAME=VALUE",
        help="standalone: an environment variable of the FUSE pods (repeatable)",
    )
    p.add_argument(
        "--fuse-host-path",
        action="append",
        default=[],
        type=_host_path,
        metavar="DIR",
        help="standalone: a host directory the FUSE pods mount at the same path, e.g. the FUSE "
        "program's configuration or the stand-in's data (repeatable)",
    )
    p.add_argument(
        "--fuse-resources",
        type=_fuse_resources,
        metavar="JSON",
        help="standalone: the FUSE pods' resources unless a StorageClass sets its own (fuse-memory-limit…), "
        'a ResourceRequirements, e.g. {"requests":{"cpu":"100m","memory":"256Mi"},"limits":{"memory":"2Gi"}} '
        "(default: none, BestEffort)",
    )
    p.add_argument(
        "--fuse-priority-class-name",
        metavar="NAME",
        help="standalone: the FUSE pods' priority class unless a StorageClass sets its own "
        "(fuse-priority-class-name), e.g. system-node-critical",
    )
    p.add_argument(
        "--registration",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="node mode: register the driver with kubelet (pluginregistration.v1 on "
        f"{{--plugin-registration-dir}}/{names.registration_socket_name()}), as node-driver-registrar would",
    )
    p.add_argument(
        "--plugin-registration-dir",
        default=names.KUBELET_PLUGINS_REGISTRY,
        metavar="DIR",
        help="kubelet's plugin watcher directory, {kubelet root}/plugins_registry; it must exist "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--kubelet-registration-path",
        type=_kubelet_socket,
        metavar="PATH",
        help="the CSI socket's path as kubelet sees it on the node, told to kubelet in GetInfo "
        "(default: --endpoint's path, right when this process runs on the host or the socket's "
        "directory is mounted at its host path)",
    )
    p.add_argument("--kubeconfig", help="for the FuseMount mirror (default: KUBECONFIG, then in-cluster)")
    p.add_argument(
        "--mirror",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="publish this node's mounts as FuseMount objects",
    )
    p.add_argument(
        "--mirror-resync",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how often the mirror lists this node's FuseMounts and puts right those edited or deleted "
        "by hand; it writes only the ones that differ (default: %(default)s)",
    )
    p.add_argument("--health-port", type=int, default=0, help="serve /healthz /readyz /metrics (0: off)")
    p.add_argument("--health-host", default="0.0.0.0")
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", choices=["json", "text"], default="json")
    args = p.parse_args(argv)
    if args.backend is None:
        args.backend = "local" if args.backend_root else "curvine"
    if args.mode != "node" and args.backend == "local" and not args.backend_root:
        p.error("--backend local needs --backend-root")
    if args.mode != "controller" and not args.node_id:
        p.error(f"--mode {args.mode} needs --node-id")
    return args


def _env_var(value: str) -> tuple[str, str]:
    name, sep, text = value.partition("=")
    if not sep or not _ENV_NAME.fullmatch(name):
        raise argparse.ArgumentTypeError(f"{value!r} is not NAME=VALUE with a C identifier for NAME")
    return name, text


def _kubelet_socket(value: str) -> str:
    """A path kubelet can dial: absolute (kubelet's working directory is not this process's), a unix
    socket, short enough for sockaddr_un."""
    if "://" in value and not value.startswith("unix://"):
        raise argparse.ArgumentTypeError(f"{value!r}: kubelet dials CSI drivers on unix sockets only")
    bare = value.removeprefix("unix://").removeprefix("unix:")
    if not os.path.isabs(bare):
        raise argparse.ArgumentTypeError(f"{value!r} is not an absolute path on the node")
    try:
        return str(socket_path(bare))
    except EndpointError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _fuse_resources(value: str) -> dict[str, dict[str, str]]:
    try:
        return node_resources(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{value!r} {err}") from None


def _host_path(value: str) -> str:
    if not os.path.isabs(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an absolute path")
    return os.path.normpath(value)


def build_mirror(args: argparse.Namespace) -> MirrorPublisher | None:
    if args.mode == "controller" or not args.mirror:
        return None
    return MirrorPublisher(
        args.node_id,
        lambda: client.connect(args.kubeconfig),
        resync=args.mirror_resync,
        program=" ".join(args.fuse_binary.split()),
        image=args.fuse_image if args.mount_mode == "standalone" else None,
    )


def build_propagation(args: argparse.Namespace) -> PropagationCheck | None:
    """Who tells a pod that cannot see its remounted volume; with the mirror, as both need the API."""
    if args.mode == "controller" or not args.mirror:
        return None
    return PropagationCheck(args.node_id, lambda: client.connect(args.kubeconfig))


def build_clients(args: argparse.Namespace) -> ClientFuse:
    """Client mode's side of the node (SPEC §7); it labels Nodes through the API, as the mirror
    talks to it (no API server under --no-mirror: csi-sanity, local runs)."""
    api = ClientNode(args.node_id, lambda: client.connect(args.kubeconfig)) if args.mirror else None
    return ClientFuse(api, wait=args.client_wait)


def build_fuse_runner(args: argparse.Namespace) -> FuseRunner | None:
    if args.mount_mode != "standalone":
        return None  # the node service's default: embedded
    return FusePodManager(
        args.node_id,
        lambda: client.connect(args.kubeconfig),
        args.fuse_image,
        env=tuple(args.fuse_env),
        host_paths=tuple(args.fuse_host_path),
        resources=args.fuse_resources,
        priority_class=args.fuse_priority_class_name,
        deadline=args.fuse_deadline,
    )


def build_backend(args: argparse.Namespace, settings: dict[str, Any]) -> Backend:
    if args.backend == "local":
        return LocalBackend(args.backend_root)
    mounts = os.path.join(args.state_dir, CLUSTER_MOUNTS_DIR)
    return CurvineBackend(args.fuse_binary.split(), mounts, settings, deadline=args.backend_deadline)


def build_pv_lookup(args: argparse.Namespace) -> PvLookup:
    """A PV's ``spec.csi`` by name, through a client made at the first use (a controller that never
    deletes a volume it did not create never needs the API server)."""
    connection: list[kr8s.asyncio.Api] = []

    async def lookup(name: str) -> dict[str, Any] | None:
        if not connection:
            connection.append(await client.connect(args.kubeconfig))
        pv = await http.get(connection[0], PERSISTENT_VOLUMES.object_path(None, name))
        csi: dict[str, Any] | None = None if pv is None else pv.get("spec", {}).get("csi")
        return csi

    return lookup


def build_server(
    args: argparse.Namespace, mirror: MirrorPublisher | None = None
) -> tuple[CsiServer, NodeService | None, Backend | None]:
    settings = load_node_settings(args.fuse_config)
    backend = build_backend(args, settings) if args.mode != "node" else None
    controller = (
        ControllerServicer(backend, build_pv_lookup(args) if args.backend == "curvine" else None)
        if backend is not None
        else None
    )
    node = (
        NodeService(
            args.node_id,
            args.state_dir,
            args.mount_root,
            args.fuse_binary.split(),
            mode=args.mount_mode,
            mirror=mirror.publish if mirror else None,
            fuse=build_fuse_runner(args),
            fuse_settings=settings,
            deadline=args.fuse_deadline,
            propagation=build_propagation(args),
            clients=build_clients(args),
        )
        if args.mode != "controller"
        else None
    )
    return (
        CsiServer(args.endpoint, identity=IdentityServicer(), controller=controller, node=node),
        node,
        backend,
    )


def build_registration(args: argparse.Namespace) -> KubeletRegistration | None:
    """Node mode only: ``all`` is for csi-sanity and local runs, which no kubelet calls."""
    if args.mode != "node" or not args.registration:
        return None
    endpoint = args.kubelet_registration_path or str(socket_path(args.endpoint))
    return KubeletRegistration(args.plugin_registration_dir, endpoint)


def fuse_check(args: argparse.Namespace) -> Callable[[], str | None]:
    """Why this node service cannot start FUSE, asked afresh at every readiness probe (so a binary
    installed later makes it ready); nothing to check unless FUSE runs here (embedded mode)."""
    if args.mode == "controller" or args.mount_mode != "embedded":
        return lambda: None
    program = args.fuse_binary.split()[0]
    return lambda: fuse_binary_problem(program)


async def run(args: argparse.Namespace) -> None:
    mirror = build_mirror(args)
    server, node, backend = build_server(args, mirror)
    registration = build_registration(args)
    recovered = asyncio.Event()
    fuse_problem = fuse_check(args)
    if (problem := fuse_problem()) is not None:
        # Served all the same (unstaging and other keys' volumes need no new FUSE), but not ready,
        # and every NodeStage that needs a FUSE answers FailedPrecondition with this.
        log.error("%s", problem)
    if args.mode != "controller" and names.is_fuse_standin(args.fuse_binary):
        log.warning(
            "the FUSE is %s, the test bed's stand-in: it serves a directory of this node, not a Curvine"
            " cache, and no default install runs it; run Curvine's curvine-fuse (--fuse-binary)",
            names.FUSE_STANDIN_PROGRAM,
        )

    def not_ready() -> str | None:
        if not recovered.is_set():
            return "recovering the mounts from before the restart"
        return fuse_problem() or (registration.problem() if registration else None)

    def live() -> bool:
        # What node-driver-registrar's /healthz checked: without its socket kubelet has dropped the
        # driver, and only a restart makes a new one.
        problem = registration.socket_problem() if registration else None
        if problem is not None:
            log.error("%s: failing /healthz", problem)
        return problem is None

    health = None
    health_watch: asyncio.Task[None] | None = None
    if args.health_port:
        health = HealthServer(
            args.health_host,
            args.health_port,
            ready=lambda: not_ready() is None,
            live=live,
            why_not_ready=not_ready,
        )
        await health.start()
    node_watch = None
    if mirror is not None:
        mirror.start()
        # Its Node back from being lost: the mirror publishes again over the controller's Unknown.
        node_watch = NodeWatch(args.node_id, lambda: client.connect(args.kubeconfig), mirror.node_ready)
        node_watch.start()
    try:
        if node is not None:
            await node.recover()  # mounts from before a restart are whole again before kubelet calls
            health_watch = asyncio.create_task(node.watch_health())
        recovered.set()
        await serve_until_signalled(server, args.grace, registration)
    finally:
        if health_watch is not None:
            health_watch.cancel()
        if backend is not None:
            await backend.close()
        if node is not None:
            await node.clients.close()
        if node_watch is not None:
            await node_watch.close()
        if mirror is not None:
            # A last chance to leave the objects right; the next start corrects them anyway.
            await mirror.synced(timeout=2)
            await mirror.close()
        if health is not None:
            await health.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    try:
        asyncio.run(run(args))
    except (EndpointError, NodeSettingsError) as err:
        log.error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
