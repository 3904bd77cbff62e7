"""``kubectl fluid diagnose`` on a real node: the rules about pods that run, each provoked for real and
cleared when the fault is fixed. The product deployed by ``kubectl apply -k manifests/`` (its webhook
in its pod, reached by the API server: the dry-run probe sees it admit), a CacheRuntimeClass whose
master, worker and client are busybox containers:

- the runtime's master command exits 3 (its ``args`` override): ``master-not-ready``, with the
  container's CrashLoopBackOff and exit code; fixed by the right args and the pod re-made;
- the class's mountUFS finds its UFS down (a file the script tests): ``mountufs-failed`` with the
  script's stderr from the Warning Event; fixed by bringing it up, the controller's retry mounts;
- two workers asked of one node (their anti-affinity keeps one Pending): ``workers-partially-ready``,
  a warning (exit 0 when it is the only finding); cleared by asking for one;
- the node tainted, an app pod (tolerating it) mounting the Dataset's PVC there: the CSI node labels
  the node, the client DaemonSet makes no pod: ``client-not-scheduled`` naming the taint; untainted,
  the client runs.

One cluster, one real node (tests/e2e/users_cluster.py). Skipped, saying why, where a real node
cannot run or the image cannot be built."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import localcluster
from kubectl_fluid.api import names
from localcluster import realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_cli_inject import kubectl_fluid
from tests.e2e.test_real_node_product import get, ready
from tests.e2e.users_cluster import users_cluster, why_no_users_cluster
from tests.e2e.wait import eventually

NS = "default"
CLASS = "diagnosed"
NODE = f"{realnodes.NAME_PREFIX}0"
TAINT = "diagnose.fluid.io/test"
BUSYBOX = realnodes.busybox_image("1.35.0")
SLEEP = "touch /tmp/ready; exec sleep 100000"
# mountUFS as a class defines it: the UFS is "down" until /tmp/ufs-up exists in the master.
MOUNT_UFS = (
    "test -f /tmp/ufs-up || { echo 'mount s3://bucket/data: connection refused' >&2; exit 2; }; "
    'echo \'{"mounted": ["/default"]}\''
)


@dataclass
class Bed:
    cluster: localcluster.Cluster
    kc: Path
    figures: dict[str, float] = field(default_factory=dict)


def container(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": BUSYBOX,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c"],
        "args": [SLEEP],
        "readinessProbe": {"exec": {"command": ["test", "-f", "/tmp/ready"]}, "periodSeconds": 2},
    }


def runtime_class() -> dict[str, Any]:
    def part(name: str) -> dict[str, Any]:
        return {"template": {"spec": {"restartPolicy": "Always", "containers": [container(name)]}}}

    client = part("client")
    # Its FUSE mount is Bidirectional (the controller sets it), which only a privileged container may have.
    client["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}

    master = part("master")
    master["executionEntries"] = {"mountUFS": {"command": ["sh", "-c", MOUNT_UFS], "timeout": 20}}
    return {
        "apiVersion": names.API_VERSION,
        "kind": "CacheRuntimeClass",
        "metadata": {"name": CLASS},
        "fileSystemType": "busyboxfs",
        "topology": {"master": master, "worker": part("worker"), "client": client},
    }


def dataset_and_runtime(name: str, workers: int = 1, **master: Any) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": names.API_VERSION,
            "kind": "Dataset",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"mounts": [{"name": "default", "mountPoint": "s3://bucket/data"}]},
        },
        {
            "apiVersion": names.API_VERSION,
            "kind": "CacheRuntime",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "runtimeClassName": CLASS,
                "master": {"replicas": 1, **master},
                "worker": {"replicas": workers},
            },
        },
    ]


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_no_users_cluster()
    if reason:
        pytest.skip(reason)
    with users_cluster(tmp_path_factory.mktemp("diagnose-cluster")) as cluster:
        b = Bed(cluster, cluster.kubeconfig)
        t0 = time.monotonic()
        kubectl(b.kc, "apply", "-k", str(MANIFESTS))
        kubectl(
            b.kc,
            "-n",
            names.FLUID_NAMESPACE,
            "wait",
            "--for=condition=Available",
            "deployment",
            "--all",
            "--timeout=5m",
        )
        kubectl(b.kc, "apply", "-f", "-", stdin=json.dumps(runtime_class()))
        b.figures["product installed (s)"] = time.monotonic() - t0
        yield b
        print("\n".join(f"{k}: {v:.1f}" for k, v in b.figures.items()))


def apply(bed: Bed, *objects: dict[str, Any]) -> None:
    kubectl(
        bed.kc,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )


def diagnose(bed: Bed, *args: str, output: str = "json") -> tuple[int, Any]:
    run = kubectl_fluid(bed.kc, "diagnose", *args, "-n", NS, *(("-o", output) if output else ()))
    assert run.returncode in (0, 1), f"exit {run.returncode}: {run.stderr}"
    if not output:
        return run.returncode, run.stdout
    report = json.loads(run.stdout)
    assert run.returncode == (1 if report["summary"]["errors"] else 0), report
    assert report["unreadable"] == {}, report  # the admin reads everything, and may dry-run pods
    return run.returncode, report


def finding(bed: Bed, rule: str, *args: str, evidence: str = "") -> dict[str, Any]:
    """The finding of ``rule`` (one of whose evidence lines contains ``evidence``), waited for."""

    def look() -> dict[str, Any] | None:
        _, report = diagnose(bed, *args)
        return next(
            (
                f
                for f in report["findings"]
                if f["rule"] == rule and any(evidence in e for e in f["evidence"])
            ),
            None,
        )

    hit: dict[str, Any] = eventually(look, f"{rule} ({evidence!r})", timeout=180, interval=2)
    return hit


def gone(bed: Bed, rule: str, *args: str) -> dict[str, Any]:
    """The report once ``rule`` no longer fires."""

    def look() -> dict[str, Any] | None:
        _, report = diagnose(bed, *args)
        return None if any(f["rule"] == rule for f in report["findings"]) else report

    report: dict[str, Any] = eventually(look, f"{rule} cleared", timeout=240, interval=2)
    return report


def show(bed: Bed, *args: str) -> None:
    """The text output, printed for the record (the README's example comes from here)."""
    code, text = diagnose(bed, *args, output="")
    print(f"$ kubectl fluid diagnose {' '.join(args)} -n {NS}   # exit {code}\n{text}")


def pod_ready(bed: Bed, pod: str) -> None:
    eventually(lambda: ready(get(bed.kc, "-n", NS, "pod", pod)), f"{pod} Ready", timeout=180)


def patch_runtime(bed: Bed, name: str, kind: str, patch: str) -> None:
    kubectl(bed.kc, "-n", NS, "patch", "cacheruntime", name, f"--type={kind}", "-p", patch)


def exec_in(bed: Bed, pod: str, *argv: str) -> None:
    kubectl(bed.kc, "-n", NS, "exec", pod, "--", *argv)


def test_master_down_then_mountufs_failing_then_a_worker_not_ready(bed: Bed) -> None:
    t0 = time.monotonic()
    apply(bed, *dataset_and_runtime("demo", workers=2, args=["echo 'cannot bind :8995' >&2; exit 3"]))
    hit = finding(bed, "master-not-ready", "dataset", "demo", evidence="last exit 3")
    finding(bed, "workers-partially-ready", "dataset", "demo", evidence="anti-affinity")
    bed.figures["master-not-ready found (s)"] = time.monotonic() - t0
    assert hit["severity"] == "error"
    assert hit["evidence"][0] == f"StatefulSet {NS}/demo-master: 0/1 ready"
    show(bed, "dataset", "demo")

    # The fix: the right command, and the broken pod re-made (a StatefulSet does not roll a pod that
    # never was Ready).
    patch_runtime(bed, "demo", "json", '[{"op": "remove", "path": "/spec/master/args"}]')
    eventually(
        lambda: (
            get(bed.kc, "-n", NS, "statefulset", "demo-master")["spec"]["template"]["spec"]["containers"][0][
                "args"
            ]
            == [SLEEP]
        ),
        "the master's StatefulSet without the bad args",
        timeout=60,
    )
    kubectl(bed.kc, "-n", NS, "delete", "pod", "demo-master-0", "--wait=false")
    t1 = time.monotonic()
    # Ready now, the master runs the class's mountUFS, whose UFS is down.
    hit = finding(bed, "mountufs-failed", "dataset", "demo", evidence="connection refused")
    bed.figures["master fixed to mountufs-failed found (s)"] = time.monotonic() - t1
    assert any("reason MountUFSFailed" in e for e in hit["evidence"]), hit
    assert not any(f["rule"] == "master-not-ready" for f in diagnose(bed, "dataset", "demo")[1]["findings"])
    show(bed, "dataset", "demo")

    exec_in(bed, "demo-master-0", "touch", "/tmp/ufs-up")
    t2 = time.monotonic()
    report = gone(bed, "mountufs-failed", "dataset", "demo")
    bed.figures["UFS up to mountufs-failed cleared (s)"] = time.monotonic() - t2

    # The second worker all along: Pending, its anti-affinity finds no second node. A warning alone
    # exits 0.
    [hit] = report["findings"]
    assert (hit["rule"], hit["severity"]) == ("workers-partially-ready", "warning")
    assert hit["evidence"][0] == f"StatefulSet {NS}/demo-worker: 1/2 ready"
    assert hit["evidence"][1].startswith(f"Pod {NS}/demo-worker-1: Pending, not ready; unschedulable: "), hit
    assert diagnose(bed, "dataset", "demo")[0] == 0
    show(bed, "dataset", "demo")
    patch_runtime(bed, "demo", "merge", '{"spec": {"worker": {"replicas": 1}}}')
    report = gone(bed, "workers-partially-ready", "dataset", "demo")
    assert report["findings"] == []
    show(bed, "dataset", "demo")


def app_pod(name: str, dataset: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeSelector": {names.LABEL_HOSTNAME: NODE},
            "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {
                    "name": "app",
                    "image": BUSYBOX,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sleep", "100000"],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": dataset}}],
        },
    }


def test_a_tainted_node_gets_no_client(bed: Bed) -> None:
    # No worker: an Exclusive dataset's worker (demo's) keeps every other worker off the one node.
    apply(bed, *dataset_and_runtime("tainted", workers=0))
    pod_ready(bed, "tainted-master-0")
    kubectl(bed.kc, "taint", "nodes", NODE, f"{TAINT}=yes:NoSchedule")
    try:
        apply(bed, app_pod("reader", "tainted"))
        t0 = time.monotonic()
        hit = finding(bed, "client-not-scheduled", "dataset", "tainted", evidence=f"{TAINT}=yes:NoSchedule")
        bed.figures["app pod created to client-not-scheduled found (s)"] = time.monotonic() - t0
        assert f"no client on node {NODE}, where reader uses the PVC tainted" in hit["message"]
        code, report = diagnose(bed, "pod", "reader")
        assert code == 1
        assert "client-not-scheduled" in [f["rule"] for f in report["findings"]]
        show(bed, "pod", "reader")
    finally:
        kubectl(bed.kc, "taint", "nodes", NODE, f"{TAINT}:NoSchedule-")
    t1 = time.monotonic()
    gone(bed, "client-not-scheduled", "dataset", "tainted")
    bed.figures["untainted to client-not-scheduled cleared (s)"] = time.monotonic() - t1
    client_pods: list[dict[str, Any]] = get(
        bed.kc, "-n", NS, "pods", "-l", names.client_pod_selector("tainted")
    )["items"]  # type: ignore[assignment]
    assert [p["spec"]["nodeName"] for p in client_pods] == [NODE]
    kubectl(bed.kc, "-n", NS, "delete", "pod", "reader", "--wait=false")
