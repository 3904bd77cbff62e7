"""Fixtures of the unit tests."""

from __future__ import annotations

import pytest

from tests.unit.go_oracle import GoOracle, go_oracle


@pytest.fixture(scope="session")
def oracle() -> GoOracle:
    """apimachinery and encoding/json, asked through hack/go-oracle (built on first use)."""
    return go_oracle()
