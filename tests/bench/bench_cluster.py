"""The test bed's own figures: seconds from ``up`` (warm binary cache) to a ready cluster, and ``down``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

from tests.bench.report import Report


@contextlib.contextmanager
def timed_cluster(report: Report, state_dir: Path) -> Iterator[Path]:
    import localcluster
    from localcluster.controlplane import build_bins

    build_bins()  # a cold build is not what `up` is measured for
    t0 = time.monotonic()
    cluster = localcluster.up(state_dir, 2, None)
    report.add("local cluster up -> 2 nodes Ready", time.monotonic() - t0, "s")
    try:
        yield cluster.kubeconfig
    finally:
        t0 = time.monotonic()
        localcluster.down(state_dir)
        report.add("local cluster down", time.monotonic() - t0, "s")
