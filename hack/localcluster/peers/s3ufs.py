"""A real S3 UFS for a cluster's pods: moto's S3 server (PyPI ``moto[server]``) as a process of this host,
listening on a real node's bridge address, where the node's pods reach this host.

A host process, not a pod: the pods reach the bridge address already (their DNS is served there), so
nothing is built, imported or scheduled, and the server starts in about a second. A pod would need an
image of its own with moto's forty-odd wheels in it, for no gain in realism: S3 is outside the cluster
in every real deployment, and so it is here.

moto lives in a venv of its own under the cache (``venv()``), not the product's: moto pins
``python-dateutil<3``, which the ``kubernetes`` client the tests use refuses. moto accepts any access
key and signs nothing, so the server is seeded over plain HTTP (path style). Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from localcluster import state
from localcluster.state import Cluster

MOTO = "moto[server]==5.2.5"
REGION = "us-east-1"


def venv() -> Path:
    cache = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid"))
    return cache / f"moto-{MOTO.split('==')[1]}"


def server_binary() -> Path:
    """moto_server, installed into its venv the first time (about 2 minutes, from PyPI). A marker
    written last says the install finished; without it the venv is made again."""
    binary, done = venv() / "bin" / "moto_server", venv() / ".installed"
    if done.exists():
        return binary
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv())], check=True)
    subprocess.run([str(venv() / "bin" / "pip"), "install", "--quiet", MOTO], check=True, timeout=900)
    done.write_text(MOTO + "\n")
    return binary


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class S3Server:
    host: str
    port: int
    log: Path

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def put(self, bucket: str, key: str = "", data: bytes = b"") -> None:
        """A bucket (no key) or an object, unsigned (moto asks for no signature)."""
        url = f"{self.endpoint}/{bucket}" + (f"/{key}" if key else "")
        request = urllib.request.Request(
            url, data=data, method="PUT", headers={"Content-Type": "application/octet-stream"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()

    def gets(self, bucket: str, key: str) -> int:
        """How many GETs of the object the server has answered: its request log (werkzeug's, one line
        a request, written as it is answered), the only witness of whether a read reached S3."""
        wanted = f"GET /{bucket}/{key} HTTP/"
        return sum(wanted in line for line in self.log.read_text(errors="replace").splitlines())

    def keys(self, bucket: str) -> str:
        """The bucket's listing (ListObjectsV2's XML), to see what a cache wrote into it."""
        with urllib.request.urlopen(f"{self.endpoint}/{bucket}?list-type=2", timeout=30) as response:
            text: str = response.read().decode()
            return text


ENV = {"MOTO_ALLOW_NONEXISTENT_REGION": "true"}
PROC_NAME = "s3-ufs"  # its name among a cluster's recorded processes (``recorded()``)


def argv(host: str, port: int) -> list[str]:
    return [str(server_binary()), "-H", host, "-p", str(port)]


def wait_serving(server: S3Server, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(server.endpoint + "/", timeout=2):
                return
        except (urllib.error.URLError, OSError):
            if not alive() or time.monotonic() > deadline:
                raise RuntimeError(f"moto_server did not start: {server.log.read_text()[-2000:]}") from None
            time.sleep(0.2)


@contextlib.contextmanager
def serving(host: str, log: Path) -> Iterator[S3Server]:
    """moto's S3 server on ``host`` (a free port) until the block ends; its log in ``log``."""
    port = free_port(host)
    command = argv(host, port)
    with open(log, "ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **ENV})
    server = S3Server(host, port, log)
    try:
        wait_serving(server, alive=lambda: proc.poll() is None)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def recorded(cluster: Cluster, host: str) -> S3Server:
    """moto's S3 server on ``host`` as one of ``cluster``'s processes, which outlives the caller and
    which ``make down`` stops with the others. Started afresh (a previous one stopped first), so
    its buckets are what the caller seeds."""
    state.stop([p for p in cluster.procs if p.name == PROC_NAME])
    cluster.procs = [p for p in cluster.procs if p.name != PROC_NAME]
    port = free_port(host)
    proc = state.start(cluster, PROC_NAME, argv(host, port), env=ENV)
    server = S3Server(host, port, cluster.logs / f"{PROC_NAME}.log")
    wait_serving(server, alive=proc.alive)
    return server
