"""Mooncake through the injected config beside a client configured by hand (issue 33; goal 1.0x).

A real ``mooncake_master`` and a long-lived ``mooncake_client`` holding the cache memory (the
runtime's worker) run on loopback, with the flags the mooncake class gives them (P2PHANDSHAKE: the
class needs no metadata server). On the bench's cluster, the product's controller renders a Mooncake
Dataset's runtime config, its CacheRuntime naming the master's port as a user moves it
(``spec.master.options.rpc_port``), and the product's webhook injects it into an app pod, admitted by
the API server with dryRun. The app's container then runs as a local process with what that pod got
and nothing else: its env, and its runtime-config volume's files (the ConfigMap's data written where
its mount path points), its own command sourcing runtime.sh. Its name lookups go through an
/etc/hosts of its own (a mount namespace, ``unshare``), as a pod's go to the cluster DNS:
``{MASTER_NAME}-0.{MASTER_SERVICE_NAME}`` and the pod's hostname both resolve to 127.0.0.1.

Beside it, in the same run, alternating, a client configured by hand with the same addresses
(Mooncake's ``MOONCAKE_*`` variables, shared/reference/mooncake.md section 5), in the same kind of
namespace. Each is tests/bench/mooncake_kv.py in a process of its own, timing puts and gets of fresh
4 KiB and 1 MiB values; rows: p50/p99 of each (goal <= 1.03x the by-hand client's) and the 1 MiB
throughput (goal >= 0.97x), and, as their floor, each side's quietest process's p50 and throughput (a
shared machine slows whole processes now and then). The two sides' ``setup()`` settings are printed
and compared. Skipped, saying why, where Mooncake cannot run.

Found on the way: Mooncake resolves the master's name once, when the client connects (a client kept
working after its /etc/hosts named another address), so the DNS name in the injected config costs a
lookup at setup, not per operation.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client, config

from kubectl_fluid.api import names
from tests.bench.bench_webhook import ensure_namespaces, product_processes
from tests.bench.mooncake_kv import SIZES
from tests.bench.report import Report, percentile, ratio_at_least, ratio_at_most
from tests.e2e.fluid import MANIFESTS, REPO, LocalProcess, free_port, install, kubectl
from tests.e2e.wait import eventually

DS = "kv"
SAMPLES = MANIFESTS / "samples"
ROUNDS = 12  # processes of each client, alternating (which goes first alternates too)
SEGMENT = "512MB"  # the worker's cache memory: one process's 1 MiB values fit many times over
INJECTED, BY_HAND = "injected", "by-hand"
LOOPBACK = "127.0.0.1"
# The "image" both clients run in: the venv's python first, the bench's client importable, Mooncake's
# logs at warnings, and the demo app's patience with an absent master.
IMAGE_ENV = {
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
    "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'hack'}",
    "MC_LOG_LEVEL": "WARNING",
    "MC_STORE_CLIENT_SETUP_RETRIES": "3",
}


def mooncake_bin(name: str) -> Path:
    return Path(sys.executable).parent / name


def unshare_argv() -> list[str]:
    """A mount namespace of its own: as root directly, else inside a user namespace."""
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *user, "--mount", "--propagation", "private", "--"]


def with_hosts(argv: list[str], hosts: Path) -> list[str]:
    """``argv`` run with ``hosts`` bound over /etc/hosts in a mount namespace of its own."""
    bind = 'mount --bind "$0" /etc/hosts && exec "$@"'
    return [*unshare_argv(), "sh", "-c", bind, str(hosts), *argv]


def why_no_mooncake(scratch: Path) -> str:
    """Why the Mooncake bench cannot run here, or "" when it can."""
    for tool in ("mooncake_master", "mooncake_client"):
        if not mooncake_bin(tool).exists():
            return f"{tool} not in the venv (make venv installs the mooncake extra)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) not found: the clients need an /etc/hosts of their own"
    probe = subprocess.run(
        [sys.executable, "-c", "import mooncake.store"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return f"mooncake.store does not import: {probe.stderr.strip().splitlines()[-1:]}"
    scratch.mkdir(parents=True, exist_ok=True)
    hosts = scratch / "probe-hosts"
    hosts.write_text(hosts_text(["fluid-bench-probe"]))
    argv = with_hosts(["getent", "hosts", "fluid-bench-probe"], hosts)
    probe = subprocess.run(argv, capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"a mount namespace with its own /etc/hosts cannot be made: {probe.stderr.strip()}"
    return ""


def hosts_text(resolved: list[str]) -> str:
    """An /etc/hosts mapping localhost and each of ``resolved`` to the loopback address."""
    return "".join(f"{LOOPBACK} {name}\n" for name in ["localhost", *resolved])


def master_dns_name(dataset: str) -> str:
    """The name an app pod dials the master by: pod 0 of its StatefulSet through the headless Service."""
    return f"{names.master_pod_name(dataset)}.{names.component_service(dataset, 'master')}"


@contextmanager
def runtime(workdir: Path) -> Iterator[tuple[int, int]]:
    """The master and the worker (a long-lived mooncake_client with the cache memory) on loopback,
    their flags the mooncake class's; yields the master's RPC and metrics ports."""
    from demo.apps import master_metrics

    rpc, metrics, worker_port = free_port(), free_port(), free_port()
    master = [
        str(mooncake_bin("mooncake_master")), f"--rpc_address={LOOPBACK}", f"--rpc_port={rpc}",
        f"--metrics_host={LOOPBACK}", f"--metrics_port={metrics}", "--logtostderr", "--minloglevel=1",
    ]  # fmt: skip
    worker = [
        str(mooncake_bin("mooncake_client")), f"--host={LOOPBACK}", f"--port={worker_port}",
        f"--master_server_address={LOOPBACK}:{rpc}", "--metadata_server=P2PHANDSHAKE", "--protocol=tcp",
        f"--global_segment_size={SEGMENT}", "--local_buffer_size=16MB",
    ]  # fmt: skip
    quiet = {**os.environ, "MC_LOG_LEVEL": "WARNING"}
    with open(workdir / "mooncake.log", "ab") as logs:
        procs: list[LocalProcess] = []
        try:
            procs.append(started(subprocess.Popen(master, stdout=logs, stderr=subprocess.STDOUT)))
            eventually(
                lambda: master_metrics(LOOPBACK, metrics, timeout=1) is not None, "mooncake_master", 30
            )
            procs.append(started(subprocess.Popen(worker, stdout=logs, stderr=subprocess.STDOUT, env=quiet)))
            eventually(
                lambda: master_metrics(LOOPBACK, metrics, timeout=1).get("segment_total_capacity_bytes"),
                "the worker's segment mounted at the master",
                timeout=60,
            )
            yield rpc, metrics
        finally:
            for proc in reversed(procs):
                proc.stop()


def started(proc: subprocess.Popen[bytes]) -> LocalProcess:
    """``proc`` as the tests' processes are stopped: SIGTERM, then SIGKILL after a grace period."""
    local = LocalProcess()
    local.proc = proc
    return local


def dataset_objects(namespace: str, rpc_port: int) -> list[dict[str, Any]]:
    """A Mooncake Dataset and its CacheRuntime of the mooncake class, its master on ``rpc_port``."""
    meta = {"name": DS, "namespace": namespace}
    return [
        {"apiVersion": names.API_VERSION, "kind": "Dataset", "metadata": meta,
         "spec": {"placement": "Shared", "accessModes": ["ReadWriteMany"],
                  "mounts": [{"name": "mc", "mountPoint": "mooncakefs:///"}]}},
        {"apiVersion": names.API_VERSION, "kind": "CacheRuntime", "metadata": meta,
         "spec": {"runtimeClassName": "mooncake",
                  "master": {"replicas": 1, "options": {"rpc_address": LOOPBACK, "rpc_port": str(rpc_port)}},
                  "worker": {"replicas": 1,
                             "tieredStore": {"levels": [{"processMemory": {"quota": "512Mi"}}]}}}},
    ]  # fmt: skip


def app_pod(namespace: str) -> dict[str, Any]:
    """The app: asks for the dataset, sources its runtime.sh and runs the bench's client."""
    env = names.runtime_config_env_names(DS)[-1]
    command = f'. "${env}" && exec python -m tests.bench.mooncake_kv {INJECTED}'
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kv-app",
            "namespace": namespace,
            "labels": {names.LABEL_INJECT: names.TRUE},
            "annotations": {names.ANNOTATION_DATASET: DS},
        },
        "spec": {"containers": [{"name": "app", "image": "mooncake", "command": ["sh", "-c", command]}]},
    }


def container_env(container: Mapping[str, Any], local: Mapping[str, Path]) -> dict[str, str]:
    """The container's env as kubelet gives it, each value under a mount path of ``local`` (mount
    path without its trailing "/" -> the local directory standing in for it) moved there."""
    env = {}
    for var in container.get("env", []):
        if set(var) != {"name", "value"}:
            raise ValueError(f"env {var} needs the API to resolve: the bench gives plain values only")
        value = str(var["value"])
        for mount, path in local.items():
            if value == mount or value.startswith(mount + "/"):
                value = str(path) + value[len(mount) :]
        env[var["name"]] = value
    return env


def configmap_mounts(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, str]:
    """The container's configMap volumes: mount path (without its trailing "/") -> ConfigMap name."""
    sources = {v["name"]: v["configMap"]["name"] for v in pod["spec"].get("volumes", []) if "configMap" in v}
    return {
        str(m["mountPath"]).rstrip("/"): sources[m["name"]]
        for m in container.get("volumeMounts", [])
        if m["name"] in sources
    }


def as_local_process(
    core: client.CoreV1Api, pod: Mapping[str, Any], root: Path
) -> tuple[list[str], dict[str, str]]:
    """The pod's one container as a local process: its argv, and its env with each configMap volume's
    files written under ``root`` (as kubelet would project them) and its paths moved there."""
    (container,) = pod["spec"]["containers"]
    local = {}
    for mount, configmap in configmap_mounts(pod, container).items():
        path = root / mount.lstrip("/")
        path.mkdir(parents=True, exist_ok=True)
        data = core.read_namespaced_config_map(configmap, pod["metadata"]["namespace"]).data or {}
        for key, text in data.items():
            (path / key).write_text(text)
        local[mount] = path
    return [*container["command"], *container.get("args", [])], container_env(container, local)


def by_hand_env(rpc_port: int) -> dict[str, str]:
    """What a user writes for Mooncake's own client: the same addresses, written down."""
    return {
        "MOONCAKE_MASTER": f"{LOOPBACK}:{rpc_port}",
        "MOONCAKE_TE_META_DATA_SERVER": "P2PHANDSHAKE",
        "MOONCAKE_PROTOCOL": "tcp",
        "MOONCAKE_LOCAL_HOSTNAME": LOOPBACK,
        "MOONCAKE_GLOBAL_SEGMENT_SIZE": "0",
        "MOONCAKE_LOCAL_BUFFER_SIZE": "16mb",
    }


def injected_pod(kubeconfig: Path, workdir: Path, namespace: str, rpc_port: int) -> dict[str, Any]:
    """The app pod as the API server admits it (dryRun) once the product's controller has rendered
    the dataset's runtime config and its webhook injects it."""
    k8s = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(k8s)
    install(kubeconfig)
    kubectl(kubeconfig, "apply", "-f", str(SAMPLES / "cacheruntimeclass-mooncake.yaml"))
    ensure_namespaces(core, [namespace])
    listed = {"apiVersion": "v1", "kind": "List", "items": dataset_objects(namespace, rpc_port)}
    kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(listed))
    controller, webhook = product_processes(kubeconfig, core, workdir, "bench-mooncake")
    try:
        controller.start()
        controller.wait_ready(60)
        cm = names.runtime_config_configmap(DS)
        eventually(lambda: core.read_namespaced_config_map(cm, namespace), f"ConfigMap {namespace}/{cm}")
        webhook.start()
        webhook.register()
        webhook.wait_ready(60)
        admission = client.AdmissionregistrationV1Api(k8s)
        eventually(lambda: webhook.ca_bundle_patched(admission), "caBundle patched")
        body: Any = app_pod(namespace)
        admitted = core.create_namespaced_pod(namespace, body, dry_run="All")
        pod: dict[str, Any] = k8s.sanitize_for_serialization(admitted)
    finally:
        webhook.stop()
        client.AdmissionregistrationV1Api(k8s).delete_mutating_webhook_configuration(webhook.config_name)
        controller.stop()
    if names.runtime_config_volume(DS) not in [v["name"] for v in pod["spec"].get("volumes", [])]:
        raise RuntimeError(f"the webhook did not inject {DS}'s runtime config: {json.dumps(pod['spec'])}")
    return pod


def run_client(argv: list[str], env: dict[str, str], hosts: Path, log: Path) -> dict[str, Any]:
    with open(log, "ab") as err:
        out = subprocess.run(
            with_hosts(argv, hosts), env={**IMAGE_ENV, **env}, cwd=REPO, stdout=subprocess.PIPE, stderr=err,
            timeout=300, check=False,
        )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"a Mooncake client ({argv[-4:]}) exited {out.returncode}; see {log}")
    result: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    return result


def config_differences(injected: Mapping[str, object], by_hand: Mapping[str, object]) -> list[str]:
    """The ``setup()`` settings in which the two clients differ, beyond the master's host: the
    injected one names it by DNS, the by-hand one by address; its port must agree."""

    def port(setup: Mapping[str, object]) -> str:
        return str(setup.get("master_server_addr", "")).rpartition(":")[2]

    keys = sorted((set(injected) | set(by_hand)) - {"master_server_addr"})
    differ = [
        f"{k}: {injected.get(k)!r} vs {by_hand.get(k)!r}" for k in keys if injected.get(k) != by_hand.get(k)
    ]
    if port(injected) != port(by_hand):
        differ.append(f"master port: {port(injected)} vs {port(by_hand)}")
    return differ


Summary = dict[str, float]  # "put 4096 p50" (ms), "put 1048576 MB/s", ...


def summarise(results: list[dict[str, Any]]) -> Summary:
    """One client's processes pooled: p50/p99 of each op and size (ms), and each op's throughput
    over every batch (MB/s: bytes moved over the batches' wall time). Beside them the quietest
    process's p50 and throughput ("... quietest"): on a shared machine a whole process is slowed now
    and then, and the best of the processes is what the client does when nothing else runs."""
    out: Summary = {}
    for size in (str(s) for s in SIZES):
        for op in ("put", "get"):
            each = [t * 1000 for r in results for t in r["sizes"][size][op]]
            wall = sum(r["sizes"][size][f"{op}_wall"] for r in results)
            out[f"{op} {size} p50"] = percentile(each, 50)
            out[f"{op} {size} p99"] = percentile(each, 99)
            out[f"{op} {size} MB/s"] = len(each) * int(size) / 1e6 / wall
            out[f"{op} {size} p50 quietest"] = min(
                percentile([t * 1000 for t in r["sizes"][size][op]], 50) for r in results
            )
            out[f"{op} {size} MB/s quietest"] = max(
                len(r["sizes"][size][op]) * int(size) / 1e6 / r["sizes"][size][f"{op}_wall"] for r in results
            )
    return out


def size_label(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def report_rows(report: Report, injected: Summary, by_hand: Summary) -> None:
    base, ops, mib = "configured by hand", ("put", "get"), 1 << 20
    latency, floor, throughput = ratio_at_most(1.03), ratio_at_most(1.03), ratio_at_least(0.97)
    rows = [  # name, key of the summaries, unit, baseline's name, goal
        *((f"mooncake {op} {size_label(size)} {p}, injected config", f"{op} {size} {p}", "ms", base, latency)
          for size in SIZES for op in ops for p in ("p50", "p99")),
        *((f"mooncake {op} throughput 1 MiB values, injected config", f"{op} {mib} MB/s", "MB/s", base,
           throughput) for op in ops),
        *((f"floor: mooncake {op} {size_label(size)} p50, quietest process, injected config",
           f"{op} {size} p50 quietest", "ms", f"{base}, quietest", floor) for size in SIZES for op in ops),
        *((f"floor: mooncake {op} throughput 1 MiB values, quietest process, injected config",
           f"{op} {mib} MB/s quietest", "MB/s", f"{base}, quietest", throughput) for op in ops),
    ]  # fmt: skip
    for name, key, unit, baseline, goal in rows:
        report.add(name, injected[key], unit, baseline, by_hand[key], goal=goal)


def run(report: Report, kubeconfig: Path, workdir: Path) -> None:
    workdir = workdir / "mooncake"
    reason = why_no_mooncake(workdir)
    if reason:
        print(f"[bench] mooncake figures skipped: {reason}")
        return
    namespace = f"bench-mooncake-{secrets.token_hex(3)}"
    hosts = workdir / "hosts"
    hosts.write_text(hosts_text([master_dns_name(DS), socket.gethostname()]))
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    with runtime(workdir) as (rpc, _):
        try:
            pod = injected_pod(kubeconfig, workdir, namespace, rpc)
            app_argv, app_env = as_local_process(core, pod, workdir / "pod")
        finally:
            core.delete_namespace(namespace)
        hand_argv = ["python", "-m", "tests.bench.mooncake_kv", BY_HAND]
        sides = {INJECTED: (app_argv, app_env), BY_HAND: (hand_argv, by_hand_env(rpc))}
        results: dict[str, list[dict[str, Any]]] = {INJECTED: [], BY_HAND: []}
        t0 = time.monotonic()
        for i in range(ROUNDS):
            for how in (INJECTED, BY_HAND) if i % 2 == 0 else (BY_HAND, INJECTED):
                argv, env = sides[how]
                results[how].append(run_client(argv, env, hosts, workdir / f"client-{how}.log"))
        print(f"[bench] mooncake: {ROUNDS} processes of each client in {time.monotonic() - t0:.0f}s")
    settings = {how: results[how][0]["setup"] for how in (INJECTED, BY_HAND)}
    for how, setup in settings.items():
        print(f"[bench] mooncake: the {how} client's setup(): {setup}")
    differ = config_differences(settings[INJECTED], settings[BY_HAND])
    verdict = (
        f"the injected config differs from the by-hand one in {differ}"
        if differ
        else "the injected config is the by-hand one (the master by its pod's DNS name)"
    )
    print(f"[bench] mooncake: {verdict}")
    report_rows(report, summarise(results[INJECTED]), summarise(results[BY_HAND]))
