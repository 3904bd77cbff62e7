"""Children written concurrently (``together``): every write is waited for even when one fails, and
the failure that is raised is the one that gets the key retried."""

from __future__ import annotations

import asyncio

import pytest

from controller.reconciler import Problem, together
from kubectl_fluid.kube.http import ApiError


def test_writes_run_at_once_not_one_after_another() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        results = await together(*(asyncio.sleep(0.2, result=i) for i in range(5)))
        assert results == [0, 1, 2, 3, 4]
        return loop.time() - started

    assert asyncio.run(main()) < 0.6


def test_every_write_finishes_before_a_failure_is_raised() -> None:
    finished: list[str] = []

    async def slow() -> None:
        await asyncio.sleep(0.1)
        finished.append("slow")

    async def refused() -> None:
        raise Problem("InvalidConfigMap", "refused")

    async def main() -> None:
        with pytest.raises(Problem):
            await together(refused(), slow())

    asyncio.run(main())
    assert finished == ["slow"]


def test_an_api_error_is_raised_before_a_problem_so_the_key_is_retried() -> None:
    async def problem() -> None:
        raise Problem("NameConflict", "held by another")

    async def outage() -> None:
        raise ApiError(503, "ServiceUnavailable", "etcd is down")

    async def main() -> None:
        with pytest.raises(ApiError):
            await together(problem(), outage())
        with pytest.raises(Problem, match="first"):
            await together(asyncio.sleep(0), _raise(Problem("A", "first")), _raise(Problem("B", "second")))

    asyncio.run(main())


async def _raise(e: Exception) -> None:
    raise e
