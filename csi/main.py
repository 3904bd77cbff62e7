"""``fluid-csi``: the CSI driver's process (SPEC §5). ``--mode controller`` serves Identity and
Controller, ``--mode node`` Identity and Node, ``--mode all`` everything on one socket (csi-sanity,
local runs). Only the embedded mount mode exists so far: FUSE runs as the node service's child.

The controller's filesystem backend is the local directory tree the FUSE stand-in serves
(``--backend-root``): the repository has no Curvine client, so that is the only backend there is.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from csi.backend import LocalBackend
from csi.controller_service import ControllerServicer
from csi.identity import IdentityServicer
from csi.node_service import NodeService
from csi.server import DEFAULT_GRACE_SECONDS, CsiServer, EndpointError, serve_until_signalled
from kubectl_fluid import logs
from kubectl_fluid.api import names

log = logging.getLogger("csi")

MODES = ("controller", "node", "all")


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
        help="the FUSE program; several words (e.g. 'python -m csi.fusestandin') are split on spaces",
    )
    p.add_argument(
        "--backend-root",
        help="controller: the directory holding one sub-directory per cluster-id (the FUSE stand-in's data)",
    )
    p.add_argument(
        "--grace", type=float, default=DEFAULT_GRACE_SECONDS, help="seconds running calls get at stop"
    )
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", choices=["json", "text"], default="json")
    args = p.parse_args(argv)
    if args.mode != "node" and not args.backend_root:
        p.error(f"--mode {args.mode} needs --backend-root")
    if args.mode != "controller" and not args.node_id:
        p.error(f"--mode {args.mode} needs --node-id")
    return args


def build_server(args: argparse.Namespace) -> tuple[CsiServer, NodeService | None]:
    controller = ControllerServicer(LocalBackend(args.backend_root)) if args.mode != "node" else None
    node = (
        NodeService(args.node_id, args.state_dir, args.mount_root, args.fuse_binary.split())
        if args.mode != "controller"
        else None
    )
    return CsiServer(args.endpoint, identity=IdentityServicer(), controller=controller, node=node), node


async def run(server: CsiServer, node: NodeService | None, grace: float) -> None:
    if node is not None:
        await node.recover()  # mounts from before a restart are whole again before kubelet calls
    await serve_until_signalled(server, grace)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    try:
        server, node = build_server(args)
        asyncio.run(run(server, node, args.grace))
    except EndpointError as err:
        log.error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
