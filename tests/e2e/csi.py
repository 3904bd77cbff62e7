"""The CSI node side as the e2e tests run it: a node service per node (real FUSE: the stand-in, or
the real curvine-fuse; real bind mounts) and the kubelet stand-in making kubelet's calls for pods on
that node, plus a loopback TCP proxy in front of the API server so a test can cut the node service
off from it and restore it.

The node a test uses is a Node object the test creates (kwok marks it Ready on the local cluster; on
any other cluster it simply has no kubelet), so the suite runs unchanged on kind: no real kubelet
ever sees these pods."""

from __future__ import annotations

import contextlib
import itertools
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localcluster.state import pythonpath_with_hack
from tests.e2e.fluid import REPO, LocalProcess
from tests.e2e.wait import eventually

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


class ApiProxy:
    """Forwards 127.0.0.1:port to the API server's address, byte for byte (TLS passes through, so the
    server's certificate still names 127.0.0.1). ``cut`` closes the listener and every connection:
    to its clients the API server is gone; ``restore`` listens again on the same port."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._stop.clear()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def cut(self) -> None:
        self._stop.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._conns.clear()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        sel = selectors.DefaultSelector()
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(0.5):
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
        except OSError:
            return
        finally:
            sel.close()
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()


def upstream_of(kubeconfig: Path) -> tuple[str, int]:
    cfg = yaml.safe_load(kubeconfig.read_text())
    context = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])["context"]
    server = next(c for c in cfg["clusters"] if c["name"] == context["cluster"])["cluster"]["server"]
    host, _, port = server.removeprefix("https://").rstrip("/").rpartition(":")
    return host.strip("[]"), int(port)


def via_proxy(kubeconfig: Path, proxy: ApiProxy, out: Path) -> Path:
    """``kubeconfig`` with its server replaced by the proxy's address (same host, so TLS verifies)."""
    cfg = yaml.safe_load(kubeconfig.read_text())
    for cluster in cfg["clusters"]:
        server = cluster["cluster"]["server"]
        host = server.removeprefix("https://").rpartition(":")[0]
        cluster["cluster"]["server"] = f"https://{host}:{proxy.port}"
        ca = cluster["cluster"].get("certificate-authority")
        if ca and not Path(ca).is_absolute():
            cluster["cluster"]["certificate-authority"] = str(kubeconfig.parent / ca)
    out.write_text(yaml.safe_dump(cfg))
    out.chmod(0o600)
    return out


@dataclass
class CsiNode(LocalProcess):
    """``fluid-csi --mode node`` for one node; its FUSE is the stand-in serving ``data/{cluster-id}``
    unless ``fuse`` names another program (``--fuse-binary``, ``--fuse-config``...)."""

    name: str
    root: Path
    kubeconfig: Path
    proc: subprocess.Popen[bytes] | None = None
    extra: list[str] = field(default_factory=list)
    fuse: list[str] = field(
        default_factory=lambda: ["--fuse-binary", f"{sys.executable} -m csi.standin.fusestandin"]
    )

    @property
    def socket(self) -> Path:
        return self.root / "csi.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "node.log"

    def start(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable, "-m", "csi.main", "--mode", "node", "--endpoint", f"unix://{self.socket}",
            "--node-id", self.name, "--state-dir", str(self.root / "state"),
            "--mount-root", str(self.kubelet_root / "plugins"), *self.fuse,
            "--kubeconfig", str(self.kubeconfig), "--log-format", "text",
            # No kubelet looks for it: the tests make kubelet's calls themselves.
            "--no-registration", *self.extra,
        ]  # fmt: skip
        env = {**os.environ, "CURVINE_STANDIN_DATA": str(self.data)}
        # The log is appended to across restarts: only what this start writes says it serves.
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
        eventually(
            lambda: self._serving(offset), f"node service {self.name} serving on {self.socket}", timeout=30
        )

    def _serving(self, offset: int) -> bool:
        assert self.alive(), f"node service exited; log: {self.log.read_text()[-3000:]}"
        with open(self.log, "rb") as f:
            f.seek(offset)
            return b"serving CSI on" in f.read()

    def mounts(self) -> list[str]:
        """Mount points under this node's root, from the kernel's table."""
        root = str(self.root)
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        return [p for p in points if p == root or p.startswith(root + "/")]

    def stop_leftovers(self) -> tuple[list[int], list[str]]:
        """Kill this node's FUSE processes and unmount what is left under its root; returns both, as
        they were found."""
        fuse = self.fuse_pids()
        for pid in fuse:
            os.kill(pid, signal.SIGKILL)
        leftover = self.mounts()
        for point in reversed(leftover):
            subprocess.run(["umount", "-l", point], check=False)
        return fuse, leftover

    def stop_leftovers_then_complain(self) -> None:
        """Clean up first, then complain: a failed test must not leak into the next ones."""
        fuse, leftover = self.stop_leftovers()
        assert fuse == [], "a FUSE process outlived the volumes that used it"
        assert leftover == [], f"mounts left behind: {leftover}"

    def fuse_pids(self) -> list[int]:
        """Live FUSE processes of this node: the stand-in or curvine-fuse, their --mnt-path under its
        root (a zombie serves nothing: left out)."""
        pids = []
        root = str(self.root).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            except (OSError, IndexError):
                continue
            mounting = any(a == b"--mnt-path" and m.startswith(root) for a, m in itertools.pairwise(argv))
            if mounting and b"validate-config" not in argv:
                pids.append(int(entry.name))
        return pids


@dataclass
class KubeletStandin(LocalProcess):
    kubeconfig: Path
    nodes: list[CsiNode]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "localcluster.kubeletstandin",
            "--kubeconfig",
            str(self.kubeconfig),
        ]
        argv += ["--resync", "1"]
        for node in self.nodes:
            argv += ["--node", f"{node.name}={node.socket}={node.kubelet_root}"]
        # It runs the standalone FUSE pods' commands: the FUSE stand-in needs to know its data.
        env = {
            **os.environ,
            "CURVINE_STANDIN_DATA": str(self.nodes[0].data),
            # Run as a module of hack/localcluster.
            "PYTHONPATH": pythonpath_with_hack(),
        }
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
        eventually(self._ready, "kubelet stand-in ready", timeout=30)

    def _ready(self) -> bool:
        assert self.alive(), f"kubelet stand-in exited; log: {self.log.read_text()[-3000:]}"
        return "ready" in self.log.read_text().splitlines()


def node_object(name: str) -> dict[str, Any]:
    """A Node with no kubelet behind it; kwok adopts it on the local cluster."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": {KWOK_NODE_ANNOTATION: "fake"}},
    }
