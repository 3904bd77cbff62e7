"""``make bench``: figures measured side by side with a baseline in one run, printed with ratios.
Never pass/fail: the numbers go into the closing notes of the issues that name them.

Runs against a private local cluster it starts (and times), or the cluster KUBECONFIG names. The table
ends the output; the same rows go to $BENCH_JSON (default .dev/bench.json). Goals are issue 15's.

``--scale`` (``make bench SCALE=1``) runs the controller bench with 2,000 pairs instead of 500, and the
cluster-scale scenario (bench_scale: 200 kwok nodes, 10,000 injected pods; about 13 minutes more);
``--only controller`` (``make bench ONLY=controller``) runs only the named benches; ``--pairs N``
(``make bench PAIRS=N``) gives the controller bench another size, for a look that takes minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tests.bench import (
    bench_api,
    bench_cli,
    bench_cluster,
    bench_controller,
    bench_csi,
    bench_curvine,
    bench_datapath,
    bench_firstbyte,
    bench_inspect,
    bench_mirror,
    bench_mooncake,
    bench_scale,
    bench_webhook,
)
from tests.bench.report import Report

BENCHES = (
    "api", "controller", "webhook", "mooncake", "csi", "curvine", "mirror", "firstbyte", "datapath", "cli",
    "inspect", "scale",
)  # fmt: skip
SCALE_ONLY = ("scale",)  # in the run only with --scale, or when named
NAMED_ONLY = ("datapath",)  # a real-node cluster of its own, ~10 minutes: in the run only when named


def run_all(report: Report, kubeconfig: Path, workdir: Path, args: argparse.Namespace) -> None:
    pairs = args.pairs or (bench_controller.SCALE_PAIRS if args.scale else bench_controller.PAIRS)
    steps = {
        "api": lambda: bench_api.run(report, kubeconfig),
        "controller": lambda: bench_controller.run(report, kubeconfig, workdir, pairs),
        "webhook": lambda: bench_webhook.run(report, kubeconfig, workdir),
        "mooncake": lambda: bench_mooncake.run(report, kubeconfig, workdir),
        "csi": lambda: bench_csi.run(report),
        "curvine": lambda: bench_curvine.run(report),
        "mirror": lambda: bench_mirror.run(report, kubeconfig, workdir),
        "firstbyte": lambda: bench_firstbyte.run(report),  # a cluster of its own, one real node
        "datapath": lambda: bench_datapath.run(report),
        "cli": lambda: bench_cli.run(report, kubeconfig, workdir),
        "inspect": lambda: bench_inspect.run(report, kubeconfig, workdir),
        "scale": lambda: bench_scale.run(report, kubeconfig, workdir),
    }
    for name in BENCHES:
        if chosen(name, args):
            steps[name]()


def chosen(name: str, args: argparse.Namespace) -> bool:
    """Whether ``name`` runs: the named ones when any is; else all but the named-only and, without
    --scale, the scale ones."""
    if args.only:
        return name in args.only
    return name not in NAMED_ONLY and (args.scale or name not in SCALE_ONLY)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    p.add_argument(
        "--scale",
        action="store_true",
        help=f"the controller bench with {bench_controller.SCALE_PAIRS} pairs, not {bench_controller.PAIRS}, "
        "and the cluster-scale scenario",
    )
    p.add_argument("--pairs", type=int, help="the controller bench with this many pairs (over --scale)")
    p.add_argument("--only", action="append", choices=BENCHES, help="run only this bench (repeatable)")
    return p.parse_args(argv)


def main() -> int:
    args = parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
    report = Report()
    given = os.environ.get("KUBECONFIG")
    with tempfile.TemporaryDirectory(prefix="kubectl-fluid-bench-") as tmp:
        if given:
            run_all(report, Path(given.split(os.pathsep)[0]), Path(tmp), args)
        else:
            with bench_cluster.timed_cluster(report, Path(tmp) / "cluster") as kubeconfig:
                run_all(report, kubeconfig, Path(tmp), args)
    report.print()
    report.write_json(Path(os.environ.get("BENCH_JSON", ".dev/bench.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
