"""The demo's edge to the cluster and to its reader: ``kubectl`` run as an operator types it (and
shown so), the narration's headings and lines, and waiting for what a step needs. Shared by the
walkthrough's parts (hack/demo/walkthrough.py, hack/demo/datasetfuse.py), so each prints and waits the
same way."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

import localcluster
from localcluster import realnodes as realnode

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
SAMPLES = REPO / "manifests" / "samples"
T = TypeVar("T")


class DemoError(Exception):
    pass


# ------------------------------------------------------------------ narration


def step(title: str) -> None:
    print(f"\n\033[1m==> {title}\033[0m", flush=True)


def say(text: str) -> None:
    print(f"    {text}", flush=True)


class Cluster:
    def __init__(self, kubeconfig: Path, state_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.state_dir = state_dir
        cluster = localcluster.Cluster.load(state_dir)
        if cluster is None:
            raise DemoError(f"no cluster in {state_dir}: run `make demo`, which starts it")
        self.cluster = cluster
        self.kubectl_bin = str(Path(cluster.bin_dir) / "kubectl")
        # The node's busybox image, named from its binary (found now: the build's check of the
        # binaries prints, and the narration should not carry it).
        self.busybox = realnode.busybox_of(realnode.node_bins())
        self.nodes = sorted(n.name for n in realnode.recorded(cluster))
        if not self.nodes:
            raise DemoError(f"no real node is running in {state_dir}: run `make demo`, which starts them")
        # `kubectl fluid` finds the plugin on PATH, as it would for an operator.
        self.env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        }

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        show: bool = True,
        check: bool = True,
        shown: Callable[[str], bool] = lambda line: True,
    ) -> str:
        """``kubectl ARGS`` (shown as the operator would type it, with the lines of its output that
        ``shown`` keeps)."""
        if show:
            print(f"$ kubectl {shlex.join(args)}", flush=True)
        done = subprocess.run(
            [self.kubectl_bin, *args], input=stdin, capture_output=True, text=True, env=self.env, check=False
        )
        # stderr too when it worked: kubectl's "No resources found" and the like.
        for out in (done.stdout, done.stderr if done.returncode == 0 else ""):
            kept = [line for line in out.splitlines() if shown(line)]
            if show and kept:
                print("\n".join(kept), flush=True)
        if done.returncode != 0 and check:
            raise DemoError(f"kubectl {shlex.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def apply(self, *objects: dict[str, Any]) -> None:
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        self.run("apply", "-f", "-", stdin=body)

    def get_json(self, *args: str) -> Any:
        return json.loads(self.run("get", *args, "-o", "json", show=False))


def eventually(check: Callable[[], T | None], what: str, timeout: float = 60) -> T:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except (DemoError, OSError, ValueError, KeyError) as err:
            last = err
        else:
            if value:
                return value
            last = value
        time.sleep(0.3)
    raise DemoError(f"timed out after {timeout:.0f}s waiting for {what} (last seen: {last!r})")


def ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def pod_ready(k: Cluster, namespace: str, name: str) -> dict[str, Any]:
    """The pod once Ready; until then an error saying why each container waits (a timeout shows it)."""
    pod: dict[str, Any] = k.get_json("pod", name, "-n", namespace)
    if ready(pod):
        return pod
    waiting = {
        c["name"]: c["state"]["waiting"].get("reason")
        for c in pod.get("status", {}).get("containerStatuses", [])
        if "waiting" in c.get("state", {})
    }
    raise DemoError(f"pod {name} {pod.get('status', {}).get('phase')}, waiting: {waiting}")


def in_namespace(path: Path, namespace: str) -> list[dict[str, Any]]:
    """A sample's objects as its file has them, moved to the demo's namespace."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for doc in docs:
        if "namespace" in doc.get("metadata", {}):
            doc["metadata"]["namespace"] = namespace
    return docs
