"""The controller at scale: N Dataset/CacheRuntime pairs applied at once (500; 2,000 with ``--scale``)
→ seconds until every Dataset is Bound with its runtime-config ConfigMap correct, reconcile p50/p99,
API writes over 30 s once the cluster is steady, the controller's RSS.

Baseline, same run, same cluster, before the controller starts: the same pairs created by the same
client, and every object the controller writes for them written directly, by the controller's
ServiceAccount (``write_directly``), with the concurrency the controller uses: ``WORKERS`` pairs at a
time and as many requests in flight (its ``--workers``), each pair's writes in the waves the
controller sends them (the finalizer, the ConfigMap and Services; then the StatefulSets, the PV and
its PVC; then both statuses), the same bodies by the same verbs. What remains between the two is the
controller's own cost: watching, reading, deciding, and reacting to its own writes. The time one
pair's three waves take there is the baseline of a reconcile pass's duration: a pass that writes
a pair's children cannot be shorter than the API server takes to accept them under the same load.

Both windows are watched, not polled: the product's end is seen through watches of the namespace's
Datasets and ConfigMaps (listing all of them every half second, as before, loaded the API server with
megabytes of JSON a second at 500 pairs, in the product's window only). The StatefulSets' pods, which
kube-controller-manager creates and kwok runs, come in both windows alike (the baseline writes the
same StatefulSets at the same pace); the count of pods at the end of each window is printed beside
it, so a product slower than its baseline shows how much more of that churn its window holds.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config

from controller.conditions import set_condition
from controller.desired import desired_children
from controller.reconciler import RESOURCE_OF_KIND
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.kube import http
from kubectl_fluid.kube.client import connect
from kubectl_fluid.kube.resources import CONFIGMAPS, PERSISTENT_VOLUMES, PODS, STATEFULSETS, Resource
from kubectl_fluid.kube.watchcache import WatchCache
from kubectl_fluid.runtimeconfig import build_runtime_config, render_json, render_sh
from tests.bench import promtext, svg
from tests.bench.report import Report, at_most, percentile, ratio_at_most
from tests.e2e.fluid import (
    MANIFESTS,
    ControllerProcess,
    install,
    kubectl,
    lagging,
    service_account_kubeconfig,
    wait_until_gone,
    workload_counts,
)

PAIRS = 500
SCALE_PAIRS = 2000
# How long a steady cluster is watched for writes it should not get.
STEADY_SECONDS = 30.0
WORKERS = 8  # the controller's --workers default
CLIENT_CONCURRENCY = 16  # the user's client creating the pairs, in both runs
DATASETS = Resource(names.GROUP, names.VERSION, "datasets", "Dataset", True)
RUNTIMES = Resource(names.GROUP, names.VERSION, "cacheruntimes", "CacheRuntime", True)
UID = "00000000-0000-0000-0000-0000000000ff"  # stands for the runtime's uid until it has one


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


def inputs(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[tuple[Resource, dict[str, Any]]]:
    """Dataset and CacheRuntime of each pair one after the other, as a file of pairs applies them."""
    return [item for ds, rt in pairs for item in ((DATASETS, ds), (RUNTIMES, rt))]


async def create_all(
    api: Any, namespace: str, items: list[tuple[Resource, dict[str, Any]]]
) -> list[dict[str, Any]]:
    sem = asyncio.Semaphore(CLIENT_CONCURRENCY)

    async def one(resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        async with sem:
            created: dict[str, Any] = await http.request(
                api, "POST", resource.collection_path(namespace), body=body
            )
            return created

    return list(await asyncio.gather(*(one(*item) for item in items)))


# ---------------------------------------------------------------------- baseline


def pair_writes(
    ds: dict[str, Any], rt: dict[str, Any], crc: CacheRuntimeClass, namespace: str
) -> list[list[tuple[str, str, str, str]]]:
    """(method, path, content type, body) of every write the controller sends for one pair, in its
    waves, with ``UID`` where the runtime's uid goes: built before the clock starts."""
    ds_model = Dataset.model_validate({**ds, "metadata": {**ds["metadata"], "namespace": namespace}})
    rt_meta = {**rt["metadata"], "namespace": namespace, "uid": UID}
    children = desired_children(
        ds_model, CacheRuntime.model_validate({**rt, "metadata": rt_meta}), crc, namespace
    )
    name = ds["metadata"]["name"]

    def apply(obj: dict[str, Any]) -> tuple[str, str, str, str]:
        resource = RESOURCE_OF_KIND[obj["kind"]]
        path = resource.object_path(obj["metadata"].get("namespace"), obj["metadata"]["name"])
        query = f"?fieldManager={names.CONTROLLER_FIELD_MANAGER}&force=true"
        return "PATCH", path + query, http.APPLY_PATCH, json.dumps(obj)

    def status(resource: Resource, body: dict[str, Any]) -> tuple[str, str, str, str]:
        path = resource.object_path(namespace, name) + "/status"
        return "PATCH", path, http.MERGE_PATCH, json.dumps({"status": body})

    ready = set_condition([], names.CONDITION_READY, True, "Reconciled", "children are up to date")
    components = {c: {"phase": "NotReady", "desiredReplicas": 1} for c in ("master", "worker")}
    runtime_status = {
        "valueFile": names.runtime_config_configmap(name),
        **components,
        "client": {"phase": ""},
        "observedGeneration": 1,
        "conditions": ready,
    }
    dataset_status = {
        "phase": "Bound",
        "runtimes": [{"name": name, "namespace": namespace, "category": names.RUNTIME_CATEGORY}],
        "conditions": set_condition([], names.CONDITION_READY, True, "DatasetReady", "bound"),
    }
    finalizer = json.dumps(
        [{"op": "add", "path": "/metadata/finalizers", "value": [names.DATASET_FINALIZER]}]
    )
    return [
        [
            ("PATCH", DATASETS.object_path(namespace, name), http.JSON_PATCH, finalizer),
            apply(children.configmap),
            *(apply(s) for s in children.services),
        ],
        [*(apply(s) for s in children.statefulsets), apply(children.pv), apply(children.pvc)],
        [status(RUNTIMES, runtime_status), status(DATASETS, dataset_status)],
    ]


async def write_directly(
    api: Any,
    writer: Any,
    namespace: str,
    pairs: list[tuple[dict[str, Any], dict[str, Any]]],
    crc: CacheRuntimeClass,
) -> tuple[float, list[tuple[float, float]], list[float]]:
    """``api`` creates the pairs, as the user does; ``writer`` sends what the controller sends, with
    its credentials (its ServiceAccount token, its RBAC, its API priority level, not an exempt
    system:masters certificate): the API server does the same work per request in both runs.
    Seconds until every write was accepted, when each pair's last one was, and how long each pair's
    writes took."""
    planned = [pair_writes(ds, rt, crc, namespace) for ds, rt in pairs]
    uids: dict[str, asyncio.Future[str]] = {}
    t0 = time.monotonic()
    loop = asyncio.get_running_loop()
    for ds, _ in pairs:
        uids[ds["metadata"]["name"]] = loop.create_future()

    async def create() -> None:
        sem = asyncio.Semaphore(CLIENT_CONCURRENCY)

        async def one(resource: Resource, body: dict[str, Any]) -> None:
            async with sem:
                made = await http.request(api, "POST", resource.collection_path(namespace), body=body)
            if resource is RUNTIMES:
                uids[made["metadata"]["name"]].set_result(made["metadata"]["uid"])

        await asyncio.gather(*(one(*item) for item in inputs(pairs)))

    slots = asyncio.Semaphore(WORKERS)  # the controller's API calls in flight

    async def send(method: str, path: str, content_type: str, body: str) -> None:
        target, _, query = path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&")) if query else None
        async with slots:
            await http.request(writer, method, target, params=params, body=body, content_type=content_type)

    work = asyncio.Queue[int]()
    for i in range(len(pairs)):
        work.put_nowait(i)

    async def worker() -> None:
        while not work.empty():
            i = work.get_nowait()
            uid = await uids[pairs[i][0]["metadata"]["name"]]
            started = time.monotonic()
            for wave in planned[i]:
                await asyncio.gather(*(send(m, p, c, b.replace(UID, uid)) for m, p, c, b in wave))
            done.append((time.monotonic() - t0, len(done) + 1))
            took.append(time.monotonic() - started)

    done: list[tuple[float, float]] = []  # (seconds, pairs whose every write was accepted)
    took: list[float] = []
    await asyncio.gather(create(), *(worker() for _ in range(WORKERS)))
    return time.monotonic() - t0, done, took


async def remove_directly(
    api: Any, namespace: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]]
) -> None:
    """Undo the baseline before the controller starts: it would otherwise find those pairs too."""
    sem = asyncio.Semaphore(CLIENT_CONCURRENCY)
    remove = json.dumps([{"op": "remove", "path": "/metadata/finalizers"}])

    async def one(name: str) -> None:
        async with sem:
            await http.request(
                api, "PATCH", DATASETS.object_path(namespace, name), body=remove, content_type=http.JSON_PATCH
            )
            await http.request(
                api, "DELETE", PERSISTENT_VOLUMES.object_path(None, names.dataset_pv(namespace, name))
            )

    await asyncio.gather(*(one(ds["metadata"]["name"]) for ds, _ in pairs))


# ---------------------------------------------------------------------- the controller


@dataclass
class Convergence:
    pairs: int
    converged: float
    """Seconds from the first pair created to every Dataset Bound with its ConfigMap correct."""
    applying: float
    settled: float
    """Seconds after that until the cluster is steady (``steady``)."""
    baseline: float
    baseline_pairs: list[float]
    """Seconds each pair's three waves took, written directly (from its runtime's uid known)."""
    cpu: float
    """The controller's CPU seconds from the first pair created to all converged."""


def report_converged(report: Report, controller: ControllerProcess, run: Convergence) -> None:
    pairs = run.pairs
    assert controller.proc is not None
    _, metrics_text = controller.get("/metrics")
    report.add(
        f"{pairs} pairs applied -> all Datasets Bound, ConfigMaps correct",
        run.converged,
        "s",
        f"{pairs} pairs and all their children and statuses written directly",
        run.baseline,
        goal=ratio_at_most(1.5),
    )
    report.add(f"of which: creating the {2 * pairs} objects", run.applying, "s")
    # On a machine whose cores the API server also needs, the controller's CPU is taken from it.
    report.add("controller CPU until converged", run.cpu, "s")
    for q, goal in ((50, None), (99, at_most(300, "ms"))):
        report.add(
            f"reconcile p{q}",
            1000 * histogram_quantile(metrics_text, RECONCILE_SECONDS, q / 100),
            "ms",
            f"one pair's writes sent directly, p{q}",
            1000 * percentile(run.baseline_pairs, q),
            goal=goal,
        )
    report.add(
        f"API writes of the controller until {pairs} converged", counter_total(metrics_text, WRITES), "writes"
    )
    report.add("after converging: workloads' pods settled, shown in every runtime's status", run.settled, "s")
    report.add(
        f"API writes in {STEADY_SECONDS:g} s of a steady cluster ({pairs} pairs)",
        steady_writes(controller),
        "writes",
        goal=at_most(0, "writes"),
    )
    report.add("controller RSS after converging", rss_mb(controller.proc.pid), "MB")
    report.add(
        f"controller peak RSS ({pairs} pairs)",
        rss_mb(controller.proc.pid, "VmHWM"),
        "MB",
        goal=at_most(150, "MB") if pairs >= SCALE_PAIRS else None,
    )


RECONCILE_SECONDS = "fluid_controller_reconcile_duration_seconds"
WRITES = "fluid_controller_api_writes_total"


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
    return counter_total(after, WRITES) - counter_total(before, WRITES)


def histogram_quantile(text: str, name: str, q: float) -> float:
    """The q-quantile of a histogram over all its series, 0 when it has seen nothing."""
    return promtext.quantile(q, promtext.buckets(text, name, {})) or 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def converged_count(
    datasets: dict[str, Any], configmaps: dict[str, Any], expected: dict[str, tuple[str, str]]
) -> int:
    """Pairs whose Dataset is Bound and whose ConfigMap holds what the runtime config renders to."""
    correct = {
        cm["metadata"]["name"]
        for cm in configmaps["items"]
        if expected.get(cm["metadata"]["name"])
        == (cm.get("data", {}).get(names.RUNTIME_JSON_KEY), cm.get("data", {}).get(names.RUNTIME_SH_KEY))
    }
    return sum(
        1
        for ds in datasets["items"]
        if (ds.get("status") or {}).get("phase") == "Bound"
        and names.runtime_config_configmap(ds["metadata"]["name"]) in correct
    )


async def count_pods(api: Any, namespace: str) -> int:
    listed = await http.request(api, "GET", PODS.collection_path(namespace), params={"limit": "5000"})
    return len(listed.get("items", []))


async def steady(api: Any, namespace: str, still: float = 10.0, timeout: float = 900) -> float:
    """Seconds until the cluster stops changing: the StatefulSets' pods are as Ready as they will get
    (counts unchanged for ``still`` seconds; pods beyond the nodes' capacity stay Pending) and every
    runtime's status shows them. Only then may no write be expected."""
    t0 = time.monotonic()
    last, since = None, t0
    while True:
        sts, rts = await asyncio.gather(
            http.request(api, "GET", STATEFULSETS.collection_path(namespace)),
            http.request(api, "GET", RUNTIMES.collection_path(namespace)),
        )
        counts = workload_counts(sts)
        now = time.monotonic()
        if counts != last:
            last, since = counts, now
        elif now - since >= still and not lagging(rts, counts):
            return now - t0
        if now - t0 > timeout:
            raise RuntimeError(
                f"the cluster did not settle in {timeout:.0f} s: {lagging(rts, counts)[:5]} lag"
            )
        await asyncio.sleep(1.0)


async def apply_pairs(
    kubeconfig: Path,
    ns: str,
    pairs: list[tuple[dict[str, Any], dict[str, Any]]],
    expected: dict[str, tuple[str, str]],
    pid: int,
) -> tuple[float, float, float, list[tuple[float, float]], float]:
    """Seconds from the first pair created to every Dataset Bound with its ConfigMap correct, of which
    creating them, and then until the cluster is steady; the count converged every half second; and
    the CPU seconds process ``pid`` (the controller) spent until all converged.
    The end is seen through watches, opened before the clock starts: no poll loads the API server in
    the product's window."""
    api = await connect(str(kubeconfig))
    datasets, configmaps = WatchCache(api, DATASETS, namespace=ns), WatchCache(api, CONFIGMAPS, namespace=ns)
    watches = [asyncio.create_task(c.run()) for c in (datasets, configmaps)]
    try:
        await asyncio.gather(datasets.synced.wait(), configmaps.synced.wait())
        cpu0 = cpu_seconds(pid)
        t0 = time.monotonic()
        await create_all(api, ns, inputs(pairs))
        applied = time.monotonic() - t0
        samples: list[tuple[float, float]] = []
        while True:
            count = converged_count({"items": datasets.items()}, {"items": configmaps.items()}, expected)
            samples.append((time.monotonic() - t0, count))
            if count >= len(pairs):
                break
            if time.monotonic() - t0 > 1800:
                raise RuntimeError(f"{len(pairs)} pairs not converged after 1800 s")
            await asyncio.sleep(0.5)
        converged = time.monotonic() - t0
        cpu = cpu_seconds(pid) - cpu0
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
    pods = await count_pods(api, ns)
    print(
        f"[bench] {len(pairs)} pairs converged in {converged:.1f} s ({pods} pods by then); "
        "waiting for a steady cluster"
    )
    return converged, applied, await steady(api, ns), samples, cpu


def run(report: Report, kubeconfig: Path, workdir: Path, pairs_count: int = PAIRS) -> None:
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
    pairs = [pair(i) for i in range(pairs_count)]
    expected = {}
    for ds, rt in pairs:
        cfg = build_runtime_config(Dataset.model_validate(ds), CacheRuntime.model_validate(rt), crc, ns)
        expected[names.runtime_config_configmap(ds["metadata"]["name"])] = (render_json(cfg), render_sh(cfg))

    sa = service_account_kubeconfig(kubeconfig, core, workdir / "controller.kubeconfig")

    async def baseline() -> tuple[float, list[tuple[float, float]], list[float], int]:
        api = await connect(str(kubeconfig))
        seconds, progress, took = await write_directly(api, await connect(str(sa)), base_ns, pairs, crc)
        pods = await count_pods(api, base_ns)
        await remove_directly(api, base_ns, pairs)
        return seconds, progress, took, pods

    base_seconds, base_progress, base_pairs, base_pods = asyncio.run(baseline())
    print(
        f"[bench] baseline: {pairs_count} pairs and their children written directly in {base_seconds:.1f} s "
        f"({base_pods} pods by then)"
    )
    core.delete_namespace(base_ns)
    wait_until_gone(core.read_namespace, base_ns, what=f"namespace {base_ns}", timeout=600)

    controller = ControllerProcess(
        sa, workdir, f"bench-{secrets.token_hex(2)}", extra=["--log-level=warning"]
    )
    controller.start()
    try:
        controller.wait_ready(60)

        assert controller.proc is not None
        converged, applying, settled, progress, cpu = asyncio.run(
            apply_pairs(kubeconfig, ns, pairs, expected, controller.proc.pid)
        )
        report.picture(
            "controller-convergence.svg",
            svg.timeline(
                f"{pairs_count} Dataset/CacheRuntime pairs applied at once",
                {
                    "controller: Datasets Bound, ConfigMaps correct": progress,
                    "baseline: every child and status written directly": base_progress,
                },
                "pairs",
            ),
        )
        convergence = Convergence(pairs_count, converged, applying, settled, base_seconds, base_pairs, cpu)
        report_converged(report, controller, convergence)
    finally:
        # Deleted while the controller still runs: it removes the Datasets' finalizers. Stopped first,
        # the namespace would stay Terminating, and the namespace controller's retries over 500 pairs
        # would load the API server (and every watch) under the benches that follow.
        core.delete_namespace(ns)
        wait_until_gone(core.read_namespace, ns, what=f"namespace {ns}", timeout=900)
        controller.stop()
