"""``make bench``: figures measured side by side with a baseline in one run, printed with ratios.
Never pass/fail: the numbers go into the closing notes of the issues that name them.

Runs against a private local cluster it starts (and times), or the cluster KUBECONFIG names. The table
ends the output; the same rows go to $BENCH_JSON (default .dev/bench.json). Goals are issue 15's.
"""

from __future__ import annotations

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
    bench_webhook,
)
from tests.bench.report import Report


def run_all(report: Report, kubeconfig: Path, workdir: Path) -> None:
    bench_api.run(report, kubeconfig)
    bench_controller.run(report, kubeconfig, workdir)
    bench_webhook.run(report, kubeconfig, workdir)
    bench_csi.run(report)
    bench_curvine.run(report)
    bench_cli.run(report, kubeconfig, workdir)


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
    report = Report()
    given = os.environ.get("KUBECONFIG")
    with tempfile.TemporaryDirectory(prefix="kubectl-fluid-bench-") as tmp:
        if given:
            run_all(report, Path(given.split(os.pathsep)[0]), Path(tmp))
        else:
            with bench_cluster.timed_cluster(report, Path(tmp) / "cluster") as kubeconfig:
                run_all(report, kubeconfig, Path(tmp))
    report.print()
    report.write_json(Path(os.environ.get("BENCH_JSON", ".dev/bench.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
