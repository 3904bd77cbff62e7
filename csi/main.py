"""``fluid-csi``: the CSI driver's process (SPEC §5). ``--mode controller`` serves Identity and
Controller. The modes ``node`` and ``all`` of SPEC §5 arrive with the Node service; until then they
are not offered at all rather than offered and refused.

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
from csi.server import DEFAULT_GRACE_SECONDS, CsiServer, EndpointError, serve_until_signalled
from kubectl_fluid import logs

log = logging.getLogger("csi")

MODES = ("controller",)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fluid-csi", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--endpoint", required=True, help="unix:///path/csi.sock, unix:/path or a bare path")
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
    if not args.backend_root:
        p.error(f"--mode {args.mode} needs --backend-root")
    return args


def build_server(args: argparse.Namespace) -> CsiServer:
    controller = ControllerServicer(LocalBackend(args.backend_root))
    return CsiServer(args.endpoint, identity=IdentityServicer(), controller=controller)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    try:
        server = build_server(args)
        asyncio.run(serve_until_signalled(server, args.grace))
    except EndpointError as err:
        log.error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
