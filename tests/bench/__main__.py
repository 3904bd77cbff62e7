"""``make bench``: figures measured side by side with a baseline in one run, printed with ratios.
Never pass/fail: the numbers go into the closing notes of the issues that name them.

Runs against a private local cluster it starts (and times), or the cluster KUBECONFIG names.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.bench import bench_api, bench_cluster
from tests.bench.report import Report


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
    report = Report()
    given = os.environ.get("KUBECONFIG")
    if given:
        bench_api.run(report, Path(given.split(os.pathsep)[0]))
    else:
        with (
            tempfile.TemporaryDirectory(prefix="kubectl-fluid-bench-") as tmp,
            bench_cluster.timed_cluster(report, Path(tmp)) as kubeconfig,
        ):
            bench_api.run(report, kubeconfig)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
