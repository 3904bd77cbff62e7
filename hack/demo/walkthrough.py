"""``make demo``: both data paths of kubectl-fluid on the local cluster, narrated, with real traffic.

1. Clientless: a Mooncake dataset's runtime config rendered by the controller, injected into an app
   Deployment by ``kubectl fluid inject``, and used by the app's own command (it only sources
   runtime.sh) to put a value through a real ``mooncake_master``; a second app pod gets it back.
2. FUSE: on the test bed's real Curvine (master and worker started by ``make up``), a PVC of the
   ``curvine`` StorageClass (provisioned by the real csi-provisioner: its directory made in Curvine)
   used by two pods on one node share one real curvine-fuse (``kubectl fluid mounts``); a file
   written through one pod's volume is read through the other's, and through a curvine-fuse of its
   own mounting the volume's directory; once both pods are gone the FUSE mount is gone too. Without
   Curvine's binaries ``make up`` runs the development stand-in, and so does this.

kwok runs no containers: the pods whose commands matter (the Mooncake master and worker, the apps)
run through hack/podrunner.py as local processes, from their *stored* specs. Everything printed is
the output of what ran. Exits non-zero at the first step that does not do what it says.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml
from podrunner import PodProcess, PodResult, find_kubectl, run_pod, start_pod

import curvinebins
import curvinecluster
from demo.apps import app_container, injected_pod
from kubectl_fluid.api import names

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
NS = "fluid-demo"
DS = "demo"
NODE = "kwok-node-0"
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
        self.kubectl_bin = find_kubectl()
        # `kubectl fluid` finds the plugin on PATH, as it would for an operator.
        self.env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        }

    def run(self, *args: str, stdin: str | None = None, show: bool = True, check: bool = True) -> str:
        """``kubectl ARGS`` (shown as the operator would type it, with its output)."""
        if show:
            print(f"$ kubectl {shlex.join(args)}", flush=True)
        done = subprocess.run(
            [self.kubectl_bin, *args], input=stdin, capture_output=True, text=True, env=self.env, check=False
        )
        if show and done.stdout:
            print(done.stdout.rstrip(), flush=True)
        if show and done.stderr and done.returncode == 0:
            print(done.stderr.rstrip(), flush=True)  # kubectl's "No resources found" and the like
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------ clientless


def clientless(k: Cluster) -> None:
    step("Clientless data path: a Mooncake dataset whose config is injected into app pods")
    rpc, metrics, worker_port = free_port(), free_port(), free_port()
    k.run("apply", "-f", str(REPO / "manifests" / "samples" / "cacheruntimeclass-mooncake.yaml"))
    dataset = {
        "apiVersion": names.API_VERSION,
        "kind": "Dataset",
        "metadata": {"name": DS, "namespace": NS},
        "spec": {"mounts": [{"name": "default", "mountPoint": "local:///demo"}]},
    }
    runtime = {
        "apiVersion": names.API_VERSION,
        "kind": "CacheRuntime",
        "metadata": {"name": DS, "namespace": NS},
        "spec": {
            "runtimeClassName": "mooncake",
            # Loopback and free ports: the master runs on this machine, beside whatever else does.
            "master": {
                "replicas": 1,
                "options": {
                    "rpc_address": "127.0.0.1",
                    "rpc_port": str(rpc),
                    "metrics_host": "127.0.0.1",
                    "metrics_port": str(metrics),
                },
            },
            "worker": {
                "replicas": 1,
                "options": {"port": str(worker_port)},
                "tieredStore": {"levels": [{"processMemory": {"quota": "64Mi"}}]},
            },
        },
    }
    k.apply(dataset, runtime)
    eventually(
        lambda: k.get_json("dataset", DS, "-n", NS).get("status", {}).get("phase") == "Bound",
        f"Dataset {DS} Bound",
    )
    k.run("get", "dataset,cacheruntime", "-n", NS)

    step("The runtime config the controller rendered, as a pod will source it")
    k.run("fluid", "config", "show", DS, "-n", NS)

    step("An app Deployment, then `kubectl fluid inject` to give its pods the dataset's config")
    put_value = f"hello from demo-app {secrets.token_hex(3)}"
    k.apply(app_deployment(put_value))
    k.run("fluid", "inject", "deploy/demo-app", "--dataset", DS, "-n", NS, "--wait")

    def first_injected() -> str | None:
        pods = k.get_json("pods", "-n", NS, "-l", "app=demo-app")["items"]
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            volumes = [v["name"] for v in pod["spec"].get("volumes", [])]
            if names.runtime_config_volume(DS) in volumes:
                return str(pod["metadata"]["name"])
        return None

    writer = eventually(first_injected, "a demo-app pod carrying the injected config")
    say(f"the injected part of the stored pod {writer}:")
    k.run(
        "get", "pod", writer, "-n", NS, "-o",
        "jsonpath={range .spec.containers[0].env[*]}env   {.name}={.value}{'\\n'}{end}"
        "{range .spec.containers[0].volumeMounts[*]}mount {.mountPath} ({.name}){'\\n'}{end}",
    )  # fmt: skip

    image_env = {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    with ExitStack() as stack:
        step("The Mooncake master and worker: the stored pods' commands, run as local processes")
        master = stack.enter_context(
            start_pod(k.kubeconfig, NS, f"{DS}-master-0", env=image_env, echo=False, prefix="[master] ")
        )
        wait_port(rpc, master, "mooncake_master's RPC port")
        say(f"mooncake_master serving on 127.0.0.1:{rpc} (pid {master.pid})")
        worker = stack.enter_context(
            start_pod(k.kubeconfig, NS, f"{DS}-worker-0", env=image_env, echo=False, prefix="[worker] ")
        )
        eventually(
            lambda: master_metric(metrics, "segment_total_capacity_bytes") == 64 << 20 or _alive(worker),
            "the worker's 64 MiB segment at the master",
        )
        say(f"mooncake_client (worker) holds a 64 MiB segment (pid {worker.pid})")

        step(f"demo-app's own command (pod {writer}): source runtime.sh, put a value through Mooncake")
        put = app_run(k, writer, image_env)
        if put.returncode != 0:
            raise DemoError(f"the app pod {writer} failed to put: exit {put.returncode}")
        say(
            f"master now holds {master_metric(metrics, 'master_key_count'):.0f} key(s); the writer has exited"
        )

        step("A second app pod, labelled for injection, gets the value back")
        k.apply(injected_pod("demo-reader", DS, "get", "greeting", namespace=NS))
        got = app_run(k, "demo-reader", image_env)
        if got.returncode != 0 or got.stdout.strip() != put_value:
            raise DemoError(
                f"read back {got.stdout.strip()!r} (exit {got.returncode}), expected {put_value!r}"
            )
        say(f"read back through Mooncake: {got.stdout.strip()!r}")
    say("master and worker stopped")


def app_run(k: Cluster, pod: str, image_env: dict[str, str]) -> PodResult:
    """Run an app pod's command; show what the app says (its stdout and its own log lines) and keep
    Mooncake's library logging for when something fails."""
    result = run_pod(k.kubeconfig, NS, pod, env=image_env, echo=False, timeout=120)
    lines = [*result.stdout.splitlines(), *(x for x in result.stderr.splitlines() if "[mooncake-app]" in x)]
    for line in (
        lines if result.returncode == 0 else [*result.stdout.splitlines(), *result.stderr.splitlines()]
    ):
        print(f"[{pod}] {line}", flush=True)
    return result


def app_deployment(value: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "demo-app", "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "demo-app"}},
            "template": {
                "metadata": {"labels": {"app": "demo-app"}},
                "spec": {"containers": [app_container(DS, "put", "greeting", value)]},
            },
        },
    }


def _alive(proc: PodProcess) -> bool:
    if proc.poll() is not None:
        raise DemoError(f"{proc.plan.pod} exited ({proc.returncode}): {proc.stderr[-1500:]}")
    return False


def wait_port(port: int, proc: PodProcess, what: str) -> None:
    def open_() -> bool:
        _alive(proc)
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0

    eventually(open_, what, timeout=60)


def master_metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " ")
    )


# ------------------------------------------------------------------ FUSE


def curvine(k: Cluster) -> curvinecluster.Layout | None:
    """The real Curvine ``make up`` started, None when it runs the stand-in."""
    layout = curvinecluster.Layout(k.state_dir / "curvine", curvinebins.cache_dir())
    return layout if layout.config.exists() and curvinebins.cached() else None


def storage_class(layout: curvinecluster.Layout | None) -> dict[str, Any]:
    """The sample StorageClass, its master-addrs the test bed's Curvine master."""
    sc: dict[str, Any] = yaml.safe_load(
        (REPO / "manifests" / "samples" / "storageclass-curvine.yaml").read_text()
    )
    if layout is not None:
        sc["parameters"][names.PARAM_MASTER_ADDRS] = layout.master_addrs()
    return sc


def fuse(k: Cluster) -> None:
    layout = curvine(k)
    step("FUSE data path: one PVC, two pods on one node, one shared FUSE mount")
    if layout is None:
        say("no real Curvine in this test bed: the FUSE program is the development stand-in")
    else:
        say(f"Curvine {curvinebins.version()}: master {layout.master_addrs()} and a worker, from make up")
    # A StorageClass's parameters are immutable: one left from a test bed on other ports goes first.
    k.run("delete", "storageclass", "curvine", "--ignore-not-found", show=False)
    k.apply(storage_class(layout))
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "shared", "namespace": NS},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "curvine",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    k.apply(claim, volume_pod("reader-a"), volume_pod("reader-b"))
    eventually(
        lambda: k.get_json("pvc", "shared", "-n", NS).get("status", {}).get("phase") == "Bound",
        "PVC shared Bound (csi-provisioner → CreateVolume)",
    )
    k.run("get", "pvc", "shared", "-n", NS)

    def one_mount_two_targets() -> dict[str, Any] | None:
        items = k.get_json("fusemounts", "-l", names.fuse_mount_node_selector(NODE))["items"]
        if len(items) != 1:
            return None
        status = items[0].get("status", {})
        targets = [t for v in status.get("volumes", []) for t in v.get("targets", [])]
        return items[0] if status.get("phase") == "Ready" and len(targets) == 2 else None

    mount = eventually(one_mount_two_targets, "one FuseMount with both pods' targets")
    k.run("fluid", "mounts")
    k.run("fluid", "mounts", "-o", "wide")
    if mount["status"]["refCount"] != 1:
        raise DemoError(f"refcount {mount['status']['refCount']}, expected 1")

    step("A file written through reader-a's volume is read through reader-b's")
    pv = k.get_json("pvc", "shared", "-n", NS)["spec"]["volumeName"]
    kubelet_root = k.state_dir / "nodes" / NODE / "kubelet"
    uid = {n: k.get_json("pod", n, "-n", NS)["metadata"]["uid"] for n in ("reader-a", "reader-b")}
    target_a = Path(names.csi_publish_target(uid["reader-a"], pv, str(kubelet_root)))
    target_b = Path(names.csi_publish_target(uid["reader-b"], pv, str(kubelet_root)))
    text = f"written through reader-a at {time.strftime('%H:%M:%S')}"
    (target_a / "hello.txt").write_text(text + "\n")
    say(f"reader-a's volume (as kubelet mounted it): {target_a}")
    say(f"reader-b reads: {(target_b / 'hello.txt').read_text().strip()!r}")
    if (target_b / "hello.txt").read_text().strip() != text:
        raise DemoError("reader-b did not see reader-a's file")
    if layout is not None:
        independent(k, layout, pv, text)

    step("Deleting both pods: targets unpublished, the volume unstaged, FUSE stopped")
    k.run("delete", "pod", "reader-a", "reader-b", "-n", NS, "--wait=true")
    eventually(
        lambda: not k.get_json("fusemounts", "-l", names.fuse_mount_node_selector(NODE))["items"],
        "the FuseMount gone",
    )
    k.run("fluid", "mounts")
    left = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    still = [p for p in left if p.startswith(str(kubelet_root))]
    if still:
        raise DemoError(f"mounts left under {kubelet_root}: {still}")
    say("no FUSE mount and no bind mount left on the node")


def independent(k: Cluster, layout: curvinecluster.Layout, pv: str, text: str) -> None:
    """A curvine-fuse of its own, not the driver's, on the volume's directory in Curvine."""
    curvine_path = k.get_json("pv", pv)["spec"]["csi"]["volumeAttributes"][names.PARAM_CURVINE_PATH]
    step(f"A curvine-fuse of its own (not the driver's) mounting {curvine_path} reads the same file")
    mnt = k.state_dir / "demo-independent" / "fuse-mount"
    with curvinecluster.mounted(layout, curvine_path, mnt) as fuse:
        seen = (mnt / "hello.txt").read_text().strip()
        say(f"curvine-fuse pid {fuse.pid} --fs-path {curvine_path}: hello.txt says {seen!r}")
    if seen != text:
        raise DemoError(f"the independent curvine-fuse read {seen!r}, expected {text!r}")


def volume_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "infinity"]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}],
        },
    }


# ------------------------------------------------------------------ main


@contextmanager
def demo_namespace(k: Cluster) -> Iterator[None]:
    # A namespace of its own, fresh every run, so a second `make demo` starts clean.
    if k.run("get", "namespace", NS, "--ignore-not-found", "-o", "name", show=False).strip():
        k.run("delete", "namespace", NS, "--wait=true", show=False)
    k.run("create", "namespace", NS)
    try:
        yield
    finally:
        k.run("delete", "namespace", NS, "--wait=false", show=False, check=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--state-dir", type=Path, default=REPO / ".dev")
    args = p.parse_args(argv)
    state_dir = args.state_dir.resolve()
    k = Cluster(state_dir / "kubeconfig", state_dir)
    t0 = time.monotonic()
    try:
        with demo_namespace(k):
            clientless(k)
            fuse(k)
    except DemoError as err:
        print(f"\ndemo failed: {err}", file=sys.stderr)
        return 1
    step(f"Done in {time.monotonic() - t0:.0f}s. The cluster keeps running (`make down` stops it):")
    say(f"export KUBECONFIG={k.kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
