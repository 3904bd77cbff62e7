"""The webhook's figures beside the Go baseline of shared/bench, in one run on one machine:

- direct HTTPS admission load (keep-alive, 8 connections) with the realistic review.json, at 300 req/s
  and saturated: p50/p99 and requests/s, for fluid-webhook with its default workers (one per CPU of
  this machine, ``webhook/workers.py``) and for the minimal Go webhook, and for the floor under
  fluid-webhook: its own server, settings and workers answering bytes given beforehand
  (tests/bench/pyfloor.py), which says how much of a gap to Go is the server's and how much the
  webhook's work. The load generator shares the machine's cores with whichever server it loads;
- pod-create latency through the API server with and without the injection label (same run);
- the webhook's RSS per process (each worker, against the 60 MB goal) and in total (the supervisor
  and its workers), and API requests per admission (its cache-miss counter over the load);
- how fast a pod naming 5,000 datasets is answered (issue 11: it once kept the webhook busy for
  more than 20 minutes; now it is one short denial, with no lookup).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes import client, config

from kubectl_fluid.api import names
from tests.bench import svg
from tests.bench.bench_controller import rss_mb
from tests.bench.report import Report, at_most, percentile, ratio_at_least, ratio_at_most
from tests.e2e.fluid import (
    REPO,
    ControllerProcess,
    WebhookProcess,
    free_port,
    install,
    kubectl,
    service_account_kubeconfig,
)
from tests.e2e.wait import eventually
from tests.procs import children

SHARED_BENCH = Path(os.environ.get("SHARED_BENCH", REPO.parent / "shared" / "bench"))
CACHE = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid")) / "bench"
LOAD_SECONDS = "10s"
PODS = 100


def go_tool(name: str, source: Path | None = None) -> Path:
    """Build a Go command once into the cache (outside the repo): shared/bench/{name}, or ``source``
    (this repo's own, cached under a digest of its code so that an edit rebuilds it)."""
    out = CACHE / name
    if source is not None:
        digest = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(source.glob("*.go")))).hexdigest()
        out = CACHE / f"{name}-{digest[:12]}"
    if not out.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GOFLAGS": "-buildvcs=false", "CGO_ENABLED": "0"}
        cwd = source or SHARED_BENCH / name
        subprocess.run(["go", "build", "-o", str(out), "."], cwd=cwd, env=env, check=True)
    return out


def latencies_ms(url: str, out: Path) -> list[float]:
    """Every request's latency at 300 req/s over 8 connections (tests/bench/latencies), for the picture."""
    tool = go_tool("latencies", Path(__file__).parent / "latencies")
    body = str(SHARED_BENCH / "review.json")
    cmd = [str(tool), "-url", url, "-body", body, "-rate", "300", "-d", LOAD_SECONDS, "-c", "8",
           "-out", str(out)]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, check=True)
    if "errors=0 " not in run.stdout:
        raise RuntimeError(f"latency run saw errors: {run.stdout.strip()}")
    return [int(line) / 1000 for line in out.read_text().split()]


def admload(url: str, rate: int) -> dict[str, float]:
    run = subprocess.run(
        [str(go_tool("admload")), "-url", url, "-body", str(SHARED_BENCH / "review.json"), "-rate", str(rate),
         "-d", LOAD_SECONDS, "-c", "8"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    line = run.stdout.strip().splitlines()[-1]
    figures = {k: float(v.rstrip("ms")) for k, v in re.findall(r"(\w+)=([\d.]+)(?:ms)?", line)}
    if figures.get("errors", 0):
        raise RuntimeError(f"admission load saw errors: {line}")
    return figures


def run(report: Report, kubeconfig: Path, workdir: Path) -> None:
    if shutil.which("go") is None or not (SHARED_BENCH / "review.json").exists():
        print(f"[bench] webhook figures skipped: needs Go and {SHARED_BENCH} (set SHARED_BENCH)")
        return
    install(kubeconfig)
    kubectl(
        kubeconfig, "apply", "-f", str(REPO / "manifests" / "samples" / "cacheruntimeclass-mooncake.yaml")
    )
    k8s = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(k8s)
    custom = client.CustomObjectsApi(k8s)
    ns = "team-a"  # review.json's namespace
    bench_ns = f"bench-pods-{secrets.token_hex(3)}"
    ensure_namespaces(core, [ns, bench_ns])

    controller, webhook = product_processes(kubeconfig, core, workdir, "bench-wh")
    go: subprocess.Popen[bytes] | None = None
    try:
        controller.start()
        controller.wait_ready(60)
        ready_datasets(core, custom, [ns, bench_ns])
        webhook.start()
        webhook.register()
        webhook.wait_ready(60)
        admission = client.AdmissionregistrationV1Api(k8s)
        eventually(lambda: webhook.ca_bundle_patched(admission), "caBundle patched")

        url = f"{webhook.url}{names.WEBHOOK_MUTATE_PATH}"
        api_before = webhook.metric("fluid_webhook_api_requests_total")
        adm_before = webhook.metric("fluid_webhook_admissions_total")
        assert webhook.proc is not None
        ours, ours_each = load(url, webhook.proc.pid, workdir / "latencies-fluid.txt")
        admissions = webhook.metric("fluid_webhook_admissions_total") - adm_before
        api_requests = webhook.metric("fluid_webhook_api_requests_total") - api_before
        bare = floor_load(webhook, workdir, workers=len(children(webhook.proc.pid)) or 1)
        go, go_url = start_go_webhook()
        theirs, go_each = load(go_url, go.pid, workdir / "latencies-go.txt")
        report_load(report, ours, theirs, bare)
        report.picture(
            "admission-latency.svg",
            svg.cdf(
                f"Admission latency at 300 req/s, 8 connections ({len(ours_each)} / {len(go_each)} requests)",
                {"fluid-webhook": ours_each, "Go webhook": go_each},
            ),
        )
        report.add(
            "API requests per admission", api_requests / max(admissions, 1), "req", goal=at_most(0, "req")
        )
        report.add("pod naming 5,000 datasets answered in", fan_out_ms(webhook), "ms")

        with_label, without = pod_create_latency(core, bench_ns)
        report.add("pod create p50 with injection", with_label, "ms", "same pod unlabelled", without)
        report.add("of which: webhook overhead p50", with_label - without, "ms")
    finally:
        if go is not None:
            go.kill()
            go.wait()
        webhook.stop()
        client.AdmissionregistrationV1Api(k8s).delete_mutating_webhook_configuration(webhook.config_name)
        controller.stop()
        core.delete_namespace(bench_ns)


def product_processes(
    kubeconfig: Path, core: client.CoreV1Api, workdir: Path, identity: str
) -> tuple[ControllerProcess, WebhookProcess]:
    """The controller and the webhook as local processes, each with its own ServiceAccount's
    kubeconfig (written under ``workdir``, named after ``identity``), not yet started."""
    controller = ControllerProcess(
        service_account_kubeconfig(kubeconfig, core, workdir / f"{identity}-c.kubeconfig"), workdir, identity
    )
    webhook = WebhookProcess(
        service_account_kubeconfig(
            kubeconfig, core, workdir / f"{identity}-w.kubeconfig", account="fluid-webhook"
        ),
        kubeconfig,
        workdir,
    )
    return controller, webhook


# At 300 req/s, saturated, and the RSS (MB) of each process: the server's, or a supervisor's and then
# its workers'.
Load = tuple[dict[str, float], dict[str, float], list[float]]


def load(url: str, pid: int, latencies: Path) -> tuple[Load, list[float]]:
    """One webhook's figures: after a warm-up (connections, caches, code paths), 300 req/s and
    saturated, its RSS after them, then every request's latency at 300 req/s for the picture."""
    admload(url, 300)
    fixed, saturated = admload(url, 300), admload(url, 0)
    figures = (fixed, saturated, [rss_mb(p) for p in [pid, *children(pid)]])
    return figures, latencies_ms(url, latencies)


def report_load(report: Report, ours: Load, go: Load, floor: Load) -> None:
    report.add("admission p50 at 300 req/s", ours[0]["p50"], "ms", "Go webhook", go[0]["p50"])
    report.add(
        "admission p99 at 300 req/s",
        ours[0]["p99"],
        "ms",
        "Go webhook",
        go[0]["p99"],
        goal=ratio_at_most(1.3),
    )
    report.add(
        "floor: the webhook's server, fixed answer, p99 at 300 req/s", floor[0]["p99"], "ms", "Go webhook",
        go[0]["p99"],
    )  # fmt: skip
    report.add("admission p99 saturated", ours[1]["p99"], "ms", "Go webhook", go[1]["p99"])
    report.add(
        "admissions per second saturated",
        ours[1]["rps"],
        "req/s",
        "Go webhook",
        go[1]["rps"],
        goal=ratio_at_least(1.0),
    )
    report.add(
        "floor: the webhook's server, fixed answer, saturated", floor[1]["rps"], "req/s", "Go webhook",
        go[1]["rps"],
    )  # fmt: skip
    # ours[2]: the supervisor, then each worker (one process alone: itself).
    workers = ours[2][1:] or ours[2]
    report.add(
        f"webhook RSS after load, largest of {len(workers)} worker(s)",
        max(workers),
        "MB",
        "Go webhook",
        go[2][0],
        goal=at_most(60, "MB"),
    )
    report.add(
        "webhook RSS after load, total (supervisor + workers)", sum(ours[2]), "MB", "Go webhook", go[2][0]
    )


def fan_out_ms(webhook: WebhookProcess) -> float:
    """review.json with 5,000 dataset names: the time to its (denying) answer, median of 5."""
    review = json.loads((SHARED_BENCH / "review.json").read_text())
    annotations = review["request"]["object"]["metadata"].setdefault("annotations", {})
    annotations[names.ANNOTATION_DATASET] = ",".join(f"ds-{i}" for i in range(5000))
    body = json.dumps(review).encode()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        status, answer = webhook.request("POST", names.WEBHOOK_MUTATE_PATH, body)
        times.append((time.perf_counter() - t0) * 1000)
        if status != 200 or json.loads(answer)["response"]["allowed"]:
            raise RuntimeError(f"a pod naming 5,000 datasets was not denied: {status} {answer[:300]!r}")
    return percentile(times, 50)


def ensure_namespaces(core: client.CoreV1Api, namespaces: list[str]) -> None:
    for n in namespaces:
        if not core.list_namespace(field_selector=f"metadata.name={n}").items:
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=n)))
        eventually(partial(core.read_namespaced_service_account, "default", n), f"ServiceAccount {n}/default")


def ready_datasets(core: client.CoreV1Api, custom: client.CustomObjectsApi, namespaces: list[str]) -> None:
    """ds1 and ds2, bound by the controller, in each namespace."""
    for target in namespaces:
        for ds in ("ds1", "ds2"):
            dataset(custom, target, ds)
    for target in namespaces:
        for ds in ("ds1", "ds2"):
            cm = names.runtime_config_configmap(ds)

            def exists(cm: str = cm, target: str = target) -> Any:
                return core.read_namespaced_config_map(cm, target)

            eventually(exists, f"runtime config of {target}/{ds}")


def floor_load(webhook: WebhookProcess, workdir: Path, workers: int) -> Load:
    """The floor's figures (tests/bench/pyfloor.py on the webhook's certificate and with as many
    workers, answering what the webhook answered to review.json)."""
    status, answer = webhook.request(
        "POST", names.WEBHOOK_MUTATE_PATH, (SHARED_BENCH / "review.json").read_bytes()
    )
    if status != 200 or not json.loads(answer)["response"]["allowed"]:
        raise RuntimeError(f"the webhook did not admit review.json: {status} {answer[:300]!r}")
    (workdir / "floor-answer.json").write_bytes(answer)
    assert webhook.ca is not None
    port = free_port()
    floor = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.pyfloor", f"--port={port}", f"--cert-dir={webhook.ca.parent}",
         f"--answer={workdir / 'floor-answer.json'}", f"--workers={workers}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"https://127.0.0.1:{port}{names.WEBHOOK_MUTATE_PATH}"
    try:
        eventually(lambda: _answers(url), "the floor server", timeout=20)
        return load(url, floor.pid, workdir / "latencies-floor.txt")[0]
    finally:
        floor.terminate()  # its supervisor stops its workers
        floor.wait()


def start_go_webhook() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    go = subprocess.Popen(
        [str(go_tool("gowebhook")), "-addr", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"https://127.0.0.1:{port}{names.WEBHOOK_MUTATE_PATH}"
    eventually(lambda: _answers(url), "the Go webhook", timeout=20)
    return go, url


def _answers(url: str) -> bool:
    import ssl
    import urllib.request

    ctx = ssl._create_unverified_context()
    body = (SHARED_BENCH / "review.json").read_bytes()
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=2) as r:
        return bool(r.status == 200)


def dataset(custom: client.CustomObjectsApi, namespace: str, name: str) -> None:
    g, v = names.GROUP, names.VERSION
    ds = {"apiVersion": names.API_VERSION, "kind": "Dataset", "metadata": {"name": name},
          "spec": {"mounts": [{"name": "m", "mountPoint": "s3://bucket/x"}]}}  # fmt: skip
    rt = {"apiVersion": names.API_VERSION, "kind": "CacheRuntime", "metadata": {"name": name},
          "spec": {"runtimeClassName": "mooncake", "client": {"disabled": True}}}  # fmt: skip
    for plural, body in (("datasets", ds), ("cacheruntimes", rt)):
        try:
            custom.create_namespaced_custom_object(g, v, namespace, plural, body)
        except client.ApiException as e:
            if e.status != 409:
                raise


def pod_create_latency(core: client.CoreV1Api, namespace: str) -> tuple[float, float]:
    """p50 ms of creating a pod, labelled for injection or not, alternating so both see the same load."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for i in range(PODS):
        for labelled in (True, False):
            meta: dict[str, Any] = {
                "name": f"p{i}-{int(labelled)}",
                "annotations": {names.ANNOTATION_DATASET: "ds1,ds2"},
            }
            if labelled:
                meta["labels"] = {names.LABEL_INJECT: "true"}
            body: Any = {"metadata": meta, "spec": {"containers": [{"name": "app", "image": "x"}]}}
            t0 = time.perf_counter()
            core.create_namespaced_pod(namespace, body)
            times[labelled].append((time.perf_counter() - t0) * 1000)
    return percentile(times[True], 50), percentile(times[False], 50)
