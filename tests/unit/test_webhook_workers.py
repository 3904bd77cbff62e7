"""``webhook/workers.py``: how many workers a CPU limit gives (pure, with properties), and the supervisor
with real processes standing in for the webhook: it restarts a worker that dies, stops on a worker's
configuration error, and leaves no worker behind on SIGTERM or SIGKILL. The webhook itself on two
workers runs in tests/e2e/test_webhook_workers.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.e2e.wait import eventually
from tests.procs import running as running_pid
from webhook.workers import cpu_limit, overdue, restart_delay, workers_for


@pytest.mark.parametrize(
    ("cpu_max", "quota", "period", "limit"),
    [
        ("200000 100000\n", None, None, 2.0),
        ("150000 100000", None, None, 1.5),
        ("max 100000\n", None, None, None),
        ("50000", None, None, 0.5),  # no period: the kernel's default
        (None, "-1\n", "100000\n", None),
        (None, "200000\n", "100000\n", 2.0),
        (None, "50000", "100000", 0.5),
        ("garbage", None, None, None),
        (None, "1", "0", None),
        ("", None, None, None),
        (None, None, None, None),
    ],
)
def test_cpu_limit_reads_cgroup_v2_then_v1(
    cpu_max: str | None, quota: str | None, period: str | None, limit: float | None
) -> None:
    assert cpu_limit(cpu_max, quota, period) == limit


@pytest.mark.parametrize(
    ("limit", "cpus", "workers"),
    [(2.0, 2, 2), (2.0, 8, 2), (1.5, 8, 1), (0.1, 8, 1), (None, 2, 2), (None, 1, 1), (16.0, 4, 4)],
)
def test_workers_follow_the_limit_rounded_down_within_the_cpus(
    limit: float | None, cpus: int, workers: int
) -> None:
    assert workers_for(limit, cpus) == workers


@given(
    st.one_of(st.none(), st.floats(min_value=0.001, max_value=512)), st.integers(min_value=1, max_value=512)
)
def test_workers_are_at_least_one_and_never_more_than_the_cpus_or_the_limit(
    limit: float | None, cpus: int
) -> None:
    n = workers_for(limit, cpus)
    assert 1 <= n <= cpus
    if limit is not None and limit >= 1:
        assert n <= limit + 1e-6


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=6))
def test_cpu_max_text_round_trips(quota: int, cpus: int) -> None:
    period = 100_000
    limit = cpu_limit(f"{quota * cpus} {period}\n")
    assert limit is None if quota == 0 else limit == pytest.approx(quota * cpus / period)


def test_restart_delay_grows_and_is_capped() -> None:
    delays = [restart_delay(n) for n in range(1, 12)]
    assert delays == sorted(delays)
    assert delays[0] == pytest.approx(0.1)
    assert max(delays) == 10.0


# --- the supervisor with stand-in workers --------------------------------------------------------
WORKER = """
import os, sys, time
index = int(sys.argv[-1].removeprefix("--worker="))
(__import__("pathlib").Path(sys.argv[1]) / f"{index}-{os.getpid()}").touch()
if os.path.exists(sys.argv[2]) and index == 1:
    sys.exit(2)  # a configuration error, as webhook.main answers a bad profile
time.sleep(600)
"""


def supervisor(tmp_path: Path, count: int = 2) -> subprocess.Popen[bytes]:
    started, bad_config = tmp_path / "started", tmp_path / "bad-config"
    started.mkdir(exist_ok=True)
    code = textwrap.dedent(f"""
        import sys
        from webhook.workers import Supervisor
        command = [sys.executable, "-c", {WORKER!r}, {str(started)!r}, {str(bad_config)!r}]
        sys.exit(Supervisor(command, {count}).run())
    """)
    # TMPDIR: the metrics directory a SIGKILL leaves behind stays in the test's own.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[2], env=env)


def running(tmp_path: Path) -> dict[int, list[int]]:
    """Worker index -> pids started, of those still alive."""
    found: dict[int, list[int]] = {}
    for entry in sorted((tmp_path / "started").iterdir()):
        index, pid = (int(part) for part in entry.name.split("-"))
        if running_pid(pid):
            found.setdefault(index, []).append(pid)
    return found


def all_pids(tmp_path: Path) -> list[int]:
    return [int(entry.name.split("-")[1]) for entry in (tmp_path / "started").iterdir()]


def two_running(tmp_path: Path, without: int | None = None) -> dict[int, list[int]] | None:
    found = running(tmp_path)
    ok = len(found) == 2 and all(len(pids) == 1 for pids in found.values()) and without not in found[0]
    return found if ok else None


def test_a_dead_worker_is_restarted_and_sigterm_stops_them_all(tmp_path: Path) -> None:
    proc = supervisor(tmp_path)
    try:
        first = eventually(lambda: two_running(tmp_path), "two workers", timeout=20)
        assert first is not None
        victim = first[0][0]
        os.kill(victim, signal.SIGKILL)
        again = eventually(lambda: two_running(tmp_path, without=victim), "worker 0 restarted", timeout=20)
        assert again is not None
        assert again[1] == first[1]  # the other one was left alone
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not any(running_pid(pid) for pid in all_pids(tmp_path))
    finally:
        proc.kill()


def test_sigkill_of_the_supervisor_takes_its_workers_with_it(tmp_path: Path) -> None:
    proc = supervisor(tmp_path)
    try:
        eventually(lambda: len(running(tmp_path)) == 2, "two workers", timeout=20)
    finally:
        proc.kill()
        proc.wait()
    eventually(
        lambda: not any(running_pid(pid) for pid in all_pids(tmp_path)), "no orphan worker", timeout=10
    )


def test_a_worker_s_configuration_error_stops_the_supervisor(tmp_path: Path) -> None:
    (tmp_path / "bad-config").touch()
    proc = supervisor(tmp_path)
    try:
        assert proc.wait(30) == 2
    finally:
        proc.kill()
    time.sleep(0.2)
    assert not any(running_pid(pid) for pid in all_pids(tmp_path))


# --- a stalled worker ---------------------------------------------------------------------------
@given(st.floats(0, 1e6), st.floats(0, 100), st.floats(0, 100), st.floats(0.1, 60))
def test_a_worker_is_overdue_only_past_the_stall_after_it_has_beaten(
    started: float, after_start: float, quiet: float, stall: float
) -> None:
    assume(abs(quiet - stall) > 1e-3)  # clear of rounding at the edge
    beat = started + after_start
    got = overdue(started, beat, beat + quiet, stall)
    if quiet > stall:
        assert got is not None
        assert abs(got - quiet) < 1e-3
    else:
        assert got is None
    assert overdue(started, None, started + 1e6, stall) is None  # never beaten: still starting
    assert overdue(started, started - 1, started + 1e6, stall) is None  # the last worker's beat


STALLING = """
import asyncio, os, sys, time
from pathlib import Path
from webhook.workers import heartbeat
index = int(sys.argv[-1].removeprefix("--worker="))
(Path(sys.argv[1]) / f"{index}-{os.getpid()}").touch()
async def main():
    asyncio.get_running_loop().create_task(heartbeat(Path(os.environ["FLUID_WEBHOOK_HEARTBEAT"]), 0.05))
    await asyncio.sleep(0.5)
    if index == 0 and not Path(sys.argv[2]).exists():
        Path(sys.argv[2]).touch()
        time.sleep(600)  # the loop blocked, as by a read of a hung file
    await asyncio.sleep(600)
asyncio.run(main())
"""


def test_a_worker_whose_loop_stalls_is_killed_and_replaced(tmp_path: Path) -> None:
    started, marker = tmp_path / "started", tmp_path / "stalled-once"
    started.mkdir()
    code = textwrap.dedent(f"""
        import sys
        from webhook.workers import Supervisor
        command = [sys.executable, "-c", {STALLING!r}, {str(started)!r}, {str(marker)!r}]
        sys.exit(Supervisor(command, 2, stall=1.0).run())
    """)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[2], env=env)
    try:
        eventually(marker.exists, "worker 0's loop stalled", timeout=20)
        first = running(tmp_path)
        stalled = first[0][0]
        again = eventually(lambda: two_running(tmp_path, without=stalled), "worker 0 replaced", timeout=20)
        assert again is not None
        assert again[1] == first[1]  # the beating one was left alone
        assert not running_pid(stalled)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert not any(running_pid(pid) for pid in all_pids(tmp_path))
