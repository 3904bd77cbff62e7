"""The dataset-life verbs against one dataset with 1,000 app pods (issue 32), on kwok nodes:

- ``kubectl-fluid inspect dataset ds1`` (the tree, and -o json) beside its floor in the same run:
  ``kubectl get`` of the same eleven kinds in one command (``KINDS``), which lists what inspect lists
  and prints it as JSON, no joins; and ``kubectl get pods -o json`` alone (the list that weighs).
  Goal: under 1 s (issue 32).

The setup: the controller (a local process, as its ServiceAccount) binds a Curvine dataset (master,
workers, client DaemonSet, ConfigMap, PV/PVC); 1,000 pods use it, half mounting its PVC, half carrying
its runtime config as the webhook injects it (the webhook is not needed to make them), on 10 kwok
nodes, Running. ``time_verb()`` times any plugin command against the same setup and reports it beside
the same floor: another verb's row is one line in ``VERBS``.
"""

from __future__ import annotations

import json
import secrets
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config

from kubectl_fluid.api import names
from tests.bench.bench_cli import BIN, plugin_env
from tests.bench.bench_scale import add_nodes, parallel
from tests.bench.report import Goal, Report, at_most
from tests.e2e.fluid import (
    MANIFESTS,
    ControllerProcess,
    install,
    kubectl,
    kubectl_binary,
    service_account_kubeconfig,
)
from tests.e2e.test_controller import dataset, runtime
from tests.e2e.wait import eventually

DS = "ds1"
PODS = 1000
NODES = 10  # kwok nodes take 110 pods each
ROUNDS = 10
# What inspect lists, in one kubectl command: the floor of reading them at all.
KINDS = (
    "datasets,cacheruntimes,cacheruntimeclasses,configmaps,persistentvolumeclaims,persistentvolumes,"
    "statefulsets,daemonsets,pods,fusemounts,dataloads"
)
FLOOR_NAME = "kubectl get <inspect's 11 kinds> -o json"


@dataclass
class Setup:
    """The namespace with the dataset and its 1,000 pods, and the floor measured on it."""

    kubeconfig: Path
    namespace: str
    env: dict[str, str]
    floor_ms: float = 0.0


# Plugin commands timed against the setup (``-n`` is added): (row name, arguments, goal, exit codes
# that are not a failure). A verb that exits 1 on findings (diagnose) lists (0, 1).
VERBS: list[tuple[str, list[str], Goal | None, tuple[int, ...]]] = [
    (
        f"kubectl-fluid inspect dataset ({PODS} app pods)",
        ["inspect", "dataset", DS],
        at_most(1000, "ms"),
        (0,),
    ),
    (
        f"kubectl-fluid inspect dataset -o json ({PODS} app pods)",
        ["inspect", "dataset", DS, "-o", "json"],
        None,
        (0,),
    ),
    # diagnose exits 1 on an error finding: either is a run, not a failure of the bench.
    (
        f"kubectl-fluid diagnose dataset ({PODS} app pods)",
        ["diagnose", "dataset", DS],
        at_most(1000, "ms"),
        (0, 1),
    ),
    (f"kubectl-fluid diagnose --all ({PODS} app pods)", ["diagnose", "--all"], at_most(1000, "ms"), (0, 1)),
]


def median_run_ms(
    argv: Sequence[str], env: dict[str, str], codes: tuple[int, ...] = (0,), rounds: int = ROUNDS
) -> float:
    """Median wall time of a whole process, after one warm-up run; an exit status outside ``codes``
    fails the bench with the process's words."""

    def once() -> float:
        t0 = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        took = (time.perf_counter() - t0) * 1000
        if done.returncode not in codes:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
        return took

    once()
    return statistics.median(once() for _ in range(rounds))


def time_verb(
    report: Report,
    setup: Setup,
    name: str,
    args: Sequence[str],
    *,
    goal: Goal | None = None,
    codes: tuple[int, ...] = (0,),
) -> float:
    """``kubectl-fluid ARGS -n NS`` against the setup: its median, reported beside the floor."""
    ms = median_run_ms([str(BIN / "kubectl-fluid"), *args, "-n", setup.namespace], setup.env, codes)
    report.add(name, ms, "ms", FLOOR_NAME, setup.floor_ms, goal=goal)
    return ms


def app_pod(i: int) -> Any:
    """Even: mounts the dataset's PVC. Odd: carries its runtime config as the webhook injects it."""
    cm = names.runtime_config_configmap(DS)
    container: dict[str, Any] = {"name": "app", "image": "registry.invalid/app:1"}
    labels = {"app": "reader" if i % 2 == 0 else "trainer"}
    if i % 2 == 0:
        volume: dict[str, Any] = {"name": "data", "persistentVolumeClaim": {"claimName": DS}}
        container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    else:
        volume = {"name": cm, "configMap": {"name": cm}}
        container["volumeMounts"] = [
            {"name": cm, "mountPath": f"{names.POD_CONFIG_ROOT}/{DS}", "readOnly": True}
        ]
        labels[names.LABEL_INJECT_DONE] = names.TRUE
    return {
        "metadata": {"name": f"app-{i:04d}", "labels": labels},
        "spec": {
            "nodeSelector": {"type": "kwok"},
            "tolerations": [{"operator": "Exists"}],
            "containers": [container],
            "volumes": [volume],
        },
    }


def in_process_ms(kubeconfig: Path, ns: str, rounds: int = ROUNDS) -> tuple[float, float]:
    """Medians, in this process on one open connection: ``snapshot.read()`` of inspect's kinds, and
    the model and tree built from what it read (where the verb's time goes, start-up aside)."""
    from datetime import UTC, datetime

    from kubectl_fluid.cli import inspectview, snapshot
    from kubectl_fluid.cli.inspect import KINDS as INSPECTED
    from kubectl_fluid.kube import kubeconfig as kubeconfigs
    from kubectl_fluid.kube.transport import Api

    reads, models = [], []
    with Api(kubeconfigs.load(str(kubeconfig), None)) as api:
        for _ in range(rounds + 1):  # the first warms the connection and the server's caches
            t0 = time.perf_counter()
            snap = snapshot.read(api, ns, INSPECTED)
            t1 = time.perf_counter()
            found = inspectview.inspect(snap, ns, DS)
            assert found is not None
            inspectview.render_tree(inspectview.tree(found, datetime.now(UTC)))
            reads.append((t1 - t0) * 1000)
            models.append((time.perf_counter() - t1) * 1000)
    return statistics.median(reads[1:]), statistics.median(models[1:])


def running(core: client.CoreV1Api, ns: str) -> int:
    pods: Any = core.list_namespaced_pod(
        ns, label_selector="app in (reader,trainer)", field_selector="status.phase=Running"
    )
    return len(pods.items)


def prepare(kubeconfig: Path, core: client.CoreV1Api, custom: client.CustomObjectsApi, ns: str) -> None:
    install(kubeconfig)
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-curvine.yaml"))
    add_nodes(core, NODES)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    eventually(lambda: core.read_namespaced_service_account("default", ns), f"ServiceAccount {ns}/default")
    for plural, body in (
        ("datasets", dataset(DS)),
        ("cacheruntimes", runtime(DS, runtime_class="curvine", clientless=False, worker={"replicas": 2})),
    ):
        custom.create_namespaced_custom_object(names.GROUP, names.VERSION, ns, plural, body)

    def bound() -> bool:
        found: Any = custom.get_namespaced_custom_object(names.GROUP, names.VERSION, ns, "datasets", DS)
        return (found.get("status") or {}).get("phase") == "Bound"

    eventually(bound, f"Dataset {DS} Bound", timeout=60)
    # The client on one node, as the CSI node's NodeStage labels it (once the runtime wants it).
    core.patch_node("kwok-node-0", {"metadata": {"labels": {names.fuse_node_label(ns, DS): names.TRUE}}})
    t0 = time.monotonic()
    parallel(lambda i: core.create_namespaced_pod(ns, app_pod(i)), list(range(PODS)))
    eventually(lambda: running(core, ns) == PODS, f"{PODS} app pods Running", timeout=600, interval=2)
    print(f"[bench] inspect: {PODS} app pods created and Running in {time.monotonic() - t0:.0f}s", flush=True)


def run(report: Report, kubeconfig: Path, workdir: Path) -> None:
    k8s = config.new_client_from_config(config_file=str(kubeconfig))
    core, custom = client.CoreV1Api(k8s), client.CustomObjectsApi(k8s)
    ns = f"bench-inspect-{secrets.token_hex(3)}"
    install(kubeconfig)
    controller = ControllerProcess(
        service_account_kubeconfig(kubeconfig, core, workdir / "inspect-c.kubeconfig"),
        workdir,
        "bench-inspect",
    )
    controller.start()
    try:
        controller.wait_ready()
        prepare(kubeconfig, core, custom, ns)
        setup = Setup(kubeconfig, ns, plugin_env(kubeconfig, workdir))
        kube = kubectl_binary()
        setup.floor_ms = median_run_ms([kube, "get", KINDS, "-n", ns, "-o", "json"], setup.env)
        report.add(FLOOR_NAME, setup.floor_ms, "ms")
        report.add(
            f"kubectl get pods -o json ({PODS} app pods + the runtime's)",
            median_run_ms([kube, "get", "pods", "-n", ns, "-o", "json"], setup.env),
            "ms",
        )
        inspected = subprocess.run(
            [str(BIN / "kubectl-fluid"), "inspect", "dataset", DS, "-n", ns, "-o", "json"],
            env=setup.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert len(json.loads(inspected)["appPods"]) == PODS
        tree = subprocess.run(
            [str(BIN / "kubectl-fluid"), "inspect", "dataset", DS, "-n", ns],
            env=setup.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        print(f"[bench] $ kubectl fluid inspect dataset {DS} -n {ns}\n{tree}", flush=True)
        for name, args, goal, codes in VERBS:
            time_verb(report, setup, name, args, goal=goal, codes=codes)
        read_ms, model_ms = in_process_ms(kubeconfig, ns)
        report.add("of which: inspect's 11 lists, read and decoded (in-process)", read_ms, "ms")
        report.add("of which: the model and the tree from them (in-process)", model_ms, "ms")
    finally:
        controller.stop()
        core.patch_node("kwok-node-0", {"metadata": {"labels": {names.fuse_node_label(ns, DS): None}}})
        core.delete_namespace(ns)
