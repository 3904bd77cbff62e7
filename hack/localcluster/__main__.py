"""The local cluster's command line (``make up``, ``make down``, ``make status``), with hack/ on the path:

    PYTHONPATH=hack python -m localcluster up     [--state-dir .dev] [--nodes 2] [--real-nodes 1] [--fluid]
    PYTHONPATH=hack python -m localcluster down   [--state-dir .dev]
    PYTHONPATH=hack python -m localcluster status [--state-dir .dev]

Binaries come from hack/build-bins.sh (built from Go modules, cached by version outside the repo).
Ports are picked free at start, so two clusters with different state dirs run side by side. ``up`` is
idempotent: a healthy cluster in the state dir is reused; ``--fluid`` also installs the product and
runs its processes (product.py). ``down`` stops exactly the processes ``up`` recorded, by pid and
start time (so a recycled pid is never killed), and removes their state.

``down`` and ``status`` need only the standard library; ``up`` also needs ``cryptography`` (the PKI).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from localcluster import realnodes
from localcluster.lifecycle import down, status, up
from localcluster.state import DEFAULT_STATE, USERS_CLUSTER_MARKER, Cluster, locked

# One real node by default, tainted, so only the pods that ask for it land there.
DEFAULT_REAL_NODES = 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localcluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument(
        "--state-dir", type=Path, default=Path(os.environ.get("LOCALCLUSTER_STATE", DEFAULT_STATE))
    )
    parser.add_argument("--nodes", type=int, default=int(os.environ.get("LOCALCLUSTER_NODES", "2")))
    parser.add_argument(
        "--real-nodes",
        type=int,
        default=None,
        help="real kubelet nodes beside the kwok ones, tainted (localcluster/realnodes.py): "
        f"LOCALCLUSTER_REAL_NODES or {DEFAULT_REAL_NODES}; by default, none where the host cannot run one",
    )
    parser.add_argument("--bin-dir", help="use these binaries instead of building/looking up the cache")
    parser.add_argument(
        "--fluid", action="store_true", help="also install the product and run its processes (make up)"
    )
    args = parser.parse_args(argv)
    state_dir = args.state_dir.resolve()
    if args.command == "status":
        return status(state_dir)
    with locked(state_dir):
        if args.command == "up":
            if (state_dir / USERS_CLUSTER_MARKER).exists() and Cluster.load(state_dir) is not None:
                raise SystemExit(
                    f"error: {state_dir} holds the cluster `make demo` started (the product deployed "
                    f"from its manifests on a real node); stop it with `make down STATE={state_dir}`, "
                    "or give this one another STATE"
                )
            cluster = up(state_dir, args.nodes, args.bin_dir)
            asked = (
                args.real_nodes if args.real_nodes is not None else os.environ.get("LOCALCLUSTER_REAL_NODES")
            )
            count = DEFAULT_REAL_NODES if asked is None else int(asked)
            realnodes.ensure(cluster, count, required=asked is not None)
            if args.fluid:
                # The product needs the venv (PyYAML, tomli-w): imported only when asked for.
                from localcluster import product

                product.ensure_controller(cluster)
                product.ensure_webhook(cluster)
                layout = product.ensure_curvine(cluster)
                product.ensure_csi_nodes(cluster, layout)
                product.ensure_real_node_csi(cluster, layout)
                product.ensure_csi_controller(cluster, layout)
        else:
            down(state_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
