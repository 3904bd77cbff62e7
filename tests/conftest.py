"""Shared pytest set-up: tests under tests/e2e are marked ``e2e`` by location, so a test cannot land
there and silently escape ``-m e2e`` (or be run without a cluster by ``-m 'not e2e'``). Under CI
(``CI`` set, as `.ci/run` is run) a skipped test is a failure: CI has root, /dev/fuse, Go, the
control plane and Mooncake, so a skip there means a check that silently did not run."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path

import pluggy
import pytest

REPO = Path(__file__).resolve().parent.parent
# hack/ holds the local-cluster driver; the e2e fixture and its own tests import it.
sys.path.insert(0, str(REPO / "hack"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    e2e_dir = REPO / "tests" / "e2e"
    for item in items:
        if e2e_dir in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport]]:
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where everything it needs is installed: {reason}"
