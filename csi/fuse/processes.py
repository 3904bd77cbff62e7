"""Knowing a process again by more than its pid.

A pid recorded in the state file names a process only until that process ends: after a node restart
(or just a long time) the number may belong to anything. A FUSE process is therefore recorded with
its start time (``/proc/PID/stat`` field 22, clock ticks after boot, which a reused pid does not
repeat) and recognised by it and by its command line carrying ``--mnt-path`` of its mount key; a
signal goes through a pidfd opened *before* the check, so the process checked is the one signalled.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
from pathlib import Path

from kubectl_fluid.api import curvinefuse

MNT_PATH_FLAG = curvinefuse.flag(curvinefuse.FLAG_MNT_PATH)


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (which may hold blanks and parentheses)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def process_start_time(pid: int) -> int | None:
    """When process ``pid`` started (field 22 of its stat: the 20th after the name), None if none."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def running(pid: int, start_time: int | None = None) -> bool:
    """Process ``pid`` exists, is no zombie (it serves nothing any more) and, when ``start_time`` is
    given, is the process that started then."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] == "Z":
        return False
    return start_time is None or int(fields[19]) == start_time


def command_line(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [os.fsdecode(arg) for arg in raw.split(b"\0")[:-1]]


def serves(pid: int, start_time: int | None, mnt_path: str) -> bool:
    """Process ``pid`` (of ``start_time`` when known) is a FUSE started for ``mnt_path``."""
    if not running(pid, start_time):
        return False
    argv = command_line(pid)
    return any(pair == (MNT_PATH_FLAG, mnt_path) for pair in itertools.pairwise(argv)) or (
        f"{MNT_PATH_FLAG}={mnt_path}" in argv
    )


def signal_process(pid: int, start_time: int, sig: int) -> bool:
    """Send ``sig`` to ``pid`` if it is still the process that started at ``start_time``; returns
    whether it was sent. Never signals a process that merely reused the pid."""
    pidfd: int | None
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except OSError as err:
        if err.errno != errno.ENOSYS:
            raise
        pidfd = None  # kernels before 5.3: the check and the kill are a moment apart
    try:
        if process_start_time(pid) != start_time:
            return False
        if pidfd is None:
            os.kill(pid, sig)
        else:
            signal.pidfd_send_signal(pidfd, sig)
        return True
    except ProcessLookupError:
        return False
    finally:
        if pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(pidfd)
