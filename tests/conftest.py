"""Shared pytest set-up: tests under tests/e2e are marked ``e2e`` by location, so a test cannot land
there and silently escape ``-m e2e`` (or be run without a cluster by ``-m 'not e2e'``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# hack/ holds the local-cluster driver; the e2e fixture and its own tests import it.
sys.path.insert(0, str(REPO / "hack"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    e2e_dir = REPO / "tests" / "e2e"
    for item in items:
        if e2e_dir in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
