"""Curvine's own Fluid integration on two real nodes, through the real path: Curvine's
CacheRuntimeClass, Dataset and CacheRuntime (manifests/samples/curvine-fluid/, Curvine's files but for
the image and one setting) applied as a user would, with the product deployed by ``kubectl apply -k
manifests/`` unchanged. The controller renders the class's master and worker; they run Curvine's image
in Curvine's own layout (hack/images/curvine.py). The master elects itself, the worker registers
(``cv report``), the runtime turns Ready.

Then Curvine's test pod (test-pod.yaml, pinned to a node) mounts the Dataset's PVC, no hand anywhere:
its NodeStage labels the node, the client DaemonSet's pod starts there and mounts curvine-fuse at the
target path, the CSI node binds beneath it; what the pod writes is in Curvine (``cv fs``). A second
pod on that node shares the client (one FUSE; REFS 1, TARGETS 2), a pod on the other node starts that
node's client. No curvine-fuse of the CSI node's own. The client's curvine-fuse killed -9, then
OOM-killed: the running pods read again, unrestarted. Teardown under cleanPolicy OnDemand (this
module's change to Curvine's CacheRuntime) and then OnRuntimeDeleted (Curvine's default, set back).
Measured: create to each step, seconds to readable after each kill, teardowns.

A cluster of its own whose two nodes are real, untainted kubelets (tests/e2e/users_cluster.py), whose
containerd has Curvine's image as the default install's. Skipped, saying why, where a real node cannot
run, an image cannot be built or Curvine's files are not there."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

import localcluster
from kubectl_fluid.api import names
from localcluster import realnodes
from localcluster.peers import curvinelayout
from tests.e2e.fluid import MANIFESTS, kubectl, kubectl_binary
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.test_real_node_curvine import why_not as why_no_curvine
from tests.e2e.test_real_node_product import get, ready
from tests.e2e.users_cluster import users_cluster
from tests.e2e.wait import eventually

SYSTEM = "fluid-system"
SAMPLES = MANIFESTS / "samples" / "curvine-fluid"
CLASS, DATASET = SAMPLES / "cacheruntimeclass.yaml", SAMPLES / "dataset.yaml"
NAME = "curvine-demo"  # Curvine's Dataset and CacheRuntime
APPS = "default"
MASTER, WORKER = f"{NAME}-master-0", f"{NAME}-worker-0"
CONF = "/app/curvine/conf/curvine-cluster.toml"  # where Curvine's scripts write its configuration
NODES = [f"{realnodes.NAME_PREFIX}{i}" for i in range(2)]
WRITTEN = "written-through-curvines-client"


@dataclass
class Bed:
    cluster: localcluster.Cluster
    nodes: dict[str, realnodes.RealNode]
    kc: Path  # the cluster's kubeconfig
    figures: dict[str, float] = field(default_factory=dict)


def why_not() -> str | None:
    reason = why_no_curvine()
    if reason is None and not curvinelayout.source_tarball().is_file():
        reason = f"no Curvine source (its Fluid scripts): {curvinelayout.source_tarball()} is not there"
    return reason


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_not()
    if reason:
        pytest.skip(reason)
    # Curvine's image is one of the default install's: every users cluster has it.
    with users_cluster(tmp_path_factory.mktemp("curvine-fluid-cluster"), nodes=len(NODES)) as cluster:
        nodes = {n: realnodes.RealNode.load(cluster.state_dir / realnodes.NODES_DIR / n) for n in NODES}
        b = Bed(cluster, {n: node for n, node in nodes.items() if node is not None}, cluster.kubeconfig)
        assert sorted(b.nodes) == NODES
        yield b
        print("\n".join(f"{k}: {v:.1f}" for k, v in b.figures.items()))


def dataset_on_demand() -> list[dict[str, Any]]:
    """Curvine's Dataset and CacheRuntime, the runtime's client cleanPolicy OnDemand (this module's
    change: the last pod of a node takes its client away; a later test sets Curvine's default back)."""
    docs = [d for d in yaml.safe_load_all(DATASET.read_text()) if d]
    assert {d["kind"] for d in docs} == {"Dataset", "CacheRuntime"}
    for doc in docs:
        if doc["kind"] == "CacheRuntime":
            doc["spec"]["client"]["cleanPolicy"] = names.CLEAN_POLICY_ON_DEMAND
    return docs


def image_of_the_samples() -> str:
    """The image Curvine's class names, as the samples have it."""
    found = set(re.findall(r"^\s+image: (\S+)", CLASS.read_text(), re.MULTILINE))
    assert len(found) == 1, found
    return str(found.pop())


def pod(bed: Bed, name: str) -> dict[str, Any]:
    return get(bed.kc, "-n", APPS, "pod", name)


def in_pod(bed: Bed, name: str, *argv: str) -> str:
    return kubectl(bed.kc, "-n", APPS, "exec", name, "--", *argv)


def rss_mib(bed: Bed, name: str) -> float:
    """Of the container's first process: Curvine's entrypoints exec curvine-server, so it is that."""
    status = in_pod(bed, name, "cat", "/proc/1/status")
    [kib] = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(kib) / 1024


def test_curvines_own_class_runs_its_master_and_worker_and_the_runtime_turns_ready(bed: Bed) -> None:
    kubectl(bed.kc, "apply", "-k", str(MANIFESTS))  # the default install, unchanged
    kubectl(bed.kc, "-n", SYSTEM, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=5m")
    # kubectl's default (strict) validation: Curvine's class, its `ReportSummary` spelling too.
    kubectl(bed.kc, "apply", "-f", str(CLASS))
    t0 = time.monotonic()
    apply(bed, *dataset_on_demand())
    kubectl(bed.kc, "-n", APPS, "wait", "--for=condition=Ready", f"cacheruntime/{NAME}", "--timeout=300s")
    bed.figures["Curvine's Dataset and CacheRuntime applied to the runtime Ready (s)"] = time.monotonic() - t0

    image = image_of_the_samples()
    for name, component in ((MASTER, "master"), (WORKER, "worker")):
        p = pod(bed, name)
        assert ready(p), p.get("status")
        [container] = p["spec"]["containers"]
        assert container["image"] == image
        assert container["command"] == ["/entrypoint.sh"]
        assert container["args"] == [component, "start"]
    dataset: dict[str, Any] = get(bed.kc, "-n", APPS, "dataset", NAME)
    assert dataset["status"]["phase"] == "Bound", dataset.get("status")


def test_curvines_scripts_configured_the_master_from_the_runtime_config(bed: Bed) -> None:
    """generate_config.py read the runtime config the product mounts and wrote Curvine's
    configuration: the master's journal at its pod's name under the headless Service, and the
    option the Dataset gives."""
    conf = in_pod(bed, MASTER, "cat", CONF)
    master_dns = f"{MASTER}.svc-{NAME}-master.{APPS}.svc.cluster.local"
    assert f'hostname = "{master_dns}"' in conf, conf
    assert 'heartbeat_interval = "500ms"' in conf, conf
    log = kubectl(bed.kc, "-n", APPS, "logs", MASTER)
    assert "Detected Fluid cache-runtime mode" in log, log[-3000:]


def cv_report(bed: Bed) -> dict[str, Any]:
    """``cv report json`` in the master pod: Curvine's own CLI, through Curvine's ``cv`` wrapper and
    the configuration its scripts wrote."""
    out = in_pod(bed, MASTER, "/app/curvine/bin/cv", "report", "json", "--conf", CONF)
    return json.loads(out[out.index("{") :])  # type: ignore[no-any-return]


def test_the_master_elected_itself_and_the_worker_registered_with_its_capacity(bed: Bed) -> None:
    def one_live_worker() -> dict[str, Any] | None:
        report = cv_report(bed)
        return report if len(report.get("live_workers") or []) == 1 else None

    info = eventually(
        one_live_worker,
        "cv report showing one live worker",
        timeout=120,
        interval=2,
    )
    print(json.dumps({k: v for k, v in info.items() if not isinstance(v, list | dict)}, indent=1))
    assert MASTER in str(info["active_master"]), info["active_master"]
    [worker] = info["live_workers"]
    assert WORKER in json.dumps(worker), worker
    assert info["capacity"] > 0, info
    assert info["available"] > 0, info
    bed.figures["Curvine's capacity as the master reports it (GiB)"] = info["capacity"] / 2**30
    bed.figures["master RSS (MiB)"] = rss_mib(bed, MASTER)
    bed.figures["worker RSS (MiB)"] = rss_mib(bed, WORKER)


TEST_POD = SAMPLES / "test-pod.yaml"
# Curvine's test pod (its own script writes /data/test-file.txt) and two copies of it.
POD_A, POD_B, POD_C = NAME, f"{NAME}-b", f"{NAME}-c"
SAMPLE_TEXT = "hello from fluid test"  # what Curvine's test pod writes and reads


def app_pod(name: str, node: str) -> dict[str, Any]:
    """Curvine's test pod as it is but for its name, a node to land on and a short grace period."""
    pod: dict[str, Any] = yaml.safe_load(TEST_POD.read_text())
    pod["metadata"].update(name=name, namespace=APPS)
    pod["spec"]["nodeSelector"] = {names.LABEL_HOSTNAME: node}
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    return pod


def apply(bed: Bed, *objects: dict[str, Any]) -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(body))


def client_pods(bed: Bed) -> dict[str, dict[str, Any]]:
    """node → the runtime's client pod there (not being deleted)."""
    listed: list[dict[str, Any]] = get(  # type: ignore[assignment]
        bed.kc, "-n", APPS, "pods", "-l", names.client_pod_selector(NAME)
    )["items"]
    return {p["spec"]["nodeName"]: p for p in listed if not p["metadata"].get("deletionTimestamp")}


def labelled(bed: Bed, node: str) -> bool:
    labels = get(bed.kc, "node", node)["metadata"].get("labels") or {}  # type: ignore[attr-defined]
    return bool(labels.get(names.fuse_node_label(APPS, NAME)) == names.TRUE)


def mounted(bed: Bed, node: str) -> int:
    """How many mounts sit at the runtime's target path in the node's own mount view."""
    target = names.target_path(APPS, NAME)
    return realnodes.namespace_mounts(bed.cluster, bed.nodes[node]).count(target)


def start_on(bed: Bed, name: str, node: str) -> dict[str, float]:
    """Pod ``name`` created on ``node``; seconds from its create to each step of the real path."""
    steps: dict[str, Callable[[], bool]] = {
        "node labelled": lambda: labelled(bed, node),
        "client pod on the node": lambda: node in client_pods(bed),
        "client's FUSE mounted at the target path": lambda: mounted(bed, node) > 0,
        "pod Running and Ready": lambda: ready(pod(bed, name)),
    }
    t0 = time.monotonic()
    apply(bed, app_pod(name, node))
    seen: dict[str, float] = {}
    while time.monotonic() - t0 < 300 and len(seen) < len(steps):
        for step, done in steps.items():
            if step not in seen and done():
                seen[step] = time.monotonic() - t0
        time.sleep(0.5)
    assert len(seen) == len(steps), (name, seen, pod(bed, name).get("status"))
    for step, seconds in seen.items():
        bed.figures[f"{name} on {node}: create to {step} (s)"] = seconds
    return seen


def cv(bed: Bed, *argv: str) -> str:
    return in_pod(bed, MASTER, "/app/curvine/bin/cv", *argv, "--conf", CONF)


def reads(bed: Bed, name: str, path: str = "/data/test-file.txt") -> str | None:
    try:
        return in_pod(bed, name, "cat", path)
    except (AssertionError, subprocess.TimeoutExpired):
        return None


def fusemounts(bed: Bed) -> dict[str, dict[str, Any]]:
    """node → FuseMount, as ``kubectl fluid mounts -o json`` lists them."""
    listed = json.loads(ok(kubectl_fluid(bed.kc, "mounts", "-o", "json")))
    items = listed["items"] if isinstance(listed, dict) else listed
    return {m["spec"]["nodeName"]: m for m in items}


def targets(mount: dict[str, Any]) -> int:
    return sum(len(v.get("targets", [])) for v in mount.get("status", {}).get("volumes", []))


def test_the_test_pod_mounts_the_pvc_through_the_client_its_node_label_starts(bed: Bed) -> None:
    """No hand: the pod's NodeStage labels its node, the client DaemonSet's pod starts there and mounts,
    the kubelet's bind beneath it gives the pod Curvine; what the pod wrote is in Curvine."""
    n0, n1 = NODES
    assert client_pods(bed) == {}  # no node asked for a client yet
    start_on(bed, POD_A, n0)
    assert sorted(client_pods(bed)) == [n0]
    assert not labelled(bed, n1)
    # Curvine's own test script ran through the PVC: it wrote, read and listed.
    log = kubectl(bed.kc, "-n", APPS, "logs", POD_A)
    assert SAMPLE_TEXT in log, log
    assert "file2.txt" in log, log
    assert reads(bed, POD_A) == f"{SAMPLE_TEXT}\n"
    in_pod(bed, POD_A, "sh", "-c", f"echo {WRITTEN} > /data/hello")
    listing = cv(bed, "fs", "ls", "/")
    assert "test-file.txt" in listing, listing
    assert "test-dir" in listing, listing
    assert cv(bed, "fs", "cat", "/hello").strip().endswith(WRITTEN)
    assert cv(bed, "fs", "cat", "/test-dir/file2.txt").strip().endswith("file2")
    bed.figures["client (curvine-fuse) RSS (MiB)"] = rss_mib(bed, client_pods(bed)[n0]["metadata"]["name"])


def test_a_second_pod_on_the_node_shares_its_client(bed: Bed) -> None:
    n0, _ = NODES
    client = client_pods(bed)[n0]["metadata"]["uid"]
    start_on(bed, POD_B, n0)
    assert client_pods(bed)[n0]["metadata"]["uid"] == client
    assert mounted(bed, n0) == 1  # one FUSE at the target path
    assert len(fuse_processes(bed)[client]) == 1
    assert reads(bed, POD_B, "/data/hello") == f"{WRITTEN}\n"
    # The node's mirror publishes in the background (never holding up a CSI call): wait for the target.
    mount = eventually(
        lambda: (m := fusemounts(bed).get(n0)) is not None and targets(m) == 2 and m, "both targets mirrored"
    )
    # REFS counts the node's staged volumes: one PVC staged once, its two pods are two targets.
    assert mount["spec"]["mode"] == names.CLIENT_MODE, mount
    assert mount["status"]["refCount"] == 1, mount
    assert targets(mount) == 2, mount
    wide = ok(kubectl_fluid(bed.kc, "mounts", "-o", "wide"))
    print(wide)
    assert all(word in wide for word in (n0, POD_A, POD_B)), wide


def test_a_pod_on_the_other_node_starts_that_nodes_client(bed: Bed) -> None:
    _n0, n1 = NODES
    start_on(bed, POD_C, n1)
    clients = client_pods(bed)
    assert sorted(clients) == NODES
    assert mounted(bed, n1) == 1
    assert reads(bed, POD_C, "/data/hello") == f"{WRITTEN}\n"  # written on n0, read on n1
    in_pod(bed, POD_C, "sh", "-c", f"echo from-{n1} > /data/from-c")
    assert reads(bed, POD_A, "/data/from-c") == f"from-{n1}\n"
    mounts = eventually(
        lambda: (
            (ms := fusemounts(bed))
            and sorted(ms) == NODES
            and [targets(ms[n]) for n in NODES] == [2, 1]
            and ms
        ),
        "each node's FuseMount with its targets mirrored",
    )
    assert {m["spec"]["mode"] for m in mounts.values()} == {names.CLIENT_MODE}


def fuse_processes(bed: Bed) -> dict[str, list[int]]:
    """pod UID → the host PIDs of the curvine-fuse processes in its containers' cgroups, for every pod
    of this cluster (so another cluster's FUSE on this machine is never counted)."""
    listed: list[dict[str, Any]] = get(bed.kc, "pods", "-A")["items"]  # type: ignore[assignment]
    uids = [p["metadata"]["uid"] for p in listed]
    found: dict[str, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or (entry / "comm").read_text().strip() != "curvine-fuse":
                continue
            cgroup = (entry / "cgroup").read_text().replace("_", "-")
        except OSError:
            continue
        for uid in uids:
            if uid in cgroup:
                found.setdefault(uid, []).append(int(entry.name))
    return found


def test_no_double_fuse_the_csi_node_runs_none_of_its_own(bed: Bed) -> None:
    """Every curvine-fuse of this cluster is in a client pod, one per node: none in a pod of the CSI
    node service (embedded) and no FUSE pod of its own in fluid-system (standalone)."""
    clients = {p["metadata"]["uid"] for p in client_pods(bed).values()}
    found = fuse_processes(bed)
    assert set(found) == clients, (found, clients)
    assert all(len(pids) == 1 for pids in found.values()), found
    own: list[dict[str, Any]] = get(  # type: ignore[assignment]
        bed.kc, "-n", SYSTEM, "pods", "-l", names.LABEL_MOUNT_KEY
    )["items"]
    assert own == []


def restarts(bed: Bed, name: str) -> tuple[str, int]:
    p = pod(bed, name)
    return p["metadata"]["uid"], p["status"]["containerStatuses"][0]["restartCount"]


def reads_the_sample(bed: Bed, name: str) -> bool:
    return reads(bed, name) == f"{SAMPLE_TEXT}\n"


def readable_again(bed: Bed, since: float, what: str) -> None:
    """The running pods read again, untouched (same pod, no container restart); seconds to it."""
    before = {name: restarts(bed, name) for name in (POD_A, POD_B)}
    for name in (POD_A, POD_B):
        try:
            eventually(partial(reads_the_sample, bed, name), f"{name} reading again", timeout=180)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{client_story(bed, NODES[0])}") from None
        bed.figures[f"{what}: to {name} reading again (s)"] = time.monotonic() - since
    assert {name: restarts(bed, name) for name in (POD_A, POD_B)} == before
    assert reads(bed, POD_C) == f"{SAMPLE_TEXT}\n"  # the other node's client never stopped


# In the client container: forked children of 4 MiB each, past the limit (512 MiB). The kernel kills
# the process of the highest badness, RSS plus oom_score_adj (1000 for curvine-fuse, set by the test;
# 995 for these, the container's own, which no one here may lower: the host has no CAP_SYS_RESOURCE).
# Each child's RSS, its parent's shared pages and its 4 MiB, stays under curvine-fuse's and 0.5 % of
# the limit: curvine-fuse is the one killed; its container, and the children with it, then go.
HOG = """
import os, time
for _ in range(200):
    if os.fork() == 0:
        b = b'x' * (4 << 20)
        time.sleep(60)
        os._exit(0)
    time.sleep(0.01)
time.sleep(60)
"""


def client_story(bed: Bed, node: str) -> str:
    """What the node's client pod did, for a failure to say: its status and its container's logs."""
    client = client_pods(bed).get(node)
    if client is None:
        return f"no client pod on {node}"
    name, story = client["metadata"]["name"], [json.dumps(client.get("status"), indent=1)]
    for previous in ("--previous", "--tail=30"):
        try:
            story.append(kubectl(bed.kc, "-n", APPS, "logs", name, previous)[-3000:])
        except AssertionError as e:
            story.append(str(e))
    return "\n".join(story)


def client_fuse_pid(bed: Bed, node: str) -> int:
    uid = client_pods(bed)[node]["metadata"]["uid"]
    pids: list[int] = eventually(
        lambda: fuse_processes(bed).get(uid, []), f"curvine-fuse in {node}'s client", timeout=120
    )
    [pid] = pids
    return pid


def client_terminations(bed: Bed, node: str) -> list[str]:
    """The client container's last termination reason, and the pod's restart count, as words."""
    status = client_pods(bed)[node]["status"]["containerStatuses"][0]
    last = (status.get("lastState") or {}).get("terminated") or {}
    return [str(last.get("reason")), str(status.get("restartCount"))]


def test_the_client_killed_9_then_oom_killed_running_pods_read_again(bed: Bed) -> None:
    n0, _ = NODES
    t0 = time.monotonic()
    os.kill(client_fuse_pid(bed, n0), signal.SIGKILL)
    readable_again(bed, t0, "client's curvine-fuse killed -9")
    print("after kill -9, the client's last termination, restarts:", client_terminations(bed, n0))

    # A real OOM kill in the client's memory cgroup (its limit, 512 MiB, from the CacheRuntime): a
    # process beside curvine-fuse outgrows the limit, and the kernel kills curvine-fuse, its only
    # candidate (the hog is exempt, which the privileged client may make it).
    pid = client_fuse_pid(bed, n0)
    Path(f"/proc/{pid}/oom_score_adj").write_text("1000")
    name = client_pods(bed)[n0]["metadata"]["name"]
    t0 = time.monotonic()
    subprocess.run(
        [kubectl_binary(), f"--kubeconfig={bed.kc}", "-n", APPS, "exec", name, "--",
         "python3", "-c", HOG],
        capture_output=True, timeout=180, check=False,
    )  # fmt: skip
    assert not Path(f"/proc/{pid}").exists()
    eventually(
        lambda: client_terminations(bed, n0)[0] == "OOMKilled" or None,
        "the client container's last termination OOMKilled",
        timeout=60,
    )
    readable_again(bed, t0, "client's curvine-fuse OOM-killed")


def test_deleting_the_pods_under_on_demand_removes_the_label_and_the_client(bed: Bed) -> None:
    """The runtime's cleanPolicy is OnDemand (this test's change to Curvine's CacheRuntime)."""
    n0, n1 = NODES
    t0 = time.monotonic()
    kubectl(bed.kc, "-n", APPS, "delete", "pod", POD_C, "--wait=true", "--timeout=120s")
    eventually(
        lambda: not labelled(bed, n1) and n1 not in client_pods(bed) and mounted(bed, n1) == 0,
        f"{n1}: label, client pod and mount gone",
        timeout=120,
    )
    bed.figures["OnDemand: last pod deleted to label, client and mount gone (s)"] = time.monotonic() - t0
    eventually(lambda: n1 not in fusemounts(bed), f"{n1}'s FuseMount deleted (the mirror trails the unstage)")
    assert labelled(bed, n0)
    assert mounted(bed, n0) == 1


def test_deleting_the_runtime_under_on_runtime_deleted_removes_the_label_and_the_client(bed: Bed) -> None:
    """cleanPolicy back to Curvine's default (OnRuntimeDeleted): the pods' deletion leaves the label
    and the client. Then Curvine's dataset file deleted as a user would, runtime and Dataset at once:
    the runtime's finalizer takes its client down while the master serves it, then the labels, then
    the master and worker go (controller/teardown.py); no client's preStop fails."""
    n0, _ = NODES
    patch = {"spec": {"client": {"cleanPolicy": names.CLEAN_POLICY_ON_RUNTIME_DELETED}}}
    kubectl(bed.kc, "-n", APPS, "patch", "cacheruntime", NAME, "--type=merge", "-p", json.dumps(patch))
    kubectl(bed.kc, "-n", APPS, "delete", "pod", POD_A, POD_B, "--wait=true", "--timeout=120s")
    time.sleep(5)  # what an unstage would do, it has done by now
    assert labelled(bed, n0)
    assert n0 in client_pods(bed)
    assert mounted(bed, n0) == 1

    t0 = time.monotonic()
    kubectl(bed.kc, "-n", APPS, "delete", "-f", str(DATASET), "--wait=true", "--timeout=180s")

    def left() -> list[str]:
        listed: list[dict[str, Any]] = get(bed.kc, "-n", APPS, "pods")["items"]  # type: ignore[assignment]
        return [p["metadata"]["name"] for p in listed if p["metadata"]["name"].startswith(f"{NAME}-")]

    eventually(lambda: not left() and not labelled(bed, n0), "Curvine's pods and the label gone", timeout=180)
    bed.figures["OnRuntimeDeleted: runtime deleted to label and pods gone (s)"] = time.monotonic() - t0
    for node in NODES:
        assert not labelled(bed, node)
    eventually(lambda: fusemounts(bed) == {}, "every FuseMount deleted")
    hooks = kubectl(bed.kc, "-n", APPS, "get", "events", "--field-selector", "reason=FailedPreStopHook")
    assert f"{NAME}-client" not in hooks, hooks
    kubectl(bed.kc, "delete", "-f", str(CLASS))


def test_no_mount_is_left_on_the_nodes(bed: Bed) -> None:
    target = names.target_path(APPS, NAME)
    try:
        eventually(lambda: all(mounted(bed, n) == 0 for n in NODES), "no mount at the target", timeout=30)
    finally:
        for node in NODES:
            print(node, [m for m in realnodes.namespace_mounts(bed.cluster, bed.nodes[node]) if target in m])
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if target in line]


# Each sample's differences from Curvine's file: (Curvine's line, the sample's line), as its header says.
CHANGES: dict[str, tuple[str, list[tuple[str | None, str]]]] = {
    "cacheruntimeclass.yaml": ("curvine-cache-runtime-class.yaml", [("curvine:latest", "IMAGE")] * 3),
    "dataset.yaml": (
        "curvine-dataset.yaml",
        [(None, 'heartbeat_interval: "500ms"'), (None, 'enable_splice: "false"')],
    ),
    "test-pod.yaml": ("test-pod.yaml", [("curvine:latest", "IMAGE")]),
}


def test_the_samples_are_curvines_files_but_for_what_their_headers_say() -> None:
    """manifests/samples/curvine-fluid/ against Curvine's cache-runtime/ at the pinned commit: the image
    and the machine's settings differ, nothing else (no cluster needed)."""
    source = curvinelayout.source_tarball()
    if not source.is_file():
        pytest.skip(f"no Curvine source: {source} is not there")
    theirs_dir = curvinelayout.ensure() / curvinelayout.CACHE_RUNTIME_DIR
    image = image_of_the_samples()
    for sample, (theirs, changes) in CHANGES.items():
        ours = [line for line in (SAMPLES / sample).read_text().splitlines() if not line.startswith("# ")]
        original = (theirs_dir / theirs).read_text().splitlines()
        removed = [line.strip() for line in original if line not in ours]
        added = [line.strip().replace(image, "IMAGE") for line in ours if line not in original]
        assert sorted(r.removeprefix("image: ") for r in removed) == sorted(
            c[0] for c in changes if c[0] is not None
        ), (sample, removed)
        assert sorted(a.removeprefix("image: ") for a in added) == sorted(c[1] for c in changes), (
            sample,
            added,
        )
