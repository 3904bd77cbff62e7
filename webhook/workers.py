"""``fluid-webhook --workers N``: N processes serve one port, so admissions use every CPU the pod has.

One Python process tops out at one core (its event loop), and the Go webhook it is measured against
uses all of them (issue 33). So a small supervisor starts N workers, each a whole webhook of its own
(its own event loop, watch caches, loop-lag watch and certificate reloader), and the kernel spreads
the connections over them: each worker binds the port with ``SO_REUSEPORT`` (``listen``).

- N defaults to the CPU limit of the container (``workers_for``: cgroup v2 ``cpu.max``, else v1
  ``cpu.cfs_quota_us``/``cpu.cfs_period_us``, rounded down as Go's automaxprocs does), else to the
  CPUs the process may run on; at least 1. ``--workers 1`` is the single process of before: no
  supervisor at all.
- The supervisor imports none of the server (it stays ~13 MB), talks to no API server, and does three
  things: restart a worker that exits (with a backoff, ``restart_delay``), stop them all on SIGTERM or
  SIGINT (SIGKILL after ``GRACE`` seconds), and exit with a worker's exit code 2 (a configuration
  error, e.g. a bad plugin profile: restarting cannot fix it).
- No orphans: each worker asks the kernel for SIGKILL when the supervisor dies (``PR_SET_PDEATHSIG``),
  so even a supervisor killed by SIGKILL takes its workers with it.
- Under ``--bootstrap-certs`` only worker 0 writes the Secret, the files and the ``caBundle``; the
  others wait for the files (``wait_for_files``) and pick up rotations through their own reloader.
- A stalled worker is replaced: each worker's event loop touches a heartbeat file of its own every
  ``BEAT`` seconds (``heartbeat``), and the supervisor kills a worker whose loop has not run for
  ``STALL`` seconds (``overdue``), so the normal restart replaces it. kubelet's liveness probe reaches
  one worker of N per connection, so a stalled worker among healthy ones could go unseen by it for
  long while it refuses its share of the pods.
- Metrics: the workers share one directory of prometheus_client's multiprocess files, so
  ``/metrics`` on any worker answers the sum over all of them (``webhook/metrics.py: exposition``).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kubectl_fluid.api import names

log = logging.getLogger("webhook.workers")

CGROUP_V2_CPU_MAX: Final = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1_CPU_DIRS: Final = (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/cpu,cpuacct"))
# A worker that exits with this code cannot be helped by a restart (webhook.main: the profile).
CONFIG_ERROR: Final = 2
# Seconds the workers get to finish after SIGTERM: inside the pod's default 30 s grace.
GRACE: Final = 20.0
# A worker that lived this long had its restarts forgotten: the next failure starts the backoff anew.
STABLE_SECONDS: Final = 30.0
_POLL: Final = 0.2
# A worker's loop beats this often; one that has not beaten for STALL seconds is killed and replaced.
# STALL is well above loopwatch.LIMIT (when /healthz starts to fail) and below kubelet's three probes.
BEAT: Final = 0.5
STALL: Final = 10.0
_PR_SET_PDEATHSIG: Final = 1


# --- how many (pure) ------------------------------------------------------------------------------
def cpu_limit(cpu_max: str | None, quota: str | None = None, period: str | None = None) -> float | None:
    """The CPUs a cgroup allows, from cgroup v2's ``cpu.max`` ("200000 100000", "max 100000") or else
    v1's ``cpu.cfs_quota_us`` (-1: none) over ``cpu.cfs_period_us``; None for no limit or unreadable
    text."""
    with contextlib.suppress(ValueError, ZeroDivisionError, IndexError):
        if cpu_max is not None and cpu_max.strip():
            fields = cpu_max.split()
            if fields[0] == "max":
                return None
            limit = int(fields[0]) / int(fields[1] if len(fields) > 1 else "100000")
            return limit if limit > 0 else None
        if quota is not None and period is not None:
            limit = int(quota) / int(period)
            return limit if limit > 0 else None
    return None


def workers_for(limit: float | None, cpus: int) -> int:
    """Workers for a CPU limit and the CPUs the process may run on: the limit rounded down (a worker
    on a fraction of a CPU only queues behind the others), never more than the CPUs, at least 1."""
    n = cpus if limit is None else min(cpus, math.floor(limit + 1e-9))
    return max(1, n)


def restart_delay(failures: int) -> float:
    """Seconds before restarting a worker that failed ``failures`` times in a row (1, 2, ...)."""
    return float(min(0.1 * 2 ** max(failures - 1, 0), 10.0))


# --- how many (the files) -------------------------------------------------------------------------
def overdue(started: float, beat: float | None, now: float, stall: float = STALL) -> float | None:
    """Seconds a worker's loop has not run, when that is over ``stall``; else None. ``started``: when
    the worker was started; ``beat``: its heartbeat file's mtime (None: none yet), all wall-clock
    seconds. A worker that has not beaten since it started is still starting: not judged."""
    if beat is None or beat < started:
        return None
    quiet = now - beat
    return quiet if quiet > stall else None


async def heartbeat(path: Path, every: float = BEAT) -> None:
    """Touch ``path`` from the event loop every ``every`` seconds, for the supervisor (``overdue``)."""
    import asyncio

    while True:
        with contextlib.suppress(OSError):
            path.touch()
        await asyncio.sleep(every)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def default_workers() -> int:
    """``workers_for`` this container's CPU limit and this process's CPUs."""
    limit = cpu_limit(_read(CGROUP_V2_CPU_MAX))
    if limit is None:
        for directory in CGROUP_V1_CPU_DIRS:
            quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
            limit = cpu_limit(None, quota, period)
            if limit is not None:
                break
    return workers_for(limit, len(os.sched_getaffinity(0)))


# --- a worker's side ------------------------------------------------------------------------------
def listen(host: str, port: int, *, shared: bool) -> socket.socket:
    """The listening socket of one worker; ``shared``: with ``SO_REUSEPORT``, so the other workers
    bind the same port and the kernel spreads new connections over all of them."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


async def wait_for_files(paths: list[Path], timeout: float = 120.0) -> None:
    """Until every one of ``paths`` exists (worker 0 writes the certificate under --bootstrap-certs);
    TimeoutError after ``timeout`` seconds, and the supervisor restarts the worker."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {', '.join(str(p) for p in paths)} after {timeout:g}s")
        await asyncio.sleep(0.2)


# --- the supervisor -------------------------------------------------------------------------------
def _die_with_parent(parent: int) -> Callable[[], None]:
    """What runs in a new worker before it execs: SIGKILL when the supervisor dies, and no start at all
    when it already has (the kernel's promise only covers a parent alive at the prctl)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


@dataclass
class _Slot:
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    started_wall: float = 0.0
    failures: int = 0
    restart_at: float = 0.0
    beats: Path | None = None  # its heartbeat file


@dataclass
class Supervisor:
    """Runs ``count`` copies of ``command`` + ``--worker=I``; ``run()`` returns the exit code."""

    command: list[str]
    count: int
    stall: float = STALL
    slots: list[_Slot] = field(default_factory=list)
    stopping: bool = False

    def run(self) -> int:
        metrics_dir = tempfile.mkdtemp(prefix="fluid-webhook-metrics-")
        env = {**os.environ, names.PROMETHEUS_MULTIPROC_DIR_ENV: metrics_dir}
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop)
        self.slots = [_Slot(beats=Path(metrics_dir) / f"heartbeat-{i}") for i in range(self.count)]
        log.info("starting workers", extra={"workers": self.count})
        code = 0
        try:
            while not self.stopping:
                code = self._tend(env)
                if code:
                    break
                time.sleep(_POLL)
        finally:
            self._stop_all()
            shutil.rmtree(metrics_dir, ignore_errors=True)
        log.info("stopped")
        return code

    def _stop(self, signum: int, _: object) -> None:
        self.stopping = True

    def _tend(self, env: dict[str, str]) -> int:
        """Start what is due, note what exited; a worker's configuration error ends the supervisor."""
        now = time.monotonic()
        for index, slot in enumerate(self.slots):
            if slot.proc is None:
                if now >= slot.restart_at:
                    self._start(index, slot, env)
                continue
            code = slot.proc.poll()
            if code is None:
                self._judge(index, slot)
                continue
            lived = now - slot.started
            slot.failures = 1 if lived >= STABLE_SECONDS else slot.failures + 1
            slot.proc, slot.restart_at = None, now + restart_delay(slot.failures)
            log.warning(
                "worker exited; restarting it",
                extra={"worker": index, "code": code, "lived": round(lived, 1), "failures": slot.failures},
            )
            if code == CONFIG_ERROR:
                log.error("worker %d cannot start with this configuration; stopping", index)
                return CONFIG_ERROR
        return 0

    def _judge(self, index: int, slot: _Slot) -> None:
        """Kill a worker whose event loop stopped beating; it is restarted as any that exits."""
        assert slot.proc is not None
        assert slot.beats is not None
        try:
            beat: float | None = slot.beats.stat().st_mtime
        except OSError:
            beat = None
        quiet = overdue(slot.started_wall, beat, time.time(), self.stall)
        if quiet is not None:
            log.warning(
                "worker's event loop has not run for %.1fs; replacing it",
                quiet,
                extra={"worker": index, "pid": slot.proc.pid},
            )
            slot.proc.kill()
            slot.proc.wait()

    def _start(self, index: int, slot: _Slot, env: dict[str, str]) -> None:
        # preexec_fn is unsafe only with threads, and the supervisor starts none.
        command, preexec = [*self.command, f"--worker={index}"], _die_with_parent(os.getpid())
        assert slot.beats is not None
        with contextlib.suppress(FileNotFoundError):
            slot.beats.unlink()  # the last worker's
        env = {**env, names.WEBHOOK_HEARTBEAT_ENV: str(slot.beats)}
        slot.started_wall = time.time()
        slot.proc = subprocess.Popen(command, env=env, preexec_fn=preexec)  # noqa: PLW1509
        slot.started = time.monotonic()
        log.info("worker started", extra={"worker": index, "pid": slot.proc.pid})

    def _stop_all(self) -> None:
        running = [slot.proc for slot in self.slots if slot.proc is not None and slot.proc.poll() is None]
        for proc in running:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        for proc in running:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def supervise(argv: list[str], count: int) -> int:
    """Run ``count`` workers of ``fluid-webhook`` with ``argv`` (its own arguments)."""
    return Supervisor([sys.executable, "-m", "webhook.main", *argv, "--workers=1"], count).run()
