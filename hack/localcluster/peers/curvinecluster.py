"""A single-node real Curvine (master + worker) for the test bed: ``make up`` (localcluster/product.py),
the e2e tests of the FUSE path and ``make bench`` run it on free loopback ports.

Its configuration is derived from the test peer's example (curvinebins.py caches it beside the
binaries), which carries the three settings this kind of machine needs: ``[fuse] enable_splice =
false`` (no CAP_SYS_RESOURCE, pipes capped at 1 MiB: with splice, curvine-fuse mounts and dies),
``[journal] raft_tick_interval_ms = 100`` (a single master otherwise takes ~14 s to elect itself)
and ``[master] heartbeat_interval = "500ms"`` (writes fail with EIO, "No workers available", until
the worker's first heartbeat). Ports, directories and hostnames are replaced; ``format_master`` and
``format_worker`` are off, so a restarted master replays its journal (its directories start empty).
Measured here: what was written 0-8 s before the master's SIGTERM is gone after its restart (even
the directories: a FUSE serving one answers ENOENT), what was written 30 s before is kept.

Ready means written to: a probe curvine-fuse mounts the cluster's root and writes, reads back and
removes a file, retrying while the worker is not registered yet; an open port is not enough.

``node_settings`` is what every node's FUSE needs from it (``--fuse-config`` of the CSI driver):
its ``[fuse]`` table and the client's hostname.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen
from typing import IO, Any

import tomli_w

from localcluster.peers import curvinebins

LOOPBACK = "127.0.0.1"
PORTS = ("master-rpc", "master-web", "journal", "worker-rpc", "worker-web", "fuse-web")
CONFIG = "cluster.toml"
NODE_SETTINGS = "node-fuse.toml"
PROBE_FILE = ".testbed-probe"


class CurvineError(Exception):
    """Curvine did not come up; the message names the log to read."""


def free_ports(count: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind((LOOPBACK, 0))
        return [s.getsockname()[1] for s in socks]


def cluster_config(example: dict[str, Any], root: Path, ports: dict[str, int]) -> dict[str, Any]:
    """The example's configuration on ``ports``, with its state under ``root`` (pure)."""
    config = copy.deepcopy(example)
    config["format_master"] = config["format_worker"] = False
    master = config.setdefault("master", {})
    master.update(hostname=LOOPBACK, rpc_port=ports["master-rpc"], web_port=ports["master-web"])
    master["meta_dir"] = str(root / "meta")
    journal = config.setdefault("journal", {})
    journal.update(hostname=LOOPBACK, rpc_port=ports["journal"], journal_dir=str(root / "journal"))
    journal["journal_addrs"] = [{"id": 1, "hostname": LOOPBACK, "port": ports["journal"]}]
    worker = config.setdefault("worker", {})
    worker.update(hostname=LOOPBACK, rpc_port=ports["worker-rpc"], web_port=ports["worker-web"])
    worker["data_dir"] = [f"[DISK]{root / 'data'}"]
    client = config.setdefault("client", {})
    client.update(hostname=LOOPBACK, master_addrs=[{"hostname": LOOPBACK, "port": ports["master-rpc"]}])
    config.setdefault("fuse", {})["web_port"] = ports["fuse-web"]
    return config


def node_settings(config: dict[str, Any]) -> dict[str, Any]:
    """What a node's curvine-fuse needs of this cluster's configuration: its [fuse] table and the
    client's hostname (the masters come from each volume)."""
    return {
        "fuse": copy.deepcopy(config.get("fuse", {})),
        "client": {"hostname": config["client"]["hostname"]},
    }


@dataclass
class Layout:
    """Where one test bed's Curvine keeps everything (``root``), and its binaries."""

    root: Path
    bins: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def node_settings(self) -> Path:
        return self.root / NODE_SETTINGS

    @property
    def fuse(self) -> Path:
        return self.bins / curvinebins.FUSE

    def server_argv(self, service: str) -> list[str]:
        return [str(self.bins / curvinebins.SERVER), "--service", service, "--conf", str(self.config)]

    def master_addrs(self) -> str:
        config = tomllib.loads(self.config.read_text())
        return f"{LOOPBACK}:{config['master']['rpc_port']}"

    def write(self, ports: dict[str, int] | None = None) -> dict[str, Any]:
        """Write the cluster's and the nodes' configuration files (fresh state directories)."""
        example = tomllib.loads((self.bins / curvinebins.EXAMPLE).read_text())
        config = cluster_config(
            example, self.root, ports or dict(zip(PORTS, free_ports(len(PORTS)), strict=True))
        )
        for directory in ("meta", "journal", "data"):
            (self.root / directory).mkdir(parents=True, exist_ok=True)
        self.config.write_text(tomli_w.dumps(config))
        self.node_settings.write_text(tomli_w.dumps(node_settings(config)))
        return config


def wait_rpc(port: int, alive: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        if not alive():
            raise CurvineError(f"{what} exited before listening on {port}")
        if time.monotonic() > deadline:
            raise CurvineError(f"{what} did not listen on {port} within {timeout:.0f}s")
        time.sleep(0.05)


@contextlib.contextmanager
def mounted(
    layout: Layout, fs_path: str, mnt: Path, master_addrs: str | None = None
) -> Iterator[Popen[bytes]]:
    """A curvine-fuse of its own (no CSI driver involved) serving ``fs_path`` of the cluster at
    ``mnt``, with the nodes' settings, until the block ends (SIGTERM; a stale mount is detached).
    Yields the process once the kernel shows the mount."""
    from csi.fuse.fuseconfig import fuse_config  # the venv's: hack's standard-library users never get here
    from csi.model.params import FuseParams

    mnt.mkdir(parents=True, exist_ok=True)
    settings = tomllib.loads(layout.node_settings.read_text())
    conf = mnt.parent / f"{mnt.name}.toml"
    masters = master_addrs or layout.master_addrs()
    conf.write_text(fuse_config(FuseParams(master_addrs=masters, fs_path=fs_path), settings))
    argv = [str(layout.fuse), "--conf", str(conf), "--fs-path", fs_path, "--mnt-path", str(mnt)]
    log = mnt.parent / f"{mnt.name}.log"
    with open(log, "wb") as out:
        fuse = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mnt):
            if fuse.poll() is not None:
                raise CurvineError(f"curvine-fuse exited {fuse.returncode} before mounting {mnt}; see {log}")
            if time.monotonic() > deadline:
                raise CurvineError(f"curvine-fuse did not mount {mnt} within 30s; see {log}")
            time.sleep(0.01)
        yield fuse
    finally:
        fuse.send_signal(signal.SIGTERM)
        try:
            fuse.wait(15)
        except subprocess.TimeoutExpired:
            fuse.kill()
            fuse.wait()
        if os.path.ismount(mnt) or _stale(mnt):
            subprocess.run(["umount", "-l", str(mnt)], check=False, capture_output=True)
        conf.unlink(missing_ok=True)


# One write, read back and removed, in a process of its own: a write curvine-fuse fails in its
# background writer (seen: "No workers available" just after the worker registered) can leave the
# close() waiting forever in the kernel, and only the end of that FUSE connection ends it.
_PROBE = (
    "import pathlib, sys\n"
    "p = pathlib.Path(sys.argv[1])\n"
    "p.write_bytes(b'probe')\n"
    "assert p.read_bytes() == b'probe', 'read back something else'\n"
    "p.unlink()\n"
)
PROBE_SECONDS = 10


def wait_writable(layout: Layout, alive: Callable[[], bool], timeout: float = 60) -> float:
    """Mount the cluster's root with a probe curvine-fuse and write until a write succeeds; returns
    the seconds it took from the first mount. A write that does not return within PROBE_SECONDS
    ends that probe curvine-fuse (which fails the stuck request) and a fresh one is mounted. The
    probe is stopped (SIGTERM) either way."""
    mnt = layout.root / "probe" / "fuse-mount"
    start = time.monotonic()
    mounted_at: float | None = None
    last = "no write tried"
    while time.monotonic() - start < timeout:
        with mounted(layout, "/", mnt) as fuse:
            mounted_at = mounted_at or time.monotonic()
            while time.monotonic() - start < timeout:
                if fuse.poll() is not None:
                    raise CurvineError(f"the probe curvine-fuse exited {fuse.returncode}; see {mnt}.log")
                if not alive():
                    raise CurvineError("the Curvine master or worker exited while waiting for a first write")
                probe = subprocess.Popen(
                    [sys.executable, "-c", _PROBE, str(mnt / PROBE_FILE)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                try:
                    _, err = probe.communicate(timeout=PROBE_SECONDS)
                except subprocess.TimeoutExpired:
                    last = f"a write that did not return within {PROBE_SECONDS}s"
                    fuse.kill()
                    try:
                        probe.communicate(timeout=PROBE_SECONDS)
                    except subprocess.TimeoutExpired:
                        probe.kill()
                        raise CurvineError(f"a probe write into {mnt} is stuck in the kernel") from None
                    break  # mount a fresh probe curvine-fuse
                if probe.returncode == 0:
                    return time.monotonic() - mounted_at
                # EIO "No workers available" until the worker's first heartbeat
                last = (err.decode(errors="replace").strip().splitlines() or ["?"])[-1]
                time.sleep(0.1)
    raise CurvineError(f"no write succeeded within {timeout:.0f}s (last: {last}); see {mnt}.log")


def _stale(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as err:
        return err.errno == errno.ENOTCONN
    return False


class LocalCurvine:
    """Master and worker as children of this process (the e2e tests' and the bench's own Curvine):
    ``start``, ``stop``; the worker is SIGKILLed, it ignores SIGTERM once its
    master is gone."""

    def __init__(self, root: Path) -> None:
        bins = curvinebins.ensure()
        self.layout = Layout(root, bins)
        self.config = self.layout.write()
        self.master: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.first_write_s = 0.0

    @property
    def master_addrs(self) -> str:
        return f"{LOOPBACK}:{self.config['master']['rpc_port']}"

    def _spawn(self, service: str) -> subprocess.Popen[bytes]:
        log: IO[bytes]
        with open(self.layout.root / f"{service}.log", "ab") as log:
            return subprocess.Popen(
                self.layout.server_argv(service),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def alive(self) -> bool:
        return all(p is not None and p.poll() is None for p in (self.master, self.worker))

    def start_master(self) -> None:
        self.master = self._spawn("master")
        master = self.master
        wait_rpc(self.config["master"]["rpc_port"], lambda: master.poll() is None, "the Curvine master")

    def start(self) -> None:
        self.start_master()
        self.worker = self._spawn("worker")
        self.first_write_s = wait_writable(self.layout, self.alive)

    def stop_master(self) -> None:
        if self.master is not None and self.master.poll() is None:
            self.master.terminate()
            try:
                self.master.wait(15)
            except subprocess.TimeoutExpired:
                self.master.kill()
                self.master.wait()

    def stop(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            self.worker.kill()
            self.worker.wait()
        self.stop_master()


@contextlib.contextmanager
def running(root: Path) -> Iterator[LocalCurvine]:
    curvine = LocalCurvine(root)
    try:
        curvine.start()
        yield curvine
    finally:
        curvine.stop()
