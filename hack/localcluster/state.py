"""The state dir's layout and the processes recorded in it: ``Cluster`` (cluster.json: ports,
binaries, nodes, processes by pid and start time), starting and stopping those processes, and the
small helpers every part of the cluster shares (free ports, the API server over HTTPS, waiting).

Standard library only: ``down`` and ``status`` run on the system python3.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HACK = Path(__file__).resolve().parents[1]
REPO = HACK.parent
DEFAULT_STATE = REPO / ".dev"
STATE_FILE = "cluster.json"
# Each kwok node's kubelet directory and CSI node service live here (make up --fluid).
NODES_DIR = "nodes"
# The test bed's real Curvine (peers/curvinecluster.py) and the CSI controller's own FUSE mounts.
CURVINE_DIR = "curvine"
CSI_CONTROLLER_DIR = "csi-controller"
# Stopped after the FUSE processes that use them are gone (an unmount needs the master), the worker
# first and at once: it ignores SIGTERM once the master is gone.
CURVINE_PROCS = ("curvine-worker", "curvine-master")
# The API server's /etc/hosts (see controlplane.private_hosts); real nodes' names are added to it.
HOSTS_FILE = "hosts"
# Marks a state dir whose cluster is shaped as a user's (userscluster.py: make demo's).
USERS_CLUSTER_MARKER = "users-cluster"


def pythonpath_with_hack() -> str:
    """PYTHONPATH for a process run as ``-m localcluster.X``: hack/ first, then what was there."""
    given = os.environ.get("PYTHONPATH")
    return f"{HACK}{os.pathsep}{given}" if given else str(HACK)


def log(msg: str) -> None:
    print(f"[localcluster] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes recorded by pid


def proc_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing paren.
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass
class Proc:
    name: str
    pid: int
    start_time: str

    def alive(self) -> bool:
        return proc_start_time(self.pid) == self.start_time


@dataclass
class Cluster:
    state_dir: Path
    bin_dir: str = ""
    etcd_data_dir: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.state_dir / "pki"

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def save(self) -> None:
        data = {
            "binDir": self.bin_dir,
            "etcdDataDir": self.etcd_data_dir,
            "ports": self.ports,
            "nodes": self.nodes,
            "processes": [p.__dict__ for p in self.procs],
        }
        tmp = self.state_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.state_dir / STATE_FILE)

    @classmethod
    def load(cls, state_dir: Path) -> Cluster | None:
        try:
            data = json.loads((state_dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        return cls(
            state_dir=state_dir,
            bin_dir=data["binDir"],
            etcd_data_dir=data["etcdDataDir"],
            ports=data["ports"],
            nodes=data.get("nodes", []),
            procs=[Proc(**p) for p in data["processes"]],
        )


def process_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the cluster's processes: this one's, less KUBECONFIG, plus ``extra``. Each is
    told its cluster by flag, and csi-provisioner prefers KUBECONFIG to its --kubeconfig: from a shell
    (or a test session) whose KUBECONFIG named another cluster, it provisioned for that one."""
    return {**{k: v for k, v in os.environ.items() if k != "KUBECONFIG"}, **(extra or {})}


def start(cluster: Cluster, name: str, argv: list[str], env: dict[str, str] | None = None) -> Proc:
    cluster.logs.mkdir(parents=True, exist_ok=True)
    with open(cluster.logs / f"{name}.log", "wb") as out:
        # A session of its own: the process outlives `make up` and ignores the terminal's Ctrl-C.
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=process_env(env),
        )
    started = proc_start_time(child.pid)
    if started is None:
        raise SystemExit(f"error: {name} exited at once; see {cluster.logs / (name + '.log')}")
    proc = Proc(name, child.pid, started)
    cluster.procs.append(proc)
    cluster.save()  # recorded at once, so `down` can stop it even if `up` fails later
    return proc


def stop(procs: list[Proc], grace: float = 15.0) -> None:
    """SIGTERM to all of ``procs`` at once, then wait; SIGKILL whatever outlives ``grace``."""
    live = [p for p in procs if p.alive()]
    for proc in live:
        log(f"stopping {proc.name} (pid {proc.pid})")
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        for proc in live:
            reap(proc.pid)
        live = [p for p in live if p.alive()]
        time.sleep(0.05)
    for proc in live:
        log(f"{proc.name} (pid {proc.pid}) ignored SIGTERM for {grace:.0f}s; killing it")
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    while live:
        for proc in live:
            reap(proc.pid)
        live = [p for p in live if p.alive()]
        time.sleep(0.05)


def reap(pid: int) -> None:
    # Our own children (when `up` and `down` run in one process, as in tests) stay zombies until reaped.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


# ---------------------------------------------------------------- ports, the API server, waiting


def free_ports(names: list[str]) -> dict[str, int]:
    """Ports the kernel has just handed out, all held open together so no two collide."""
    with contextlib.ExitStack() as stack:
        socks = {}
        for name in names:
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            socks[name] = s
        return {name: s.getsockname()[1] for name, s in socks.items()}


def api(
    cluster: Cluster, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 5.0
) -> tuple[int, dict[str, Any]]:
    ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
    ctx.load_cert_chain(str(cluster.pki / "admin.crt"), str(cluster.pki / "admin.key"))
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(cluster.server + path, data=data, method=method)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw) if raw else {}
    except ValueError:
        return status, {"raw": raw.decode(errors="replace")}


def wait_for(what: str, check: Any, cluster: Cluster, timeout: float, watch: list[str]) -> None:
    """Poll ``check()`` until true; fail early, naming the log to read, when a process dies."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, ssl.SSLError, ValueError):
            if check():
                return
        for p in cluster.procs:
            if p.name in watch and not p.alive():
                raise SystemExit(
                    f"error: {p.name} exited while waiting for {what}; see {cluster.logs / (p.name + '.log')}"
                )
        if time.monotonic() > deadline:
            raise SystemExit(
                f"error: timed out after {timeout:.0f}s waiting for {what}; logs in {cluster.logs}"
            )
        time.sleep(0.1)


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """One ``up``/``down`` at a time per state dir: two ``make up`` at once must still give one cluster."""
    import fcntl

    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def cluster_tag(state_dir: Path) -> str:
    """6 hex digits of the state dir's path: the names a cluster owns on this host (its real nodes'
    bridges, folders, cgroups and iptables chains) carry them, so two clusters never share one."""
    return hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:6]
