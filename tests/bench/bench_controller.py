"""The controller at scale: 500 Dataset/CacheRuntime pairs applied at once → seconds until all 500
runtime-config ConfigMaps are correct, reconcile p50/p99, the controller's RSS.

Baseline, same run, same cluster: the same 500 ConfigMaps created directly by a client with the
controller's concurrency (8) — the API server's floor for that much writing. The controller writes
about ten objects per pair (ConfigMap, 2 Services, 2 StatefulSets, PV, PVC, finalizer, 2 statuses).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path
from typing import Any

from kubernetes import client, config

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.kube import http
from kubectl_fluid.kube.client import connect
from kubectl_fluid.kube.resources import CONFIGMAPS, Resource
from kubectl_fluid.runtimeconfig import build_runtime_config, render_json, render_sh
from tests.bench.report import Report, at_most, ratio_at_most
from tests.e2e.fluid import (
    MANIFESTS,
    ControllerProcess,
    install,
    kubectl,
    service_account_kubeconfig,
    wait_until_gone,
)

PAIRS = 500
# How long a converged cluster is watched for writes it should not get.
STEADY_SECONDS = 30.0
CONCURRENCY = 8
DATASETS = Resource(names.GROUP, names.VERSION, "datasets", "Dataset", True)
RUNTIMES = Resource(names.GROUP, names.VERSION, "cacheruntimes", "CacheRuntime", True)


def pair(i: int) -> tuple[dict[str, Any], dict[str, Any]]:
    name = f"ds{i:04d}"
    ds = {
        "apiVersion": names.API_VERSION,
        "kind": "Dataset",
        "metadata": {"name": name},
        "spec": {
            "mounts": [{"name": "default", "mountPoint": f"s3://bucket/{name}", "options": {"n": str(i)}}]
        },
    }
    rt = {
        "apiVersion": names.API_VERSION,
        "kind": "CacheRuntime",
        "metadata": {"name": name},
        "spec": {"runtimeClassName": "mooncake", "client": {"disabled": True}, "options": {"i": str(i)}},
    }
    return ds, rt


async def create_all(api: Any, items: list[tuple[Resource, str, dict[str, Any]]]) -> None:
    sem = asyncio.Semaphore(CONCURRENCY * 2)

    async def one(resource: Resource, namespace: str, body: dict[str, Any]) -> None:
        async with sem:
            await http.request(api, "POST", resource.collection_path(namespace), body=body)

    await asyncio.gather(*(one(*item) for item in items))


def report_converged(
    report: Report, controller: ControllerProcess, converged: float, applying: float, base_seconds: float
) -> None:
    assert controller.proc is not None
    _, metrics_text = controller.get("/metrics")
    report.add(
        f"{PAIRS} pairs applied -> all ConfigMaps correct",
        converged,
        "s",
        f"{PAIRS} ConfigMaps created directly",
        base_seconds,
        goal=ratio_at_most(1.5),
    )
    report.add(f"of which: creating the {2 * PAIRS} objects", applying, "s")
    report.add(
        "reconcile p50",
        1000 * histogram_quantile(metrics_text, "fluid_controller_reconcile_duration_seconds", 0.5),
        "ms",
    )
    report.add(
        "reconcile p99",
        1000 * histogram_quantile(metrics_text, "fluid_controller_reconcile_duration_seconds", 0.99),
        "ms",
        goal=at_most(300, "ms"),
    )
    report.add(
        f"API writes in {STEADY_SECONDS:g} s of a steady cluster ({PAIRS} pairs converged)",
        steady_writes(controller),
        "writes",
        goal=at_most(0, "writes"),
    )
    report.add("controller RSS after converging", rss_mb(controller.proc.pid), "MB")
    report.add("controller peak RSS", rss_mb(controller.proc.pid, "VmHWM"), "MB", goal=at_most(150, "MB"))


def counter_total(text: str, name: str) -> float:
    """The sum of a Prometheus counter over all its label sets."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith((f"{name}{{", f"{name} "))
    )


def steady_writes(controller: ControllerProcess) -> float:
    """Writes the controller sends while nothing changes: resyncs and watch restarts must find
    everything as it should be and write nothing."""
    _, before = controller.get("/metrics")
    time.sleep(STEADY_SECONDS)
    _, after = controller.get("/metrics")
    name = "fluid_controller_api_writes_total"
    return counter_total(after, name) - counter_total(before, name)


def histogram_quantile(text: str, name: str, q: float) -> float:
    """Prometheus-style quantile from cumulative buckets (linear within a bucket)."""
    buckets: list[tuple[float, float]] = []
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.rsplit(" ", 1)[1])))
    buckets.sort()
    total = buckets[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / max(count - lower_count, 1e-9)
        lower_bound, lower_count = bound, count
    return lower_bound


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(report: Report, kubeconfig: Path, workdir: Path) -> None:
    install(kubeconfig)
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml"))
    k8s = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(k8s)
    custom = client.CustomObjectsApi(k8s)
    crc = CacheRuntimeClass.model_validate(
        custom.get_cluster_custom_object(names.GROUP, names.VERSION, "cacheruntimeclasses", "mooncake")
    )
    base_ns, ns = f"bench-base-{secrets.token_hex(3)}", f"bench-{secrets.token_hex(3)}"
    for n in (base_ns, ns):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=n)))
    pairs = [pair(i) for i in range(PAIRS)]
    expected = {}
    for ds, rt in pairs:
        cfg = build_runtime_config(Dataset.model_validate(ds), CacheRuntime.model_validate(rt), crc, ns)
        expected[names.runtime_config_configmap(ds["metadata"]["name"])] = (render_json(cfg), render_sh(cfg))

    async def baseline() -> float:
        api = await connect(str(kubeconfig))
        cms = [
            (CONFIGMAPS, base_ns, {"metadata": {"name": n}, "data": {"runtime.json": j, "runtime.sh": s}})
            for n, (j, s) in expected.items()
        ]
        t0 = time.monotonic()
        await create_all(api, cms)
        return time.monotonic() - t0

    base_seconds = asyncio.run(baseline())

    sa = service_account_kubeconfig(kubeconfig, core, workdir / "controller.kubeconfig")
    controller = ControllerProcess(
        sa, workdir, f"bench-{secrets.token_hex(2)}", extra=["--log-level=warning"]
    )
    controller.start()
    try:
        controller.wait_ready(60)

        async def apply_pairs() -> tuple[float, float]:
            api = await connect(str(kubeconfig))
            t0 = time.monotonic()
            await create_all(
                api, [(DATASETS, ns, ds) for ds, _ in pairs] + [(RUNTIMES, ns, rt) for _, rt in pairs]
            )
            applied = time.monotonic()
            while True:
                listed = await http.request(api, "GET", CONFIGMAPS.collection_path(ns))
                correct = sum(
                    1
                    for cm in listed["items"]
                    if expected.get(cm["metadata"]["name"])
                    == (cm.get("data", {}).get("runtime.json"), cm.get("data", {}).get("runtime.sh"))
                )
                if correct == PAIRS:
                    return time.monotonic() - t0, applied - t0
                if time.monotonic() - t0 > 600:
                    raise RuntimeError(f"only {correct}/{PAIRS} ConfigMaps correct after 600 s")
                await asyncio.sleep(0.25)

        converged, applying = asyncio.run(apply_pairs())
        report_converged(report, controller, converged, applying, base_seconds)
    finally:
        # Deleted while the controller still runs: it removes the Datasets' finalizers. Stopped first,
        # the namespace would stay Terminating, and the namespace controller's retries over 500 pairs
        # would load the API server (and every watch) under the benches that follow.
        for n in (base_ns, ns):
            core.delete_namespace(n)
        wait_until_gone(core.read_namespace, ns, what=f"namespace {ns}", timeout=300)
        wait_until_gone(core.read_namespace, base_ns, what=f"namespace {base_ns}", timeout=60)
        controller.stop()
