"""Embedded mode: one FUSE process per mount key, a child of the node service, supervised.

- ``start`` launches the FUSE binary (argv list) in a session of its own, so it survives a crash or
  ``kill -9`` of the node service, and returns once the kernel shows the mount.
- A FUSE process that dies without being asked to is restarted on a clean mount point and
  ``on_restart(key)`` runs, so the node service re-binds the targets that pointed into the old mount.
- ``adopt`` takes over a FUSE process a previous node service started (found through the state
  file): only a process that is that FUSE (its recorded start time, ``--mnt-path`` of the key in its
  command line, csi/fuse/processes.py), never whatever now has the recorded pid. It is watched by
  polling, since it is not our child, and signalled only while it is still that process.
- Whether a mount serves is asked with a stat through it, which waits on its FUSE server: in a
  thread of the key's own (csi/keyedthreads.py), so a FUSE that does not answer holds up only its
  own watcher, neither the event loop nor the threads the other keys' watchers use. One that has
  not answered within a second is alive (a dead server's requests fail at once) and is logged.
- ``stop`` asks with SIGTERM (the FUSE process unmounts itself; curvine-fuse takes about 1.2 s and
  exits 0), then insists, and finally detaches a mount that is still there, so neither a process
  nor a mount leaks; the exit code is logged.
- With ``log_dir``, a FUSE's standard output and error go to ``{log_dir}/{key}.log`` (curvine-fuse
  logs to standard output), the previous start's to ``{key}.log.1``; a start that fails says the
  end of what it wrote. Without, they are discarded but for a failed start's error output.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from csi.fuse import mounts, processes
from csi.fuse.fusebinary import FLAG, fuse_binary_problem
from csi.fuse.fuserunner import FuseHandle
from csi.keyedthreads import DEFAULT_DEADLINE, Hung, KeyedThreads
from csi.model.errors import FuseUnavailable
from csi.model.fusepodparams import PodSettings
from kubectl_fluid import spans

# The name it logged under before csi/ had sub-packages: log filters and tests match it.
log = logging.getLogger("csi.fusemanager")

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0
# A FUSE whose server died answers ENOTCONN at once, without asking it: one that has not answered a
# stat in this long is alive, however slow.
ALIVE_WITHIN = 1.0
# While a FUSE starts, how often its exit is looked for between changes of the mount table.
MOUNT_LOOK = 0.05


class FuseError(Exception):
    pass


def is_fuse_mount(path: str) -> bool:
    return any(m.fs_type.startswith("fuse") for m in mounts.mounted_at(path))


def pid_alive(pid: int) -> bool:
    return processes.running(pid)


async def serving(threads: KeyedThreads, key: str, mnt_path: str) -> bool:
    """Whether a FUSE mount is at ``mnt_path`` and does not answer ENOTCONN (its server died). One
    that has not answered after ``ALIVE_WITHIN`` counts as serving: a dead server's requests fail at
    once, so this one lives and waits on something else, a cache master say (the stat goes on in
    the key's thread; what the node service then does through the mount has its own deadline)."""
    if not is_fuse_mount(mnt_path):
        return False
    what = f"a stat of {mnt_path}"
    try:
        return not await threads.within(key, what, mounts.is_broken, mnt_path, wait=ALIVE_WITHIN)
    except Hung as hung:
        log.warning("FUSE mount %s: %s; taken as alive", mnt_path, hung, extra={"mount_key": key})
        return True


async def broken(threads: KeyedThreads, key: str, mnt_path: str) -> bool:
    """Whether the FUSE mount at ``mnt_path`` answers ENOTCONN, awaited however long it takes: a FUSE
    that does not answer ends by answering or by dying (the kernel then answers ENOTCONN at once).
    Logged once the deadline has passed. A cancelled caller does not wait (the stat goes on alone)."""
    future = threads.submit(key, f"a stat of {mnt_path}", mounts.is_broken, mnt_path)
    done, _ = await asyncio.wait([future], timeout=threads.deadline)
    if not done:
        log.warning(
            "FUSE mount %s has not answered for %.0f s; still waiting", mnt_path, threads.deadline,
            extra={"mount_key": key},
        )  # fmt: skip
    return await future


@dataclass
class FuseProcess:
    key: str
    argv: list[str]
    mnt_path: str
    pid: int
    # The process's start time: with the pid, what tells it from a later process with its pid.
    start_time: int | None = None
    child: subprocess.Popen[bytes] | None = None
    stopping: bool = False
    restarts: int = 0
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)


class FuseManager:
    def __init__(
        self,
        on_restart: Callable[[str], None] | None = None,
        poll: float = 0.5,
        log_dir: str | None = None,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        self.processes: dict[str, FuseProcess] = {}
        self.on_restart = on_restart
        self.poll = poll  # how soon a dead FUSE is noticed
        self.log_dir = log_dir
        self.threads = KeyedThreads(deadline, "fluid-csi-fuse")
        self.starts = 0  # FUSE launches, restarts included; tests and metrics read it

    # ------------------------------------------------------------------ FuseRunner

    def running(self, key: str) -> bool:
        return key in self.processes

    def handle(self, key: str) -> FuseHandle | None:
        proc = self.processes.get(key)
        return None if proc is None else FuseHandle(pid=proc.pid, start_time=proc.start_time)

    async def launch(
        self,
        key: str,
        argv: list[str],
        mnt_path: str,
        settings: PodSettings = (),
        spawned: Callable[[FuseHandle], None] | None = None,
    ) -> FuseHandle:
        await self.start(key, argv, mnt_path, spawned)
        handle = self.handle(key)
        assert handle is not None  # started just now
        return handle

    async def takeover(
        self, key: str, argv: list[str], mnt_path: str, handle: FuseHandle, settings: PodSettings = ()
    ) -> bool:
        if not handle.pid:
            return False
        return await self.adopt(key, argv, mnt_path, handle.pid, start_time=handle.start_time)

    # ------------------------------------------------------------------ processes

    async def start(
        self, key: str, argv: list[str], mnt_path: str, spawned: Callable[[FuseHandle], None] | None = None
    ) -> int:
        """Launch FUSE for ``key`` and wait for its mount; returns the pid. ``spawned`` is told the
        process's handle before its mount."""
        if key in self.processes:
            return self.processes[key].pid
        proc = FuseProcess(key, argv, mnt_path, pid=0)
        try:
            await self._launch(proc, spawned)
        except BaseException:
            self.threads.forget(key)  # the thread its mount was awaited in
            raise
        self.processes[key] = proc
        proc.watcher = asyncio.create_task(self._watch(proc))
        return proc.pid

    async def adopt(
        self, key: str, argv: list[str], mnt_path: str, pid: int, *, start_time: int | None = None
    ) -> bool:
        """Take over a live FUSE process from an earlier node service; False if it is gone, is not
        this key's FUSE (a reused pid: another start time, no ``--mnt-path`` of ``mnt_path``) or its
        mount is not serving (the caller then starts a fresh one). ``start_time`` None (a state file
        from before start times were recorded) leaves the command line to tell."""
        if not processes.serves(pid, start_time, mnt_path):
            if processes.running(pid):
                log.warning("recorded FUSE pid %d is another process now", pid, extra={"mount_key": key})
            return False
        started = processes.process_start_time(pid) if await serving(self.threads, key, mnt_path) else None
        if started is None or (start_time is not None and started != start_time):
            self.threads.forget(key)
            return False  # not serving, or it ended meanwhile
        proc = FuseProcess(key, argv, mnt_path, pid=pid, start_time=started)
        self.processes[key] = proc
        proc.watcher = asyncio.create_task(self._watch(proc))
        log.info("adopted FUSE", extra={"mount_key": key, "pid": pid})
        return True

    async def stop(self, key: str) -> None:
        """Stop ``key``'s FUSE for good (its log files go too)."""
        self._forget_logs(key)
        proc = self.processes.pop(key, None)
        if proc is None:
            return
        proc.stopping = True
        if proc.watcher is not None:
            proc.watcher.cancel()
            # Whatever ended the watcher, stopping must still end the process and its mount.
            with contextlib.suppress(BaseException):
                await proc.watcher
        code = await _terminate(proc)
        if mounts.mounted_at(proc.mnt_path):
            # SIGKILLed, or unmounting failed: detach it so nothing of it stays in the tree.
            with contextlib.suppress(mounts.MountError):
                mounts.unmount(proc.mnt_path, lazy=True)
        self.threads.forget(key)
        log.info("stopped FUSE (exit %s)", "unknown" if code is None else code, extra={"mount_key": key})

    def _forget_logs(self, key: str) -> None:
        for path in self._log_paths(key):
            path.unlink(missing_ok=True)

    def _log_paths(self, key: str) -> list[Path]:
        if self.log_dir is None:
            return []
        current = Path(self.log_dir) / f"{key}.log"
        return [current, current.with_name(f"{key}.log.1")]

    @contextlib.contextmanager
    def _output(self, key: str) -> Iterator[tuple[IO[bytes], IO[bytes] | int]]:
        """Where a starting FUSE writes: (its error output, its standard output)."""
        paths = self._log_paths(key)
        if not paths:
            with tempfile.TemporaryFile() as errlog:
                yield errlog, subprocess.DEVNULL
            return
        current, previous = paths
        current.parent.mkdir(parents=True, exist_ok=True)
        if current.exists():
            current.replace(previous)
        with open(current, "a+b") as out:  # O_APPEND: reading back never moves where FUSE writes
            yield out, out

    async def close(self) -> None:
        """Stop watching without stopping FUSE (node service shutdown: mounts outlive it)."""
        for proc in self.processes.values():
            if proc.watcher is not None:
                proc.watcher.cancel()
        await asyncio.gather(
            *(p.watcher for p in self.processes.values() if p.watcher), return_exceptions=True
        )

    async def _launch(self, proc: FuseProcess, spawned: Callable[[FuseHandle], None] | None = None) -> None:
        if mounts.mounted_at(proc.mnt_path):
            # The remains of a dead FUSE (ENOTCONN): a new one cannot mount over them, and even
            # creating the directory fails until they are detached.
            with contextlib.suppress(mounts.MountError):
                mounts.unmount(proc.mnt_path, lazy=True)
        Path(proc.mnt_path).mkdir(parents=True, exist_ok=True)
        # Popen, not an asyncio transport: closing the event loop kills a transport's process,
        # and FUSE must outlive the node service.
        problem = fuse_binary_problem(proc.argv[0])
        if problem is not None:
            raise FuseUnavailable(problem)
        with self._output(proc.key) as (errlog, stdout), mounts.TableChanges() as changes:
            try:
                with spans.step("FUSE spawned"):
                    child = subprocess.Popen(
                        proc.argv,
                        stdin=subprocess.DEVNULL,
                        stdout=stdout,
                        stderr=errlog,
                        start_new_session=True,
                    )
            except OSError as cannot:  # changed since the check, or an interpreter line that fails
                raise FuseUnavailable(f"{FLAG} {proc.argv[0]}: {cannot.strerror}") from cannot
            proc.child, proc.pid = child, child.pid
            # Read while the child cannot have been reaped (we have not waited): it is this process's.
            proc.start_time = processes.process_start_time(child.pid)
            self.starts += 1
            if spawned is not None:
                spawned(FuseHandle(pid=proc.pid, start_time=proc.start_time))
            try:
                with spans.step("FUSE mount awaited"):
                    await self._mounted(proc, child, changes)
            except BaseException as failure:
                # Failed, timed out or cancelled (the call went, or validate-config refused it): a
                # FUSE nothing tracks must not mount later, nor stay mounted.
                if child.poll() is None:
                    child.kill()
                    child.wait()
                if mounts.mounted_at(proc.mnt_path):
                    with contextlib.suppress(mounts.MountError):
                        mounts.unmount(proc.mnt_path, lazy=True)
                if isinstance(failure, FuseError):
                    errlog.seek(0)
                    err = errlog.read()[-500:].decode(errors="replace").strip()
                    raise FuseError(f"{failure} (exit {child.returncode}): {err}") from None
                raise
        log.info("started FUSE", extra={"mount_key": proc.key, "pid": proc.pid, "mnt_path": proc.mnt_path})

    async def _mounted(
        self, proc: FuseProcess, child: subprocess.Popen[bytes], changes: mounts.TableChanges
    ) -> None:
        """Return once the kernel shows ``proc``'s mount: looked for at each change of the mount
        table (woken at once, not on a timer's next tick), and at least every ``MOUNT_LOOK``
        seconds to notice the child's exit; FuseError when it exits or START_TIMEOUT passes."""
        deadline = time.monotonic() + START_TIMEOUT
        while not is_fuse_mount(proc.mnt_path):
            if child.poll() is not None or time.monotonic() > deadline:
                raise FuseError(f"FUSE for mount key {proc.key} did not mount {proc.mnt_path}")
            # In the key's own thread: the wait blocks, and no other key's wait queues behind it.
            await self.threads.run(proc.key, "waiting for its mount", changes.wait, MOUNT_LOOK)

    async def _watch(self, proc: FuseProcess) -> None:
        while True:
            while _alive(proc) and not await broken(self.threads, proc.key, proc.mnt_path):
                await asyncio.sleep(self.poll)
            if proc.stopping:
                return
            proc.restarts += 1
            log.warning("FUSE died; remounting", extra={"mount_key": proc.key, "restarts": proc.restarts})
            if proc.child is None:
                _signal(proc, signal.SIGKILL)  # an adopted FUSE that hangs on a broken mount
            try:
                await self._launch(proc)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                # The watcher must outlive any failure, or the mount stays broken for good.
                log.error("remounting mount key %s failed: %s; retrying", proc.key, e)
                await asyncio.sleep(min(30.0, 0.5 * 2**proc.restarts))
                continue
            _notify(self.on_restart, proc.key)


def _notify(on_restart: Callable[[str], None] | None, key: str) -> None:
    """Tell the node service a FUSE was restarted; its failure is logged, never the watcher's end."""
    if on_restart is None:
        return
    try:
        on_restart(key)
    except Exception:
        log.exception("re-binding after a FUSE restart of mount key %s failed", key)


def _alive(proc: FuseProcess) -> bool:
    if proc.child is not None:
        return proc.child.poll() is None
    return processes.running(proc.pid, proc.start_time)


def _signal(proc: FuseProcess, sig: int) -> None:
    """Signal ``proc``: our child through its Popen (which never signals a reaped pid), an adopted
    process only while it is still the process adopted."""
    if proc.child is not None:
        with contextlib.suppress(ProcessLookupError):
            proc.child.send_signal(sig)
    elif proc.start_time is not None:
        processes.signal_process(proc.pid, proc.start_time, sig)


async def _terminate(proc: FuseProcess) -> int | None:
    """Stop ``proc``; its exit code when it is our child (an adopted process's is not ours to see)."""
    _signal(proc, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while _alive(proc) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    if _alive(proc):
        _signal(proc, signal.SIGKILL)
        while _alive(proc):
            await asyncio.sleep(0.02)
    return proc.child.returncode if proc.child is not None else None
