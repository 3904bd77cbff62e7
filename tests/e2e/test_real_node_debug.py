"""``kubectl fluid debug pod`` names the cause of each fault, made for real on one cluster of two real
nodes (the product deployed by ``kubectl apply -k manifests/``, the FUSE program the stand-in's:
tests/e2e/standin_install.py), and says OK once the fault is gone. Each fault is found by the rule
or judgement that names it (its ID in the ``Failed reason`` line, exit 1), which is how the node and
FUSE rules of ``diagnose`` (cli/rules/nodes.py, fuse.py) are provoked here; ``diagnose pod`` is asked
too, and must name the same rule (exit 1) while the fault lasts and find nothing (exit 0) once it is
fixed:

- a standalone FUSE stuck (its process stopped, SIGSTOP: the node service's health check marks the
  FuseMount Broken after its deadline): ``fuse-broken``; SIGCONT: OK;
- that FUSE killed -9 while a ResourceQuota keeps its pod from being replaced: ``fuse-pod-not-running``
  (the FuseMount still says Ready); the quota deleted: OK;
- a missing client (the node tainted, the app pod tolerating it and the client DaemonSet not, so
  NodeStage waits and kubelet's FailedMount carries the CSI's FailedPrecondition):
  ``client-not-scheduled`` (diagnose's runtime rule) ahead of ``failed-mount``, with the walk saying
  the node has no client pod;
- a clientless dataset's PVC (the PV attribute the controller writes for one, refused by the node):
  ``clientless-pvc``, explain's judgement, ahead of the FailedMount it explains;
- an injection refused by the webhook (a Deployment asking for a dataset that does not exist: its
  pods are never created): ``pod-never-created`` with the ReplicaSet's FailedCreate, the denial;
- the CSI node pod kept off the second node (kubelet unregisters the driver from its CSINode):
  ``csi-node-not-registered``; let back: OK;
- the second node lost (kubelet and containerd killed -9: NotReady, its FuseMount Unknown):
  ``node-not-ready-with-fuse``, ahead of ``fuse-broken``; revived: OK.

Skipped, saying why, where a real node cannot run."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
import yaml

from kubectl_fluid.api import names
from kubectl_fluid.cli import podwalk
from localcluster import nodeloss, realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.standin_install import use_standin
from tests.e2e.test_cli_inject import kubectl_fluid
from tests.e2e.test_real_node_fuse import app_pod as fuse_app_pod
from tests.e2e.test_real_node_fuse import fuse_processes
from tests.e2e.test_real_node_product import get, ready
from tests.e2e.test_three_real_nodes import Bed
from tests.e2e.users_cluster import users_cluster, why_no_users_cluster
from tests.e2e.wait import eventually

SYSTEM = names.FLUID_NAMESPACE
APPS = "default"
NODES = [f"{realnodes.NAME_PREFIX}{i}" for i in range(2)]
MASTERS = "standin-masters.default.svc:8995"  # the stand-in's cluster: a directory of the node's
VOLUME = "vol"  # a static volume of the driver served by a standalone FUSE pod


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_no_users_cluster()
    if reason:
        pytest.skip(reason)
    t0 = time.monotonic()
    with users_cluster(tmp_path_factory.mktemp("debug-cluster"), nodes=len(NODES)) as cluster:
        b = Bed(cluster)
        kubectl(b.kc, "apply", "-k", str(MANIFESTS))
        use_standin(b.kc)
        kubectl(
            b.kc, "-n", SYSTEM, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=5m"
        )
        b.figures["cluster up, product installed"] = f"{time.monotonic() - t0:.0f} s"
        yield b
        print("\n".join(f"{k}: {v}" for k, v in b.figures.items()))


def kget(bed: Bed, *args: str) -> Any:
    return get(bed.kc, *args)


def apply(bed: Bed, *objects: dict[str, Any]) -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(body))


def app_pod(name: str, claim: str, node: str) -> dict[str, Any]:
    """test_real_node_fuse.py's pod (busybox, the claim at /data with HostToContainer), on ``node``."""
    pod = fuse_app_pod(name, claim)
    pod["spec"]["nodeSelector"] = {names.LABEL_HOSTNAME: node}
    return pod


def static_volume(name: str, **attrs: str) -> list[dict[str, Any]]:
    """A static PV of the driver (the stand-in's masters, directory ``/{name}``) and its claim."""
    attributes = {names.PARAM_MASTER_ADDRS: MASTERS, names.PARAM_CURVINE_PATH: f"/{name}", **attrs}
    spec = {"accessModes": ["ReadWriteMany"], "storageClassName": ""}
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                **spec,
                "capacity": {"storage": "1Gi"},
                "claimRef": {"namespace": APPS, "name": name},
                "csi": {"driver": names.CSI_DRIVER, "volumeHandle": name, "volumeAttributes": attributes},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": APPS},
            "spec": {**spec, "volumeName": name, "resources": {"requests": {"storage": "1Gi"}}},
        },
    ]


def standin_directory(bed: Bed, node: str, name: str) -> None:
    """The volume's directory in the stand-in's cluster on ``node`` (what a Curvine master holds)."""
    (bed.node(node).root / "curvine-standin" / names.cluster_id(MASTERS) / name).mkdir(
        parents=True, exist_ok=True
    )


def debug(bed: Bed, pod: str) -> tuple[int, str]:
    """``kubectl fluid debug pod POD``: (exit status, report)."""
    run = kubectl_fluid(bed.kc, "debug", "pod", pod, "-n", APPS, "--tail", "5")
    assert run.returncode in (0, 1), run.stderr
    assert run.returncode == 0 or run.stdout, run.stderr
    return run.returncode, run.stdout


def last_line(report: str) -> str:
    return report.rstrip("\n").splitlines()[-1]


def failed_with(bed: Bed, pod: str, rule: str) -> str | None:
    """The report when debug ends in ``Failed reason: [rule]`` with exit 1, else None."""
    code, report = debug(bed, pod)
    return report if code == 1 and last_line(report).startswith(f"Failed reason: [{rule}]") else None


# Judgements of debug's own (explain pod's, a pod never created): diagnose has no rule of these IDs.
DEBUG_ONLY = {podwalk.CLIENTLESS_PVC, podwalk.NOT_INJECTED, podwalk.NEVER_CREATED}


def diagnosed(bed: Bed, pod: str) -> tuple[int, set[str]]:
    """``kubectl fluid diagnose pod POD -o json``: (exit status, the IDs of its error findings)."""
    run = kubectl_fluid(bed.kc, "diagnose", "pod", pod, "-n", APPS, "-o", "json")
    assert run.returncode in (0, 1), run.stderr
    findings = json.loads(run.stdout)["findings"]
    return run.returncode, {f["rule"] for f in findings if f["severity"] == "error"}


def diagnose_finds(bed: Bed, pod: str, rule: str) -> None:
    """diagnose, the verb, names the same fault by the same rule (exit 1): one rule set, two verbs."""

    def found() -> bool:
        code, rules = diagnosed(bed, pod)
        return code == 1 and rule in rules

    eventually(found, f"diagnose pod {pod}: {rule}", timeout=60, interval=2)


def diagnose_clean(bed: Bed, pod: str) -> None:
    eventually(
        lambda: diagnosed(bed, pod) == (0, set()), f"diagnose pod {pod}: clean", timeout=60, interval=2
    )


def healthy(bed: Bed, pod: str) -> str | None:
    code, report = debug(bed, pod)
    return report if code == 0 and last_line(report) == "OK" else None


def wait_failed(bed: Bed, pod: str, rule: str, timeout: float = 180) -> str:
    t0 = time.monotonic()
    try:
        report = eventually(
            partial(failed_with, bed, pod, rule), f"debug pod {pod}: [{rule}]", timeout=timeout, interval=2
        )
    except AssertionError as e:
        raise AssertionError(f"{e}\n{debug(bed, pod)[1]}") from None
    assert report is not None
    bed.figures[f"{pod}: fault to debug naming {rule}"] = f"{time.monotonic() - t0:.0f} s"
    print(f"$ kubectl fluid debug pod {pod}\n{report}")
    if rule not in DEBUG_ONLY:
        diagnose_finds(bed, pod, rule)
    return report


def wait_healthy(bed: Bed, pod: str, timeout: float = 180) -> str:
    try:
        report = eventually(partial(healthy, bed, pod), f"debug pod {pod}: OK", timeout=timeout, interval=2)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{debug(bed, pod)[1]}") from None
    assert report is not None
    diagnose_clean(bed, pod)  # the fault cleared for diagnose too
    return report


def running(bed: Bed, name: str) -> bool:
    return ready(kget(bed, "-n", APPS, "pod", name))


def test_a_stuck_standalone_fuse_is_named_and_ok_again_once_it_answers(bed: Bed) -> None:
    n0 = NODES[0]
    standin_directory(bed, n0, VOLUME)
    apply(bed, *static_volume(VOLUME), app_pod("app", VOLUME, n0))
    eventually(partial(running, bed, "app"), "app Running with its volume", timeout=240)
    report = wait_healthy(bed, "app")
    print(f"$ kubectl fluid debug pod app\n{report}")
    assert f"{names.CSI_DRIVER} registered" in report, report
    assert "mode standalone, Ready" in report, report
    assert f"Log {SYSTEM}/curvine-fuse-" in report, report  # the FUSE pod's log tailed
    assert f"-c {names.CSI_NODE_CONTAINER}" in report, report  # and the node's CSI pod's

    key = kget(bed, "-n", SYSTEM, "pods", "-l", names.LABEL_MOUNT_KEY)["items"][0]["metadata"]["labels"][
        names.LABEL_MOUNT_KEY
    ]
    [pid] = fuse_processes(bed.node(n0), key)
    os.kill(pid, signal.SIGSTOP)
    try:
        report = wait_failed(bed, "app", "fuse-broken", timeout=240)
        assert "has not answered" in report, report
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_healthy(bed, "app")


def test_a_fuse_killed_and_kept_from_coming_back_is_named_and_ok_once_replaced(bed: Bed) -> None:
    """The FUSE program killed -9 while a quota keeps fluid-system from making another pod: the node
    service deletes the dead FUSE pod and cannot replace it (its FuseMount still says Ready: a dead
    FUSE answers ENOTCONN, which the health check leaves to the replacement). The quota gone, the node
    service's next try replaces it."""
    n0 = NODES[0]
    [fuse] = kget(
        bed, "-n", SYSTEM, "pods", "-l", names.LABEL_MOUNT_KEY, f"--field-selector=spec.nodeName={n0}"
    )["items"]
    key = fuse["metadata"]["labels"][names.LABEL_MOUNT_KEY]
    running_pods = [
        p for p in kget(bed, "-n", SYSTEM, "pods")["items"] if p["status"].get("phase") == "Running"
    ]
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-new-pods", "namespace": SYSTEM},
        "spec": {"hard": {"pods": str(len(running_pods) - 1)}},
    }
    apply(bed, quota)
    eventually(
        lambda: (
            "pods"
            in kget(bed, "-n", SYSTEM, "resourcequota", "no-new-pods").get("status", {}).get("used", {})
        ),
        "the quota counted",
    )
    [pid] = fuse_processes(bed.node(n0), key)
    os.kill(pid, signal.SIGKILL)
    try:
        wait_failed(bed, "app", "fuse-pod-not-running")
        # The node service's log, tailed, says why it cannot replace it.
        report = eventually(
            lambda: (r := debug(bed, "app")[1]) and "exceeded quota" in r and r,
            "the quota in the CSI log",
            timeout=60,
        )
        assert last_line(report).startswith("Failed reason: [fuse-pod-not-running]"), report
        print(f"$ kubectl fluid debug pod app\n{report}")
    finally:
        kubectl(bed.kc, "-n", SYSTEM, "delete", "resourcequota", "no-new-pods")
    wait_healthy(bed, "app")


NO_CLIENT_TAINT = {"key": "example.com/no-client", "value": "true", "effect": "NoSchedule"}


def test_a_missing_client_is_named_by_the_csis_failed_precondition(bed: Bed) -> None:
    """The first node tainted, the app pod tolerating it and the client DaemonSet not: NodeStage
    labels the node for the client, whose pod never comes. (A nodeSelector on the client would not
    do: the webhook gives the app pods the client's placement, so they would not be scheduled.)"""
    n0 = NODES[0]
    samples = MANIFESTS / "samples"
    kubectl(bed.kc, "apply", "-f", str(samples / "cacheruntimeclass-curvine.yaml"))
    docs = [d for d in yaml.safe_load_all((samples / "dataset-curvine.yaml").read_text()) if d]
    for doc in docs:
        if doc["kind"] == "CacheRuntime":  # no cache needed behind a client that never starts
            doc["spec"]["master"]["replicas"] = 0
            doc["spec"]["worker"]["replicas"] = 0
    apply(bed, *docs)
    eventually(
        lambda: kget(bed, "-n", APPS, "pvc", "data")["status"].get("phase") == "Bound",
        "the Dataset's PVC Bound",
        timeout=180,
    )
    taint = f"{NO_CLIENT_TAINT['key']}={NO_CLIENT_TAINT['value']}:{NO_CLIENT_TAINT['effect']}"
    kubectl(bed.kc, "taint", "node", n0, taint)
    try:
        pod = app_pod("no-client", "data", n0)
        pod["spec"]["tolerations"] = [{**NO_CLIENT_TAINT, "operator": "Equal"}]
        apply(bed, pod)
        # diagnose's client-not-scheduled (the DaemonSet does not tolerate the taint) is the cause;
        # kubelet's FailedMount, the CSI's FailedPrecondition, its symptom, listed beside it.
        wait_failed(bed, "no-client", "client-not-scheduled")

        def both() -> str | None:
            report = failed_with(bed, "no-client", "client-not-scheduled")
            found = report and "[failed-mount]" in report and "FailedPrecondition" in report
            return report if found else None

        report = eventually(both, "the FailedMount beside the unscheduled client", timeout=120, interval=2)
        assert report is not None
        assert f"data: no client pod on node {n0}" in report, report
    finally:
        kubectl(bed.kc, "-n", APPS, "delete", "pod", "no-client", "--wait=false", "--ignore-not-found")
        kubectl(bed.kc, "taint", "node", n0, f"{taint}-")


def test_a_clientless_datasets_pvc_is_named_ahead_of_its_failed_mount(bed: Bed) -> None:
    name = "clientless"
    apply(bed, *static_volume(name, **{names.VOLUME_ATTR_CLIENTLESS: "true"}), app_pod(name, name, NODES[0]))
    wait_failed(bed, name, "clientless-pvc")  # from its PV alone, before kubelet even tried
    # kubelet's FailedMount comes next: found too, and still the clientless PVC named as its cause.

    def both() -> str | None:
        report = failed_with(bed, name, "clientless-pvc")
        return report if report and "[failed-mount]" in report else None

    report = eventually(both, "the FailedMount found beside the clientless PVC", timeout=120, interval=2)
    assert report is not None
    assert "this dataset is clientless" in report, report  # the CSI node's words
    kubectl(bed.kc, "-n", APPS, "delete", "pod", name, "--wait=false")


def test_an_injection_refused_by_the_webhook_is_named_by_the_failed_create(bed: Bed) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "refused", "namespace": APPS},
        "spec": {
            "selector": {"matchLabels": {"app": "refused"}},
            "template": {
                "metadata": {
                    "labels": {"app": "refused", names.LABEL_INJECT: names.TRUE},
                    "annotations": {names.ANNOTATION_DATASET: "no-such-dataset"},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": realnodes.busybox_image("1.35.0"),
                            "command": ["sleep", "1d"],
                        }
                    ]
                },
            },
        },
    }
    apply(bed, deployment)
    report = wait_failed(bed, "refused", "pod-never-created")
    assert "denied the request" in report, report
    assert "no-such-dataset" in report, report
    assert f"Log {SYSTEM}/fluid-webhook-" in report, report  # the webhook's log tailed
    kubectl(bed.kc, "-n", APPS, "delete", "deployment", "refused")


def csi_node_affinity(bed: Bed, away_from: str | None) -> None:
    """The CSI node DaemonSet kept off ``away_from`` (None: let back everywhere)."""
    if away_from is None:
        patch: list[dict[str, Any]] = [{"op": "remove", "path": "/spec/template/spec/affinity"}]
    else:
        term = {
            "matchExpressions": [{"key": names.LABEL_HOSTNAME, "operator": "NotIn", "values": [away_from]}]
        }
        affinity = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
        patch = [{"op": "add", "path": "/spec/template/spec/affinity", "value": affinity}]
    kubectl(
        bed.kc,
        "-n",
        SYSTEM,
        "patch",
        "daemonset",
        names.CSI_NODE_DAEMONSET,
        "--type=json",
        "-p",
        json.dumps(patch),
    )


def registered(bed: Bed, node: str) -> bool:
    drivers = kget(bed, "csinode", node)["spec"].get("drivers") or []
    return names.CSI_DRIVER in [d["name"] for d in drivers]


def test_a_node_without_the_csi_driver_is_named_and_ok_once_it_registers(bed: Bed) -> None:
    n1 = NODES[1]
    standin_directory(bed, n1, VOLUME)
    eventually(lambda: registered(bed, n1), f"the driver registered on {n1}", timeout=120)
    csi_node_affinity(bed, n1)
    try:
        t0 = time.monotonic()
        eventually(lambda: not registered(bed, n1), f"the driver unregistered from {n1}", timeout=120)
        bed.figures["CSI node pod kept off: to the driver gone from the CSINode"] = (
            f"{time.monotonic() - t0:.0f} s"
        )
        apply(bed, app_pod("on-n1", VOLUME, n1))
        report = wait_failed(bed, "on-n1", "csi-node-not-registered")
        # (Its pod there may still be seen ending: Succeeded, or being deleted.)
        assert f"CSI:        {names.CSI_DRIVER} NOT registered;" in report, report
    finally:
        csi_node_affinity(bed, None)
    eventually(partial(running, bed, "on-n1"), "on-n1 Running once the driver registered", timeout=240)
    wait_healthy(bed, "on-n1")


def test_a_lost_node_with_fuse_is_named_and_ok_once_it_is_back(bed: Bed) -> None:
    n1 = bed.node(NODES[1])
    t0 = time.monotonic()
    nodeloss.lose(bed.cluster, n1)
    try:
        report = wait_failed(bed, "on-n1", "node-not-ready-with-fuse", timeout=240)
        assert "[fuse-broken]" in report, report  # its FuseMount Unknown: a symptom, named after
    finally:
        bed.figures["node lost → debug naming it"] = f"{time.monotonic() - t0:.0f} s"
        nodeloss.revive(bed.cluster, n1)
    wait_healthy(bed, "on-n1", timeout=240)


def test_debug_of_a_pod_that_never_was_is_one_error_line(bed: Bed) -> None:
    run = kubectl_fluid(bed.kc, "debug", "pod", "nothing-here", "-n", APPS)
    assert run.returncode == 1, run
    assert run.stderr.startswith('error: pod "nothing-here" not found in namespace'), run.stderr
