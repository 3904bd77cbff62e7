"""A real Mooncake store fed by nothing but runtime.sh: the controller renders the mooncake class's
config, the master and worker pods it creates are run for real (hack/podrunner.py runs their stored
commands as local processes), and two application pods admitted through the webhook put and get a
value whose only configuration is sourcing ``$FLUID_RUNTIME_CONFIG_PATH_{DS}``.

Why the value survives its writer: Mooncake keeps data in the memory segments of its clients, not in
the master, and a segment leaves with its client. The applications contribute no segment
(``global_segment_size=0``); the runtime's worker, a long-lived ``mooncake_client``, holds the cache
memory, so the writer's value lands there. The writer pod exits before the reader pod starts.

Ports are free ones, moved through the CacheRuntime's component options (the class reads addresses and
ports from runtime.sh), and everything listens on 127.0.0.1 where Mooncake allows it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import pytest
from demo.apps import injected_pod
from kubernetes import client
from podrunner import PodProcess, run_pod, start_pod

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess, free_port
from tests.e2e.test_controller import Fluid, dataset, runtime
from tests.e2e.wait import as_json, eventually

VENV_BIN = Path(sys.executable).parent
DS = "mc"


def mooncake_problem() -> str | None:
    """Why a real Mooncake cannot run here, or None. The test fails with it: never a silent skip."""
    if importlib.util.find_spec("mooncake") is None:
        return f"Mooncake is not installed in {sys.prefix}: pip install -e '.[mooncake]' (make venv does)"
    master = VENV_BIN / "mooncake_master"
    if not master.exists():
        return f"{master} is missing: pip install -e '.[mooncake]'"
    run = subprocess.run([str(master), "--version"], capture_output=True, text=True, check=False, timeout=30)
    if run.returncode != 0:
        hint = " (apt-get install libibverbs1)" if "libibverbs" in run.stderr else ""
        return f"mooncake_master --version failed{hint}: {run.stderr.strip()[-500:]}"
    return None


@pytest.fixture
def image_env() -> dict[str, str]:
    """What the pods' image would provide: the venv's mooncake_master, mooncake_client and python."""
    problem = mooncake_problem()
    if problem:
        pytest.fail(f"a real Mooncake is needed for this test: {problem}")
    return {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}


@pytest.fixture
def fl(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess, webhook: WebhookProcess
) -> Fluid:
    return Fluid(k8s, namespace)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def master_metrics(port: int, host: str = "127.0.0.1", timeout: float = 2) -> dict[str, float]:
    """The master's Prometheus samples, summed per metric name over their labels."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for name, value in re.findall(r"^([a-z_]+)(?:\{[^}]*\})? (\S+)$", text, re.M):
        out[name] = out.get(name, 0.0) + float(value)
    return out


def alive(proc: PodProcess, what: str) -> None:
    assert proc.poll() is None, f"{what} exited ({proc.returncode}):\n{proc.stderr[-3000:]}"


def wait_until(check: Callable[[], bool], proc: PodProcess, what: str, timeout: float = 30) -> float:
    """Seconds until ``check()`` holds; fails at once, with its log, when ``proc`` dies meanwhile."""
    t0 = time.monotonic()
    while True:
        alive(proc, proc.plan.pod)
        with contextlib.suppress(OSError):
            if check():
                return time.monotonic() - t0
        assert time.monotonic() - t0 < timeout, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(0.05)


def host_state() -> dict[str, object]:
    """What the runner must never change on the host: /etc (names, hosts, hostname), the hostname."""
    return {
        "etc": sorted(os.listdir("/etc")),
        "hosts": Path("/etc/hosts").read_bytes(),
        "hostname": Path("/etc/hostname").read_bytes() if Path("/etc/hostname").exists() else None,
        "uts": socket.gethostname(),
        "fluid": os.path.exists("/etc/fluid"),
    }


def runner_mounts() -> list[str]:
    """Host mounts made by the runner: its overlays are named "podrunner"; its binds come from its
    temporary folders. Both live only in the runner's private namespaces, so none may show here."""
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return [line for line in lines if " podrunner " in line or "/podrunner-" in line]


def command_lines() -> dict[int, str]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                out[int(entry.name)] = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
    return out


def leftovers(*ports: int) -> list[str]:
    """Processes of this test still alive: Mooncake servers on its ports, the demo app."""
    ours = [f"={port} " for port in ports]
    return [
        f"{pid}: {cmd}"
        for pid, cmd in command_lines().items()
        if "mooncake_app.py" in cmd or ("mooncake_" in cmd and any(p in cmd for p in ours))
    ]


@pytest.fixture
def host_untouched() -> Iterator[None]:
    before = host_state()
    yield
    assert host_state() == before
    assert runner_mounts() == []


@pytest.mark.usefixtures("host_untouched")
def test_value_put_by_one_app_pod_is_got_by_another_through_runtime_sh(
    fl: Fluid, kubeconfig: Path, image_env: dict[str, str]
) -> None:
    namespace, core = fl.ns, fl.core
    rpc, metrics, worker_port = free_port(), free_port(), free_port()
    fl.create(dataset(DS))
    fl.create(
        runtime(
            DS,
            master={
                "replicas": 1,
                "options": {
                    "rpc_address": "127.0.0.1",
                    "rpc_port": str(rpc),
                    "metrics_host": "127.0.0.1",
                    "metrics_port": str(metrics),
                },
            },
            worker={
                "replicas": 1,
                "options": {"port": str(worker_port)},
                "tieredStore": {"levels": [{"processMemory": {"quota": "64Mi"}}]},
            },
        )
    )
    eventually(lambda: fl.bound(DS), f"Dataset {DS} Bound", timeout=30)
    runtime_sh = fl.configmap(DS)["data"][names.RUNTIME_SH_KEY]
    assert f'"rpc_port":"{rpc}"' in runtime_sh  # MASTER_OPTIONS: what the master and the apps read
    assert "export WORKER_TIEREDSTORE_LEVEL_0_QUOTA_0='64Mi'" in runtime_sh
    assert "export CLIENT_ENABLED='false'" in runtime_sh

    # The StatefulSets' pods, as kube-controller-manager created them (kwok reports them Running).
    master_pod, worker_pod = f"{DS}-master-0", f"{DS}-worker-0"
    for pod in (master_pod, worker_pod):
        eventually(partial(core.read_namespaced_pod, pod, namespace), f"pod {pod}", timeout=60)

    value = f"hello from the writer pod {secrets.token_hex(4)}"
    for name, args in (("writer", ("put", "greeting", value)), ("reader", ("get", "greeting"))):
        core.create_namespaced_pod(namespace, injected_pod(name, DS, *args))
        stored = as_json(core.read_namespaced_pod(name, namespace))
        volumes = [v["name"] for v in stored["spec"].get("volumes", [])]
        assert names.runtime_config_volume(DS) in volumes, f"{name} was not injected: {volumes}"

    started: list[PodProcess] = []
    with ExitStack() as stack:
        t0 = time.monotonic()
        master = stack.enter_context(
            start_pod(kubeconfig, namespace, master_pod, env=image_env, prefix="[master] ")
        )
        started.append(master)
        wait_until(lambda: port_open(rpc), master, f"the master's RPC port {rpc}")
        master_up = time.monotonic() - t0

        t1 = time.monotonic()
        worker = stack.enter_context(
            start_pod(kubeconfig, namespace, worker_pod, env=image_env, prefix="[worker] ")
        )
        started.append(worker)
        wait_until(
            lambda: master_metrics(metrics).get("segment_total_capacity_bytes") == 64 << 20,
            worker,
            "the worker's 64 MiB segment mounted at the master",
        )
        worker_up = time.monotonic() - t1

        t2 = time.monotonic()
        put = run_pod(kubeconfig, namespace, "writer", env=image_env, prefix="[writer] ", timeout=90)
        put_wall = time.monotonic() - t2
        assert put.returncode == 0, put.stderr
        # The writer is gone; its value is in the worker's segment (the only one: apps mount none).
        after_put = master_metrics(metrics)
        assert after_put["master_key_count"] == 1
        assert after_put["segment_allocated_bytes"] == len(value.encode())
        t3 = time.monotonic()
        got = run_pod(kubeconfig, namespace, "reader", env=image_env, prefix="[reader] ", timeout=90)
        get_wall = time.monotonic() - t3
        assert got.returncode == 0, got.stderr
        assert got.stdout == value + "\n"
        alive(master, "mooncake_master")
        alive(worker, "mooncake_client")
        assert len(leftovers(rpc, metrics, worker_port)) == 2  # the check below sees them while they run

    # ExitStack stopped the worker, then the master (SIGTERM to their process groups).
    for proc in started:
        assert proc.returncode is not None
        assert proc.group_members() == []
        assert not proc.plan.root.exists()
    assert master.returncode == 0, "mooncake_master did not stop gracefully on SIGTERM"
    assert leftovers(rpc, metrics, worker_port) == []
    print(
        f"\nmooncake timings: master RPC up {master_up:.2f}s, worker segment mounted {worker_up:.2f}s, "
        f"writer pod {put_wall:.2f}s, reader pod {get_wall:.2f}s (each pod: kubectl reads + setup + close); "
        f"stopped: master rc {master.returncode}, worker rc {worker.returncode}"
    )
