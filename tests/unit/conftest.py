"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.fake_apiserver import Server, running_server
from tests.unit.go_oracle import GoOracle, go_oracle


@pytest.fixture(scope="session")
def oracle() -> GoOracle:
    """apimachinery and encoding/json, asked through hack/go-oracle (built on first use)."""
    return go_oracle()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A local HTTPS stand-in for the API server (tests/unit/fake_apiserver.py)."""
    with running_server(tmp_path) as state:
        yield state
