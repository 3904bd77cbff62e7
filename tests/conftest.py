"""Shared pytest set-up: tests under tests/e2e are marked ``e2e`` by location, so a test cannot land
there and silently escape ``-m e2e`` (or be run without a cluster by ``-m 'not e2e'``). Under CI
(``CI`` set, as `.ci/run` is run) a skipped test is a failure: CI has root, /dev/fuse, Go, the
control plane and Mooncake, so a skip there means a check that silently did not run."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path

import pluggy
import pytest
from hypothesis import settings

# No per-example deadline: it is a timed assertion (an example slower than 200 ms fails), which a
# loaded machine trips with no defect behind it (test_cli_injection's laws did, once). Speed is
# measured by `make bench`, never asserted.
settings.register_profile("kubectl-fluid", deadline=None)
settings.load_profile("kubectl-fluid")

REPO = Path(__file__).resolve().parent.parent
# hack/ holds the local-cluster driver; the e2e fixture and its own tests import it.
sys.path.insert(0, str(REPO / "hack"))


_OWN_BASETEMP = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """A temporary root of the session's own. pytest's default (/tmp/pytest-of-USER/pytest-N) keeps
    the last three sessions' and deletes older ones when a session starts: a second pytest started
    while `make test` ran deleted the running suite's cluster state (a real node's containerd
    exited, its configuration gone). Removed when the session passed and nothing is mounted in it;
    kept, for a post-mortem, when it failed."""
    if config.option.basetemp is None:
        own = Path(tempfile.mkdtemp(prefix="kubectl-fluid-pytest-"))
        config.option.basetemp = str(own)
        config.stash[_OWN_BASETEMP] = own


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    own = session.config.stash.get(_OWN_BASETEMP, None)
    if own is None:
        return
    with open("/proc/self/mountinfo") as table:
        mounted = any(line.split()[4].startswith(str(own)) for line in table)
    if exitstatus == 0 and not mounted:
        shutil.rmtree(own, ignore_errors=True)
    else:
        sys.stderr.write(f"pytest's temporary files kept in {own}\n")


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
