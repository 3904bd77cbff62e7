"""The plugin's start-up and its one-request command, beside kubectl doing the same, in one run:

- ``kubectl fluid --help`` against ``kubectl version --client`` (both start a process and print);
- ``kubectl fluid config show ds1`` against ``kubectl get cm fluid-runtime-config-ds1 -o jsonpath=…``
  (both read one ConfigMap and print runtime.sh);
each through a real kubectl (plugin dispatch included) and as ``kubectl-fluid`` alone; then where the
plugin's time goes: the interpreter, its imports (the entry and its click-free fast path for
``config show``, then the HTTP/TLS/JSON client), and in the process: the kubeconfig, the first request
(TLS handshake included), a request on the open connection; and what click would have cost.

The plugin runs with compiled bytecode in a private cache, as an installed plugin does; this sandbox
sets PYTHONDONTWRITEBYTECODE, so the figure without it is reported too (it is what a developer's
editable checkout pays on every run here).
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml
from kubernetes import client, config

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import build_runtime_config, render_json, render_sh
from tests.bench.report import Report, ratio_at_most
from tests.e2e.fluid import MANIFESTS, kubectl_binary

ROUNDS = 20
DATASET = "ds1"
BIN = Path(sys.executable).parent


def median_ms(argv: list[str], env: dict[str, str], rounds: int = ROUNDS) -> float:
    """Median wall time of a whole process, after one warm-up run (page cache, bytecode, discovery)."""
    subprocess.run(argv, env=env, capture_output=True, check=True)
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def plugin_env(kubeconfig: Path, workdir: Path) -> dict[str, str]:
    """The environment an installed plugin runs in: this venv's commands first on PATH (kubectl finds
    ``kubectl-fluid`` there) and compiled bytecode kept, in a private cache under ``workdir``."""
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPYCACHEPREFIX": str(workdir / "pycache"),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def runtime_config() -> dict[str, str]:
    """The sample Mooncake dataset's runtime config, rendered by the same builders as the controller."""
    docs = list(yaml.safe_load_all((MANIFESTS / "samples" / "dataset-mooncake.yaml").read_text()))
    ds = next(d for d in docs if d["kind"] == "Dataset")
    rt = next(d for d in docs if d["kind"] == "CacheRuntime")
    ds["metadata"]["name"] = rt["metadata"]["name"] = DATASET
    crc = yaml.safe_load((MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml").read_text())
    cfg = build_runtime_config(
        Dataset.model_validate(ds),
        CacheRuntime.model_validate(rt),
        CacheRuntimeClass.model_validate(crc),
        "bench",
    )
    return {names.RUNTIME_JSON_KEY: render_json(cfg), names.RUNTIME_SH_KEY: render_sh(cfg)}


PHASES = """
import sys, time
t0 = time.perf_counter()
from kubectl_fluid.kube import kubeconfig, transport
from kubectl_fluid.kube import resources
import ssl  # loaded by the first connection; here, so that the first GET's figure leaves it out
t1 = time.perf_counter()
access = kubeconfig.load(None, None)
t2 = time.perf_counter()
api = transport.Api(access)
path = resources.CONFIGMAPS.object_path(sys.argv[1], sys.argv[2])
api.get(path)
t3 = time.perf_counter()
api.get(path)
t4 = time.perf_counter()
print((t2 - t1) * 1000, (t3 - t2) * 1000, (t4 - t3) * 1000)
"""


def phases(env: dict[str, str], namespace: str) -> tuple[float, float, float]:
    """Medians, in one process each: kubeconfig load, first GET (connect + TLS + request), next GET."""
    cm = names.runtime_config_configmap(DATASET)
    runs = [
        [float(x) for x in subprocess.run(
            [sys.executable, "-c", PHASES, namespace, cm], env=env, capture_output=True, text=True, check=True
        ).stdout.split()]
        for _ in range(ROUNDS)
    ]  # fmt: skip
    load, first, again = (statistics.median(r[i] for r in runs) for i in range(3))
    return load, first, again


def run(report: Report, kubeconfig: Path, workdir: Path) -> None:
    kubectl = kubectl_binary()
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    namespace = f"bench-cli-{secrets.token_hex(3)}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    cm = names.runtime_config_configmap(DATASET)
    core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=cm), data=runtime_config())
    )
    env = plugin_env(kubeconfig, workdir)
    no_bytecode = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    del no_bytecode["PYTHONPYCACHEPREFIX"]
    try:
        plugin = str(BIN / "kubectl-fluid")
        show = ["config", "show", DATASET, "-n", namespace]
        get_cm = [kubectl, "get", "cm", cm, "-n", namespace, "-o", "jsonpath={.data.runtime\\.sh}"]
        same = subprocess.run([plugin, *show], env=env, capture_output=True, text=True, check=True).stdout
        assert same == subprocess.run(get_cm, env=env, capture_output=True, text=True, check=True).stdout

        version = median_ms([kubectl, "version", "--client"], env)
        report.add(
            "kubectl fluid --help",
            median_ms([kubectl, "fluid", "--help"], env),
            "ms",
            "kubectl version --client",
            version,
        )
        report.add(
            "kubectl-fluid --help (no kubectl)",
            median_ms([plugin, "--help"], env),
            "ms",
            "kubectl version --client",
            version,
            goal=ratio_at_most(1.0),
        )

        get = median_ms(get_cm, env)
        report.add(
            "kubectl fluid config show ds1",
            median_ms([kubectl, "fluid", *show], env),
            "ms",
            "kubectl get cm -o jsonpath",
            get,
        )
        direct = median_ms([plugin, *show], env)
        report.add(
            "kubectl-fluid config show ds1 (no kubectl)",
            direct,
            "ms",
            "kubectl get cm -o jsonpath",
            get,
            goal=ratio_at_most(1.5),
        )
        report.add(
            "kubectl-fluid config show ds1, no bytecode cache",
            median_ms([plugin, *show], no_bytecode),
            "ms",
            "kubectl get cm -o jsonpath",
            get,
        )

        python = median_ms([sys.executable, "-c", "pass"], env)
        fast = "import kubectl_fluid.cli.entry, kubectl_fluid.cli.fastpath, kubectl_fluid.cli.configview"
        fast_modules = median_ms([sys.executable, "-c", fast], env)
        client_imports = f"{fast}, kubectl_fluid.kube.kubeconfig, kubectl_fluid.kube.transport, json, ssl"
        client_modules = median_ms([sys.executable, "-c", client_imports], env)
        commands = median_ms([sys.executable, "-c", "import kubectl_fluid.cli.main"], env)
        load, first, again = phases(env, namespace)
        report.add("of which: python start", python, "ms")
        report.add("of which: the entry, its fast path and the config view", fast_modules - python, "ms")
        report.add("of which: the HTTP client + ssl + json", client_modules - fast_modules, "ms")
        report.add("of which: kubeconfig read", load, "ms")
        report.add("of which: first GET (connect, TLS, request)", first, "ms")
        report.add(
            "of which: rest (the verb, parsing, printing, exit)", direct - client_modules - load - first, "ms"
        )
        report.add("click + the plugin's root command (what the fast path skips)", commands - python, "ms")
        report.add("a second GET on the open connection", again, "ms")
        print(
            f"[bench] kubectl-fluid config show printed {len(json.dumps(same))} bytes of runtime.sh",
            flush=True,
        )
    finally:
        core.delete_namespace(namespace)
