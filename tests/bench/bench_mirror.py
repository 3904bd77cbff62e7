"""The FuseMount mirror at scale (issue 33): a steady cluster's API writes, and the mirror's lag.

Three node services (``fluid-csi --mode all``, the mirror on, the node DaemonSet's ServiceAccount)
on three Nodes of the bench's cluster, each with ``KEYS`` mounts of the real Curvine through real
curvine-fuse (hack/localcluster/peers/curvinecluster.py, the local Curvine bench_curvine uses), plus
FuseMounts written as node services write them up to ``TOTAL`` in the cluster; the controller and
the webhook run beside them with two Datasets. A thousand real curvine-fuse processes would need some
30 GB here (29 MB each, cv-s3-ufs.md), so most of the thousand objects are the bench's: they weigh on
the API server and on every list, and only the node services' own are resynced.

- Steady: nothing changes for ``WINDOW`` s while each mirror resyncs every ``RESYNC`` s (the default
  is 300 s: ``--mirror-resync``); the API server's write requests per minute by resource
  (``apiserver_request_total``, every client: kube-controller-manager, kwok and the scheduler too),
  and the product's own counters (the mirrors' and the controller's writes).
- Lag: ``ROUNDS`` NodePublish calls on a staged volume, each timed from its return to a watch of its
  FuseMount seeing the new target; beside the floor: the same watch seeing two patches (spec, status)
  of a FuseMount of the bench's, plus the mirror's 20 ms debounce.

Needs root, /dev/fuse and Curvine's binaries; ``make bench ONLY=mirror``.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from csi.fuse import mounts
from kubectl_fluid.api import names
from tests.bench import promtext
from tests.bench.bench_curvine import create, curvine_fuse_pids
from tests.bench.bench_scale import add_nodes, api_metrics, create_fusemounts, parallel
from tests.bench.bench_webhook import ensure_namespaces, product_processes, ready_datasets
from tests.bench.report import Report, at_most, percentile, ratio_at_most
from tests.e2e.fluid import MANIFESTS, free_port, install, kubectl, metric_sum, service_account_kubeconfig
from tests.e2e.wait import eventually
from tests.unit.test_csi_node import Driver

NODES = 3
KEYS = 10  # real curvine-fuse mounts per node
TOTAL = 1000  # FuseMounts in the cluster
RESYNC = 10.0
WINDOW = 60.0
ROUNDS = 50
DEBOUNCE_MS = 20.0  # csi/node/publisher.py: MirrorPublisher's default
GROUP = (names.GROUP, names.VERSION, "fusemounts")


def run(report: Report, kubeconfig: Path, workdir: Path) -> None:
    if os.geteuid() != 0 or not Path("/dev/fuse").exists():
        print("[bench] mirror figures skipped: real FUSE mounts need root and /dev/fuse")
        return
    from localcluster.peers import curvinebins, curvinecluster  # hack/, on the path of tests.bench's main
    from tests.e2e.csi import node_object  # imports hack/ too

    if curvinebins.find() is None:
        print(f"[bench] mirror figures skipped: no Curvine binaries in {curvinebins.peer_dir()}")
        return
    install(kubeconfig)
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml"))
    k8s = config.new_client_from_config(config_file=str(kubeconfig))
    core, custom = client.CoreV1Api(k8s), client.CustomObjectsApi(k8s)
    tag = secrets.token_hex(3)
    node_names = [f"bench-mirror-{tag}-{i}" for i in range(NODES)]
    ns = f"bench-mirror-{tag}"
    ensure_namespaces(core, [ns])
    account = service_account_kubeconfig(
        kubeconfig, core, workdir / "mirror-node.kubeconfig", "fluid-csi-node"
    )
    controller, webhook = product_processes(kubeconfig, core, workdir, "bench-mirror")
    written: list[str] = []
    # Short: unix socket paths are at most 108 bytes.
    with tempfile.TemporaryDirectory(prefix="fmr-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        cv = stack.enter_context(curvinecluster.running(root / "cv"))
        for name in node_names:
            body: Any = node_object(name)
            core.create_node(body)
        stack.callback(lambda: [core.delete_node(n) for n in node_names])
        controller.start()
        stack.callback(controller.stop)
        controller.wait_ready(60)
        ready_datasets(core, custom, [ns])
        webhook.start()
        stack.callback(webhook.stop)
        webhook.wait_ready(60)
        drivers = [start_node(stack, root / f"n{i}", cv, name, account) for i, name in enumerate(node_names)]
        volumes = {d.node_id: stage_keys(d, cv.master_addrs, tag) for d in drivers}
        others = TOTAL - NODES * KEYS
        # Their nodes exist and are Ready: the controller marks the FuseMounts of a missing node.
        add_nodes(core, others // KEYS)
        written = create_fusemounts(custom, others // KEYS, KEYS)
        stack.callback(lambda: parallel(lambda n: custom.delete_cluster_custom_object(*GROUP, n), written))
        eventually(lambda: mirrored(custom, node_names), f"{NODES * KEYS} FuseMounts Ready", timeout=120)
        total = len(listed(custom))
        print(f"[bench] mirror: {total} FuseMounts, {NODES * KEYS} of them mirrored by {NODES} node services")
        steady(report, kubeconfig, drivers, controller.metric)
        lag(report, custom, drivers[0], volumes[drivers[0].node_id], written[0])


class MirrorNode(Driver):
    """A node service with the mirror on, under the node DaemonSet's ServiceAccount."""

    def __init__(self, root: Path, cv: Any, node_id: str, kubeconfig: Path) -> None:
        self.node_id, self.health = node_id, free_port()
        extra = ("--backend", "curvine", "--fuse-config", str(cv.layout.node_settings), "--node-id", node_id,
                 "--mirror", "--kubeconfig", str(kubeconfig), f"--mirror-resync={RESYNC}",
                 f"--health-port={self.health}")  # fmt: skip
        super().__init__(root, fuse_binary=str(cv.layout.fuse), extra=extra)

    def writes(self) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/metrics", timeout=5) as r:
            return metric_sum(r.read().decode(), "fluid_csi_mirror_writes_total")


def start_node(stack: ExitStack, root: Path, cv: Any, node_id: str, kubeconfig: Path) -> MirrorNode:
    root.mkdir()
    node = MirrorNode(root, cv, node_id, kubeconfig)
    node.start()
    stack.callback(stop_node, node)
    return node


def stop_node(node: MirrorNode) -> None:
    node.stop()
    for pid in node.fuse_pids() + curvine_fuse_pids(node.root):
        os.kill(pid, 9)
    for m in reversed(mounts.mount_table()):
        if m.mount_point.startswith(str(node.root)):
            mounts.unmount(m.mount_point, lazy=True)


def stage_keys(node: MirrorNode, masters: str, tag: str) -> list[tuple[Any, str]]:
    """``KEYS`` volumes, each of its own fs-path (so its own mount key and curvine-fuse), staged."""
    staged = []
    for k in range(KEYS):
        volume = create(node, masters, f"{node.node_id}-{k}", f"/bench-mirror/{tag}/{node.node_id}/{k}")
        staged.append((volume, node.stage(volume)))
    return staged


def mirrored(custom: client.CustomObjectsApi, nodes: list[str]) -> bool:
    for node in nodes:
        found = listed(custom, label_selector=names.fuse_mount_node_selector(node))
        ready = [i for i in found if i.get("status", {}).get("phase") == "Ready"]
        if len(ready) != KEYS:
            return False
    return True


def steady(report: Report, kubeconfig: Path, nodes: list[MirrorNode], controller_metric: Any) -> None:
    time.sleep(RESYNC + 2)  # past each mirror's first resync after its writes
    before_api, before_mirror = api_metrics(kubeconfig), sum(n.writes() for n in nodes)
    before_controller = controller_metric("fluid_controller_api_writes_total")
    time.sleep(WINDOW)
    after_api, after_mirror = api_metrics(kubeconfig), sum(n.writes() for n in nodes)
    per_minute = 60.0 / WINDOW
    keep = {"verb": promtext.WRITE_VERBS}
    was = promtext.sums_by(before_api, "apiserver_request_total", "resource", keep)
    now = promtext.sums_by(after_api, "apiserver_request_total", "resource", keep)
    by_resource = {r: (now[r] - was.get(r, 0.0)) * per_minute for r in now if now[r] != was.get(r, 0.0)}
    print(f"[bench] mirror: steady API writes per minute by resource: {dict(sorted(by_resource.items()))}")
    resyncs = int(WINDOW / RESYNC)
    report.add(f"steady cluster, API writes per minute, every client ({resyncs} resyncs)",
               sum(by_resource.values()), "req/min")  # fmt: skip
    report.add(
        f"of which FuseMounts ({TOTAL} in the cluster, {NODES * KEYS} mirrored, resync {RESYNC:g} s)",
        by_resource.get("fusemounts", 0.0), "req/min", goal=at_most(0, "req/min"),
    )  # fmt: skip
    report.add("the mirrors' own writes per minute", (after_mirror - before_mirror) * per_minute, "req/min",
               goal=at_most(0, "req/min"))  # fmt: skip
    controller = (controller_metric("fluid_controller_api_writes_total") - before_controller) * per_minute
    report.add("the controller's writes per minute", controller, "req/min")


def lag(report: Report, custom: client.CustomObjectsApi, node: MirrorNode, staged: list[tuple[Any, str]],
        floor_object: str) -> None:  # fmt: skip
    volume, staging = staged[0]
    mount = next(
        i for i in listed(custom, label_selector=names.fuse_mount_node_selector(node.node_id))
        if any(v["volumeID"] == volume.volume_id for v in i.get("status", {}).get("volumes", []))
    )  # fmt: skip
    seen = Watched(custom, mount["metadata"]["name"])
    floor_seen = Watched(custom, floor_object)
    try:
        lags, floors = [], []
        for i in range(ROUNDS):
            target = str(node.root / "pods" / f"lag{i}")
            node.publish(volume, staging, target)
            returned = time.perf_counter()
            lags.append((seen.first(lambda o, t=target: t in targets(o)) - returned) * 1000)
            floors.append(floor_round(custom, floor_seen, floor_object, i))
        for i in range(ROUNDS):
            node.unpublish(volume, str(node.root / "pods" / f"lag{i}"))
    finally:
        seen.stop()
        floor_seen.stop()
    report.add(
        f"mirror lag p50, NodePublish returned to the FuseMount seen ({TOTAL} FuseMounts)",
        percentile(lags, 50), "ms", "two patches of a FuseMount seen + the 20 ms debounce",
        percentile(floors, 50), goal=ratio_at_most(1.5),
    )  # fmt: skip
    report.add("mirror lag p99", percentile(lags, 99), "ms", "floor p99", percentile(floors, 99))


def floor_round(custom: client.CustomObjectsApi, seen: Watched, name: str, i: int) -> float:
    mark = f"/floor/{i}"
    t0 = time.perf_counter()
    custom.patch_cluster_custom_object(*GROUP, name, {"metadata": {"annotations": {"bench": str(i)}}})
    body = {
        "status": {"volumes": [{"volumeID": "pv-floor", "stagingPath": "/s", "targets": [{"path": mark}]}]}
    }
    custom.patch_cluster_custom_object_status(*GROUP, name, body)
    return (seen.first(lambda o: mark in targets(o)) - t0) * 1000 + DEBOUNCE_MS


def listed(custom: client.CustomObjectsApi, **options: Any) -> list[dict[str, Any]]:
    found: Any = custom.list_cluster_custom_object(*GROUP, **options)
    return list(found["items"])


def targets(obj: dict[str, Any]) -> set[str]:
    return {t["path"] for v in obj.get("status", {}).get("volumes", []) for t in v.get("targets", [])}


class Watched:
    """One FuseMount watched in a thread; each event's arrival time kept with the object."""

    def __init__(self, custom: client.CustomObjectsApi, name: str) -> None:
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.error: Exception | None = None
        self.cond = threading.Condition()
        self.watch = watch.Watch()
        stream = self.watch.stream(
            custom.list_cluster_custom_object, *GROUP, field_selector=f"metadata.name={name}"
        )
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: Any) -> None:
        try:
            for event in stream:
                with self.cond:
                    self.events.append((time.perf_counter(), event["object"]))
                    self.cond.notify_all()
        except Exception as err:  # the connection cut when the cluster stops: first() says so if it waits
            self.error = err

    def first(self, test: Any, timeout: float = 30) -> float:
        """When the first event not yet consumed whose object passes ``test`` arrived."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i, (at, obj) in enumerate(self.events):
                    if test(obj):
                        del self.events[: i + 1]
                        return at
                self.cond.wait(min(1.0, max(0.0, deadline - time.monotonic())))
                if self.error is not None or time.monotonic() > deadline:
                    raise TimeoutError(f"the watch never saw the change ({self.error or 'no error'})")

    def stop(self) -> None:
        self.watch.stop()
