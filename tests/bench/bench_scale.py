"""The cluster-scale scenario (``make bench SCALE=1``, or ``ONLY=scale``), on kwok nodes:

- 200 nodes; 100 Deployments x 100 replicas labelled for injection (10,000 pods), created by
  kube-controller-manager's ReplicaSet controller through the webhook, after 2,000 pods of the same
  Deployments unlabelled (the objectSelector keeps the webhook out of their path): pod-create p50/p99
  as the API server measures them (``apiserver_request_duration_seconds``, POST pods), for each; the
  API server's own timing of its calls to the webhook; the webhook's CPU seconds and peak RSS over the
  10,000; API requests per admission; admissions by result (no error, no denial); every pod injected;
- 200 nodes x 5 mount keys of FuseMount objects: ``kubectl-fluid mounts`` beside ``kubectl get
  fusemounts``;
- 2,000 Datasets across 20 namespaces: ``kubectl-fluid datasets -A`` beside ``kubectl get datasets -A``
  (in the same cluster, with the 12,000 pods: ``datasets`` reads the injected ones too), and what
  reading the injected pods costs by itself: ``kubectl get pods -A -l done.sidecar.fluid.io/inject=true``
  (what an operator would type to count them), and the API server's answers alone (the pages the
  command asks for, in protobuf, read off the connection and not decoded: no client that reads the
  pods can take less).

Pods are created at kube-controller-manager's own pace (its client's default 20 requests/s), which is
what sets this scenario's length: about 10 minutes for the 12,000 pods. The unlabelled pods stay while
the labelled ones are created, so the webhook's run sees the larger cluster.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config

from kubectl_fluid.api import names
from kubectl_fluid.api.fusemount import FuseMountSpec, FuseMountStatus, PublishTarget, StagedVolume
from kubectl_fluid.cli.podview import injected_datasets
from tests.bench import promtext
from tests.bench.bench_cli import BIN, median_ms, plugin_env
from tests.bench.bench_controller import cpu_seconds, rss_mb
from tests.bench.bench_webhook import ensure_namespaces, product_processes, ready_datasets
from tests.bench.report import Report, at_most
from tests.e2e.fluid import (
    MANIFESTS,
    WebhookProcess,
    install,
    kubectl,
    kubectl_binary,
    metric_sum,
)
from tests.e2e.wait import eventually

POD_CREATES = {"verb": "POST", "resource": "pods", "subresource": "", "dry_run": ""}
DATASETS_DS = "ds1,ds2"  # ready_datasets() makes both in every namespace given
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"  # localcluster.kwoknodes: the nodes kwok manages


@dataclass(frozen=True)
class Size:
    nodes: int = 200
    deployments: int = 100
    replicas: int = 100
    plain_deployments: int = 20  # unlabelled, the same replicas each
    mount_keys: int = 5
    datasets: int = 2000
    dataset_namespaces: int = 20


FULL = Size()


def run(report: Report, kubeconfig: Path, workdir: Path, size: Size = FULL) -> None:
    t_start = time.monotonic()
    install(kubeconfig)
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml"))
    k8s = config.new_client_from_config(config_file=str(kubeconfig))
    core, custom = client.CoreV1Api(k8s), client.CustomObjectsApi(k8s)
    tag = secrets.token_hex(3)
    plain_ns, injected_ns = f"scale-plain-{tag}", f"scale-injected-{tag}"
    ds_namespaces = [f"scale-ds-{tag}-{i}" for i in range(size.dataset_namespaces)]
    ensure_namespaces(core, [plain_ns, injected_ns])
    controller, webhook = product_processes(kubeconfig, core, workdir, "bench-scale")
    mounts: list[str] = []
    try:
        controller.start()
        controller.wait_ready(60)
        ready_datasets(core, custom, [plain_ns, injected_ns])
        # The 2,000 Datasets below are only listed: the controller has no part in that figure.
        controller.stop()
        webhook.start()
        webhook.register()
        webhook.wait_ready(60)
        admission = client.AdmissionregistrationV1Api(k8s)
        eventually(lambda: webhook.ca_bundle_patched(admission), "caBundle patched")
        add_nodes(core, size.nodes)
        pods_through_the_webhook(report, kubeconfig, webhook, (plain_ns, injected_ns), size)
        mounts = create_fusemounts(custom, size.nodes, size.mount_keys)
        create_datasets(custom, core, ds_namespaces, size.datasets)
        listings(report, kubeconfig, workdir, len(mounts), size)
    finally:
        webhook.stop()
        client.AdmissionregistrationV1Api(k8s).delete_mutating_webhook_configuration(webhook.config_name)
        controller.stop()
        cleanup(core, custom, [plain_ns, injected_ns, *ds_namespaces], mounts)
    report.add("scale scenario took", time.monotonic() - t_start, "s")


def pods_through_the_webhook(
    report: Report, kubeconfig: Path, webhook: WebhookProcess, namespaces: tuple[str, str], size: Size
) -> None:
    """The unlabelled pods, then the labelled ones, each created by their Deployments to the last."""
    k8s = config.new_client_from_config(config_file=str(kubeconfig))
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    plain_ns, injected_ns = namespaces
    before = api_metrics(kubeconfig)
    plain = size.plain_deployments * size.replicas
    create_deployments(apps, plain_ns, size.plain_deployments, size.replicas, labelled=False)
    wait_pods(core, plain_ns, plain, "unlabelled")
    middle = api_metrics(kubeconfig)

    assert webhook.proc is not None
    pid = webhook.proc.pid
    wh_before, cpu_before, t0 = webhook_metrics(webhook), cpu_seconds(pid), time.monotonic()
    injected = size.deployments * size.replicas
    create_deployments(apps, injected_ns, size.deployments, size.replicas, labelled=True)
    wait_pods(core, injected_ns, injected, "labelled for injection")
    wall, cpu = time.monotonic() - t0, cpu_seconds(pid) - cpu_before
    wh_after, after = webhook_metrics(webhook), api_metrics(kubeconfig)

    report_pod_creates(report, (before, middle, after), plain, injected)
    inside = promtext.difference(
        promtext.buckets(wh_after, "fluid_webhook_admission_duration_seconds", {}),
        promtext.buckets(wh_before, "fluid_webhook_admission_duration_seconds", {}),
    )
    for q in (0.5, 0.99):
        seconds = promtext.quantile(q, inside)
        if seconds is not None:
            report.add(
                f"of which: inside the webhook (its own histogram), p{round(q * 100)}", seconds * 1000, "ms"
            )
    report.add("webhook CPU over the injected pods", cpu, "s", "wall time of their creation", wall)
    report.add("webhook CPU per admission", cpu / max(injected, 1) * 1e6, "us")
    report.add(
        f"webhook peak RSS ({injected} admissions)", rss_mb(pid, "VmHWM"), "MB", goal=at_most(60, "MB")
    )
    admissions = delta(wh_after, wh_before, "fluid_webhook_admissions_total")
    api_requests = delta(wh_after, wh_before, "fluid_webhook_api_requests_total")
    report.add(
        "scale: API requests per admission", api_requests / max(admissions, 1), "req", goal=at_most(0, "req")
    )
    refused = sum(
        delta(wh_after, wh_before, "fluid_webhook_admissions_total", {"result": r})
        for r in ("error", "denied")
    )
    rejected = delta(after, middle, "apiserver_admission_webhook_rejection_count")
    report.add("admissions refused or failed", refused + rejected, "", goal=at_most(0, ""))
    missing = injected - count_injected(core, injected_ns)
    report.add("labelled pods without injection", missing, "", goal=at_most(0, ""))


def listings(report: Report, kubeconfig: Path, workdir: Path, mounts: int, size: Size) -> None:
    env = plugin_env(kubeconfig, workdir)
    kubectl_bin, plugin = kubectl_binary(), str(BIN / "kubectl-fluid")
    pods = (size.plain_deployments + size.deployments) * size.replicas
    report.add(
        f"kubectl-fluid mounts ({mounts} FuseMounts)",
        median_ms([plugin, "mounts"], env, rounds=5) / 1000,
        "s",
        "kubectl get fusemounts",
        median_ms([kubectl_bin, "get", "fusemounts"], env, rounds=5) / 1000,
        goal=at_most(1, "s"),
    )
    report.add(
        f"kubectl-fluid datasets -A ({size.datasets} Datasets, {pods} pods)",
        median_ms([plugin, "datasets", "-A"], env, rounds=5) / 1000,
        "s",
        "kubectl get datasets -A",
        median_ms([kubectl_bin, "get", "datasets", "-A"], env, rounds=5) / 1000,
        goal=at_most(1, "s"),
    )
    done = f"{names.LABEL_INJECT_DONE}={names.TRUE}"
    report.add(
        f"its pods alone: kubectl get pods -A -l {done}",
        median_ms([kubectl_bin, "get", "pods", "-A", "-l", done], env, rounds=5) / 1000,
        "s",
    )
    answers = pod_pages_seconds(kubeconfig)
    report.add("its pods alone: the API server's pages, not decoded", answers, "s")


def pod_pages_seconds(kubeconfig: Path, rounds: int = 5) -> float:
    """Median seconds to read every page of the injected pods as ``kubectl fluid datasets -A`` asks
    for them (protobuf, 500 a page, the next asked for from the head), decoding nothing but the
    continue token."""
    from kubectl_fluid.kube import kubeconfig as kubeconfigs
    from kubectl_fluid.kube.protobuf import list_continue
    from kubectl_fluid.kube.resources import PODS
    from kubectl_fluid.kube.transport import POD_NAMES_AND_VOLUMES, Api, ListCodec

    undecoded = ListCodec(
        POD_NAMES_AND_VOLUMES.accept, POD_NAMES_AND_VOLUMES.head_token, lambda data: ([], list_continue(data))
    )
    query = {"labelSelector": f"{names.LABEL_INJECT_DONE}={names.TRUE}"}
    samples = []
    with Api(kubeconfigs.load(str(kubeconfig), None)) as api:
        for _ in range(rounds + 1):  # the first warms the connection and the server's caches
            t0 = time.perf_counter()
            pages = sum(1 for _ in api.pages(PODS.collection_path(None), query, codec=undecoded))
            samples.append(time.perf_counter() - t0)
    if pages < 2:
        raise RuntimeError(f"the injected pods came in {pages} page(s): is this the scale cluster?")
    return statistics.median(samples[1:])


# -- the cluster ----------------------------------------------------------------------------------


def add_nodes(core: client.CoreV1Api, wanted: int) -> None:
    """kwok nodes up to ``wanted`` (named as the test bed names its own), waited for Ready. A cluster
    without kwok's nodes (kind) keeps its own: pods that stay Pending are still created, which is
    what the figures are of."""
    from localcluster.kwoknodes import node_manifest

    nodes: list[Any] = core.list_node().items
    fake = [n for n in nodes if (n.metadata.annotations or {}).get(FAKE_NODE_ANNOTATION) == "fake"]
    if not fake:
        print(f"[bench] scale: no kwok nodes in this cluster; the {len(nodes)} nodes it has are used")
        return
    have = {n.metadata.name for n in nodes}
    missing = [f"kwok-node-{i}" for i in range(wanted) if f"kwok-node-{i}" not in have]
    manifest: Callable[[str], Any] = node_manifest
    parallel(lambda name: core.create_node(manifest(name)), missing)

    def ready() -> bool:
        listed: list[Any] = core.list_node(label_selector="type=kwok").items
        up = [
            n
            for n in listed
            if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or ())
        ]
        return len(up) >= wanted

    eventually(ready, f"{wanted} kwok nodes Ready", timeout=300)
    print(f"[bench] scale: {wanted} kwok nodes Ready", flush=True)


def create_deployments(apps: client.AppsV1Api, ns: str, count: int, replicas: int, *, labelled: bool) -> None:
    def one(i: int) -> None:
        name = f"app-{i:03d}"
        labels = {"app": name}
        pod_labels = {**labels, names.LABEL_INJECT: "true"} if labelled else labels
        body: Any = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {
                        "labels": pod_labels,
                        "annotations": {names.ANNOTATION_DATASET: DATASETS_DS},
                    },
                    "spec": {
                        "nodeSelector": {"type": "kwok"},
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
                    },
                },
            },
        }
        apps.create_namespaced_deployment(ns, body)

    parallel(one, list(range(count)))


def pod_count(core: client.CoreV1Api, ns: str) -> int:
    """Pods in ``ns`` without listing them: one item and the server's count of the rest."""
    page: Any = core.list_namespaced_pod(ns, limit=1)
    return len(page.items) + int(page.metadata.remaining_item_count or 0)


def wait_pods(core: client.CoreV1Api, ns: str, expected: int, what: str) -> None:
    t0, last = time.monotonic(), -1
    while True:
        n = pod_count(core, ns)
        if n != last:
            rate = n / max(time.monotonic() - t0, 1e-3)
            print(f"[bench] scale: {n}/{expected} pods {what} created ({rate:.0f}/s)", flush=True)
            last = n
        if n >= expected:
            return
        if time.monotonic() - t0 > max(600.0, expected / 5):
            raise RuntimeError(f"only {n} of {expected} pods {what} were created")
        time.sleep(5)


def count_injected(core: client.CoreV1Api, ns: str) -> int:
    """Pods of ``ns`` that carry both datasets' runtime config. One list, not pages: on a loaded API
    server etcd compacts within minutes and a continue token of a long paged list expires (410)."""
    raw: Any = core.list_namespaced_pod(ns, _preload_content=False, _request_timeout=300)
    pods = json.loads(raw.data)["items"]
    wanted = sorted(DATASETS_DS.split(","))
    return sum(1 for pod in pods if injected_datasets(pod) == wanted)


# -- metrics ----------------------------------------------------------------------------------------


def api_metrics(kubeconfig: Path) -> str:
    return kubectl(kubeconfig, "get", "--raw", "/metrics")


def webhook_metrics(webhook: WebhookProcess) -> str:
    return webhook.get("/metrics")[1].decode()


def delta(after: str, before: str, name: str, labels: dict[str, str] | None = None) -> float:
    return metric_sum(after, name, labels) - metric_sum(before, name, labels)


def report_pod_creates(report: Report, scrapes: tuple[str, str, str], plain: int, injected: int) -> None:
    """From the API server's scrapes before the unlabelled pods, between them and the labelled ones,
    and after those."""
    before, middle, after = scrapes
    name = "apiserver_request_duration_seconds"
    without = promtext.difference(
        promtext.buckets(middle, name, POD_CREATES), promtext.buckets(before, name, POD_CREATES)
    )
    with_ = promtext.difference(
        promtext.buckets(after, name, POD_CREATES), promtext.buckets(middle, name, POD_CREATES)
    )
    calls_name = "apiserver_admission_webhook_admission_duration_seconds"
    calls = promtext.difference(
        promtext.buckets(after, calls_name, {"operation": "CREATE", "type": "admit"}),
        promtext.buckets(middle, calls_name, {"operation": "CREATE", "type": "admit"}),
    )
    for q in (0.5, 0.99):
        label = f"p{round(q * 100)}"
        ours, base = promtext.quantile(q, with_), promtext.quantile(q, without)
        if ours is None or base is None:
            raise RuntimeError(
                f"the API server's metrics saw no pod creates (with: {with_}, without: {without})"
            )
        report.add(f"pod create {label}, {injected} injected pods", ours * 1000, "ms",
                   f"{plain} pods unlabelled", base * 1000)  # fmt: skip
        call = promtext.quantile(q, calls)
        if call is not None:
            report.add(f"of which: the API server's call to the webhook, {label}", call * 1000, "ms")
    print(
        f"[bench] scale: the API server saw {promtext.count(without):.0f} unlabelled and "
        f"{promtext.count(with_):.0f} labelled pod creates, {promtext.count(calls):.0f} webhook calls",
        flush=True,
    )


# -- objects that are only listed ------------------------------------------------------------------


def create_fusemounts(custom: client.CustomObjectsApi, nodes: int, keys: int) -> list[str]:
    """What node services would publish for ``nodes`` x ``keys`` mounts, status included."""
    g, v = names.GROUP, names.VERSION

    def one(item: tuple[int, int]) -> str:
        node, key = f"kwok-node-{item[0]}", hashlib.sha256(f"scale-key-{item[1]}".encode()).hexdigest()[:40]
        name = names.fuse_mount_name(node, key)
        spec = FuseMountSpec(
            node_name=node, mount_key=key, cluster_id="scale", master_addrs=f"master-{item[1]}:8995",
            fs_path="/", mnt_path=f"/var/lib/fluid/mnt/{key}", mode="standalone",
        )  # fmt: skip
        body = {
            "apiVersion": names.API_VERSION,
            "kind": "FuseMount",
            "metadata": {"name": name, "labels": names.fuse_mount_labels(node, key)},
            "spec": spec.to_kube(),
        }
        custom.create_cluster_custom_object(g, v, "fusemounts", body)
        volume = StagedVolume(volume_id=f"pv-{item[1]}", staging_path="/s",
                              targets=[PublishTarget(path="/t1"), PublishTarget(path="/t2")])  # fmt: skip
        status = {"status": FuseMountStatus(phase="Ready", ref_count=2, volumes=[volume]).to_kube()}
        custom.patch_cluster_custom_object_status(g, v, "fusemounts", name, status)
        return name

    return parallel(one, [(n, k) for n in range(nodes) for k in range(keys)])


def create_datasets(
    custom: client.CustomObjectsApi, core: client.CoreV1Api, namespaces: list[str], count: int
) -> None:
    ensure_namespaces(core, namespaces)

    def one(i: int) -> None:
        ds = {"apiVersion": names.API_VERSION, "kind": "Dataset", "metadata": {"name": f"ds-{i:04d}"},
              "spec": {"mounts": [{"name": "m", "mountPoint": f"s3://bucket/{i}"}]}}  # fmt: skip
        custom.create_namespaced_custom_object(
            names.GROUP, names.VERSION, namespaces[i % len(namespaces)], "datasets", ds
        )

    parallel(one, list(range(count)))
    print(f"[bench] scale: {count} Datasets in {len(namespaces)} namespaces", flush=True)


def cleanup(
    core: client.CoreV1Api, custom: client.CustomObjectsApi, namespaces: list[str], mounts: list[str]
) -> None:
    """Left for the namespace controller; a private cluster is stopped right after in any case."""
    for name in mounts:
        custom.delete_cluster_custom_object(names.GROUP, names.VERSION, "fusemounts", name)
    for ns in namespaces:
        try:
            core.delete_namespace(ns)
        except client.ApiException as e:
            if e.status != 404:
                raise


def parallel(work: Callable[[Any], Any], items: list[Any], threads: int = 16) -> list[Any]:
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, items))
