"""What ``kubectl fluid load --wait`` shows and when it stops (kubectl_fluid/cli/loadprogress.py)."""

from __future__ import annotations

from typing import Any

from kubectl_fluid.cli.loadprogress import outcome, progress


def dataload(phase: str | None = None, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "ds1-load-x"}, "status": {"phase": phase, **status} if phase else {}}


def dataset(percentage: str | None) -> dict[str, Any]:
    return {"status": {"cacheStates": {"cachedPercentage": percentage}} if percentage else {}}


def test_the_line_says_phase_elapsed_and_cached_percentage_when_the_cache_reports_one() -> None:
    assert progress(dataload(), None, 0.4) == "ds1-load-x  Created  0s"
    assert progress(dataload("Pending"), dataset(None), 12) == "ds1-load-x  Pending  12s"
    assert (
        progress(dataload("Executing"), dataset("40.0%"), 75) == "ds1-load-x  Executing  1m15s  cached 40.0%"
    )


def test_it_runs_until_complete_or_failed() -> None:
    assert outcome(dataload("Executing"), None) is None
    done = outcome(dataload("Complete", duration="9s"), dataset("100.0%"))
    assert done is not None
    assert done.ok
    assert done.text == "dataload.data.fluid.io/ds1-load-x complete in 9s, dataset cached 100.0%"
    failed = outcome(
        dataload(
            "Failed",
            conditions=[
                {"type": "Failed", "reason": "DataOperationNotSupport", "message": "no DataLoad spec"}
            ],
        ),
        None,
    )
    assert failed is not None
    assert not failed.ok
    assert "failed: DataOperationNotSupport: no DataLoad spec" in failed.text
