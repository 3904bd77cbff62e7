"""Time to first byte on a real node, by stage: from ``kubectl apply`` of Curvine's Dataset and
CacheRuntime (manifests/samples/curvine-fluid/, the Dataset's mount an S3 bucket), with an app pod
that mounts the Dataset's PVC, to that pod's first byte of one S3 file.

The bed is tests/e2e/test_real_node_curvine_ufs.py's: a private cluster of one real node
(tests/e2e/users_cluster.py), the product deployed from its image by ``kubectl apply -k manifests/``,
Curvine's own class, moto S3 on the node's bridge as the UFS. Every milestone is an observation to the
ms on this host's clock, which the node's containers share: watches opened before the apply stamp each
change when it is seen (the API's own timestamps are whole seconds); the controller's and the CSI
node's JSON log lines carry ms (``mountUFS ran``, ``staged``, ``published``, ``client mounted``); the
app prints ``date +%s.%N`` at its start and around its first successful read.

Rows: each stage's seconds along the critical path (tests/bench/firstbyte.py: STEPS), the total, and
the product's share of it (goal: at most 10 %); a picture of the stages as a waterfall. Skipped,
saying why, where a real node, the product's image or Curvine's files are not there.
``python -m tests.bench.bench_firstbyte`` runs it alone."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import yaml

from csi.model.clientvolume import client_mount_key
from kubectl_fluid.api import names
from tests.bench import firstbyte, svg
from tests.bench.firstbyte import condition_true, first, log_time, running, started_at
from tests.bench.report import Report, at_most

NAME, APPS, SYSTEM = "curvine-demo", "default", "fluid-system"  # Curvine's Dataset and CacheRuntime
# The app pod (tests/e2e/test_real_node_curvine_ufs.py: app_pod(), whose name it is), the bucket, the keys.
APP, BUCKET, SECRET = "s3-reader", "fluid-ufs", "s3-credentials"
FILE = "first.txt"  # at s3://BUCKET/data/, read at /data/s3data/ in the app
NODE = "real-node-0"  # the cluster's one real node (localcluster.realnodes.NAME_PREFIX, its index 0)
# Namespaced kinds whose changes are stamped, and the cluster's PVs.
WATCHED = ("pods", "configmaps", "statefulsets", "daemonsets", "persistentvolumeclaims",
           f"datasets.{names.GROUP}", f"cacheruntimes.{names.GROUP}")  # fmt: skip
APP_SCRIPT = (
    'echo "started $(date +%s.%N)"; n=0; '
    "while :; do a=$(date +%s.%N); head -c1 /data/s3data/" + FILE + " >/dev/null 2>&1 && break; "
    "n=$((n+1)); sleep 0.02; done; "
    'echo "read $a $(date +%s.%N) $n"; exec sleep infinity'
)
DEADLINE = 300.0  # seconds from the apply to the first byte before the bench gives up


class Watch:
    """``kubectl get KIND -w`` in the background: every event with the wall-clock second it arrived."""

    def __init__(self, kubeconfig: Path, kind: str, namespace: str | None) -> None:
        from tests.e2e.fluid import kubectl_binary

        scope = ["-n", namespace] if namespace else []
        argv = [kubectl_binary(), f"--kubeconfig={kubeconfig}", "get", kind, *scope, "-w",
                "--output-watch-events", "-o", "json", "-v=6"]  # fmt: skip
        self.kind = kind
        self.events: list[tuple[float, dict[str, Any]]] = []
        # kubectl's log line of its first GET's answer: the list, whose resourceVersion the watch
        # starts from, so nothing created after it is missed.
        self.opened = threading.Event()
        self.said: list[bytes] = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._log, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder, utf8, text = json.JSONDecoder(), codecs.getincrementaldecoder("utf-8")(), ""
        while chunk := os.read(self.proc.stdout.fileno(), 1 << 16):
            seen = time.time()
            text += utf8.decode(chunk)  # a character split between two reads waits for its rest
            while text.strip():
                try:
                    event, end = decoder.raw_decode(text.lstrip())
                except ValueError:
                    break  # the rest of the object is on its way
                self.events.append((seen, event))
                text = text.lstrip()[end:]

    def _log(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.said = [*self.said[-4:], line]
            if b"GET" in line and b"200" in line:
                self.opened.set()

    def objects(self) -> list[tuple[float, dict[str, Any]]]:
        return [(t, e["object"]) for t, e in self.events if e.get("type") in ("ADDED", "MODIFIED")]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@contextmanager
def watching(kubeconfig: Path) -> Iterator[dict[str, Watch]]:
    with ExitStack() as stack:
        watches = {kind: Watch(kubeconfig, kind, APPS) for kind in WATCHED}
        watches["persistentvolumes"] = Watch(kubeconfig, "persistentvolumes", None)
        for w in watches.values():
            stack.callback(w.stop)
        for w in watches.values():
            if not w.opened.wait(30):
                said = b"".join(w.said).decode(errors="replace")
                raise RuntimeError(f"kubectl get {w.kind} -w did not list in 30 s: {said}")
        yield watches


def json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "ts" in obj:
            out.append(obj)
    return out


def milestones(
    watches: dict[str, Watch], controller: list[dict[str, Any]], node: list[dict[str, Any]], app_log: str
) -> dict[str, float]:
    """When each milestone of firstbyte.STEPS was first seen (those not seen are left out)."""
    pods = watches["pods"].objects()
    client, pv = names.component_name(NAME, "client"), names.dataset_pv(APPS, NAME)

    def pod_ready(name: str) -> float | None:
        return first(pods, lambda p: p["metadata"]["name"] == name and condition_true(p, "Ready"))

    def pod_running(name: str) -> float | None:
        return first(pods, lambda p: p["metadata"]["name"] == name and running(p))

    def created(kind: str, name: str) -> float | None:
        return first(watches[kind].objects(), lambda o: o["metadata"]["name"] == name)

    def lines(msg: str, **fields: str) -> list[dict[str, Any]]:
        return [x for x in node if x.get("msg") == msg and all(x.get(k) == v for k, v in fields.items())]

    children = [
        created("configmaps", names.runtime_config_configmap(NAME)),
        created("statefulsets", names.component_name(NAME, "master")),
        created("statefulsets", names.component_name(NAME, "worker")),
        created("daemonsets", client),
        created("persistentvolumes", pv),
        created("persistentvolumeclaims", names.dataset_pvc(NAME)),
    ]
    stored = [created(f"datasets.{names.GROUP}", NAME), created(f"cacheruntimes.{names.GROUP}", NAME)]
    seen: dict[str, float | None] = {
        "stored": None if None in stored else max(t for t in stored if t is not None),
        "rendered": None if None in children else max(t for t in children if t is not None),
        "master started": pod_running(names.master_pod_name(NAME)),
        "master ready": pod_ready(names.master_pod_name(NAME)),
        "worker ready": pod_ready(f"{names.component_name(NAME, 'worker')}-0"),
        "app scheduled": first(
            pods, lambda p: p["metadata"]["name"] == APP and bool(p["spec"].get("nodeName"))
        ),
        "client ready": first(
            pods, lambda p: p["metadata"]["name"].startswith(f"{client}-") and condition_true(p, "Ready")
        ),
    }
    ran = [x for x in controller if x.get("msg") == "mountUFS ran" and x.get("exit") == 0]
    if ran:
        seen["mountUFS started"], seen["mountUFS done"] = started_at(ran[0]), log_time(ran[0]["ts"])
    attached = lines("client mounted", mount_key=client_mount_key(APPS, NAME))
    if attached:
        seen["client mounted"] = log_time(attached[0]["ts"])
    for msg, step in (("staged", "NodeStage"), ("published", "NodePublish")):
        calls = lines(msg, volume_id=pv)
        if calls:
            seen[f"{step} called"], seen[f"{step} done"] = started_at(calls[0]), log_time(calls[0]["ts"])
    for line in app_log.splitlines():
        word, *values = line.split() or [""]
        if word == "started":
            seen["container started"] = float(values[0])
        elif word == "read":
            seen["read began"], seen["first byte"] = float(values[0]), float(values[1])
    return {k: v for k, v in seen.items() if v is not None}


def run(report: Report) -> None:
    from tests.e2e.test_real_node_curvine_fluid import why_not
    from tests.e2e.users_cluster import why_no_users_cluster

    reason = why_no_users_cluster() or why_not()
    if reason:
        print(f"[bench] time to first byte skipped: {reason}")
        return
    with tempfile.TemporaryDirectory(prefix="kubectl-fluid-firstbyte-") as tmp:
        seen, start, reads = measure(Path(tmp))
    charges = firstbyte.critical_path(start, seen)
    whole, share = firstbyte.total(charges), firstbyte.product_share(charges)
    for charge in charges:
        owner = "product" if charge.step.product else "components"
        report.add(f"first byte: {charge.step.name} ({owner})", charge.seconds, "s")
    report.add("time to first byte, apply to the app's first byte", whole, "s")
    report.add("time to first byte, product's share", share, "%", "components' share", 100 - share,
               goal=at_most(10, "%"))  # fmt: skip
    order = sorted(seen.items(), key=lambda kv: kv[1])
    print(f"[bench] first byte: the app read {reads} time(s) before the data was there; milestones: "
          + ", ".join(f"{k} +{v - start:.3f}s" for k, v in order))  # fmt: skip
    own = firstbyte.own_spans(seen)
    print("[bench] first byte: the product's own work, on the critical path or beside it: "
          + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in own.items()))  # fmt: skip
    bars = [(c.step.name, c.seconds, "product" if c.step.product else "components") for c in charges]
    report.picture("first-byte.svg", svg.stages("Time to first byte on a real node, by stage", bars))


def measure(state: Path) -> tuple[dict[str, float], float, int]:
    """The milestones seen, the apply's start, and how many reads the app made before one succeeded."""
    from localcluster import realnodes
    from localcluster.peers import s3ufs
    from tests.e2e import test_real_node_curvine_ufs as ufs
    from tests.e2e.users_cluster import users_cluster

    with users_cluster(state / "cluster", nodes=1) as cluster:
        kc = Path(cluster.kubeconfig)
        assert (f"{realnodes.NAME_PREFIX}0", ufs.APP, ufs.BUCKET) == (NODE, APP, BUCKET)
        node = realnodes.RealNode.load(Path(cluster.state_dir) / realnodes.NODES_DIR / NODE)
        assert node is not None
        with s3ufs.serving(node.bridge_ip, state / "moto.log") as s3:
            s3.put(BUCKET)
            s3.put(BUCKET, f"data/{FILE}", b"the first byte, and the rest\n")
            install(kc)
            with watching(kc) as watches:
                start = time.time()
                apply(kc, [*dataset_and_runtime(s3.endpoint), ufs.app_pod(["sh", "-c", APP_SCRIPT])])
                app_log = wait_for_first_byte(kc, start)
                time.sleep(1)  # the last watch events in
            controller = json_lines(logs(kc, f"{names.LABEL_APP_NAME}=fluid-controller", None))
            selector = f"{names.LABEL_APP_COMPONENT}={names.CSI_NODE_COMPONENT}"
            node_lines = json_lines(logs(kc, selector, names.CSI_NODE_CONTAINER))
    reads = next((int(x.split()[3]) for x in app_log.splitlines() if x.startswith("read ")), -1)
    return milestones(watches, controller, node_lines, app_log), start, reads


def install(kc: Path) -> None:
    """The default install, Curvine's class and the S3 credentials' Secret: all before the clock."""
    from tests.e2e.fluid import MANIFESTS, kubectl
    from tests.e2e.test_real_node_curvine_fluid import CLASS

    kubectl(kc, "apply", "-k", str(MANIFESTS))
    kubectl(kc, "-n", SYSTEM, "rollout", "status", "deployment", "--timeout=5m")
    kubectl(kc, "-n", SYSTEM, "rollout", "status", "daemonset", "--timeout=5m")
    kubectl(kc, "apply", "-f", str(CLASS))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": APPS},
              "stringData": {"access": "test-access-key", "secret": "test-secret-key"}}  # fmt: skip
    apply(kc, [secret])


def apply(kc: Path, objects: list[dict[str, Any]]) -> None:
    from tests.e2e.fluid import kubectl

    kubectl(kc, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def dataset_and_runtime(endpoint: str) -> list[dict[str, Any]]:
    """Curvine's Dataset and CacheRuntime, the Dataset's one mount the bucket's data/ (as
    test_real_node_curvine_ufs.py mounts it)."""
    from tests.e2e.test_real_node_curvine_fluid import DATASET
    from tests.e2e.test_real_node_curvine_ufs import s3_mount

    mount = s3_mount("s3data", "data", BUCKET)
    mount["options"]["endpoint_url"] = endpoint
    docs = [d for d in yaml.safe_load_all(DATASET.read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Dataset":
            doc["spec"]["mounts"] = [mount]
    return docs


def wait_for_first_byte(kc: Path, start: float) -> str:
    """The app's log once it holds the first read's line."""
    from tests.e2e.fluid import kubectl_binary

    argv = [kubectl_binary(), f"--kubeconfig={kc}", "-n", APPS, "logs", APP]
    while time.time() - start < DEADLINE:
        out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
        if any(line.startswith("read ") for line in out.splitlines()):
            return out
        time.sleep(0.5)
    raise RuntimeError(f"no first byte in the app pod {APP} within {DEADLINE:.0f} s of the apply")


def logs(kc: Path, selector: str, container: str | None) -> str:
    from tests.e2e.fluid import kubectl

    which = ["-c", container] if container else []
    return kubectl(kc, "-n", SYSTEM, "logs", "-l", selector, *which, "--tail=-1", "--max-log-requests=20")


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
    report = Report()
    run(report)
    report.print()
    report.write_json(Path(os.environ.get("BENCH_JSON", ".dev/bench-firstbyte.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
