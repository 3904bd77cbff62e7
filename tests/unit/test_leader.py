"""Leader election's behaviour when the API server goes away: a candidate waits it out, and a leader
that loses the Lease stops acting and competes again in the same process (no exit, no crash loop).
The Lease round trips are replaced here; tests/e2e/test_faults.py restarts a real API server."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from controller import main as controller_main
from controller.leader import LeaderElector, LeaseConfig, LostLeadership


def elector(answers: list[Any]) -> LeaderElector:
    e = LeaderElector(api=None, config=LeaseConfig("ns", "lease", "me", 4.0, 3.0, 0.01))  # type: ignore[arg-type]

    async def attempt() -> bool:
        answer = answers.pop(0) if answers else True
        if isinstance(answer, BaseException):
            raise answer
        return bool(answer)

    e._try_acquire_or_renew = attempt  # type: ignore[method-assign]
    return e


def test_a_candidate_retries_through_an_unreachable_api_server() -> None:
    down = httpx.ConnectError("All connection attempts failed")
    e = elector([down, down, False, True])
    led: list[bool] = []

    async def lead() -> None:
        led.append(e.is_leader)

    asyncio.run(asyncio.wait_for(e.run(lead), 5))
    assert led == [True]


def test_losing_the_lease_makes_the_replica_a_candidate_again() -> None:
    runs: list[int] = []

    class Elector:
        async def run(self, lead: Any) -> None:
            runs.append(1)
            if len(runs) == 1:
                raise LostLeadership("could not renew lease ns/lease for 3s")

    asyncio.run(asyncio.wait_for(controller_main.compete(Elector(), lambda: asyncio.sleep(0)), 5))  # type: ignore[arg-type]
    assert len(runs) == 2


def test_a_leader_that_cannot_renew_stops_its_work() -> None:
    down = httpx.ConnectError("All connection attempts failed")
    e = elector([True, *[down] * 1000])
    cancelled: list[bool] = []

    async def lead() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(LostLeadership):
        asyncio.run(asyncio.wait_for(e.run(lead), 10))
    assert cancelled == [True]
    assert e.is_leader is False
