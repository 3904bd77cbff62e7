"""A steady cluster gets no writes from the controller: once many pairs have converged and their
workloads have settled (nothing left to report), the controller writes nothing, neither while it
keeps running nor when a new leader checks every key again."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, lagging, workload_counts
from tests.e2e.test_controller import Fluid, dataset, quiet, runtime
from tests.e2e.wait import as_json, eventually

PAIRS = 40
WRITES = "fluid_controller_api_writes_total"


def settled(fl: Fluid, state: dict[str, Any]) -> bool:
    """Every Dataset Bound, the StatefulSets' ready and current replicas unchanged for 10 s (pods the
    scheduler cannot place stay Pending: the worker placement puts one worker per node), and every
    runtime's status showing them: nothing is left to change."""
    datasets = fl.custom.list_namespaced_custom_object(names.GROUP, names.VERSION, fl.ns, "datasets")["items"]
    runtimes = fl.custom.list_namespaced_custom_object(names.GROUP, names.VERSION, fl.ns, "cacheruntimes")
    counts = workload_counts(as_json(fl.apps.list_namespaced_stateful_set(fl.ns)))
    if counts != state.get("counts"):
        state.update(counts=counts, since=time.monotonic())
    bound = sum(1 for d in datasets if (d.get("status") or {}).get("phase") == "Bound")
    behind = lagging(runtimes, counts)
    if bound == PAIRS and not behind and time.monotonic() - state["since"] >= 10:
        return True
    raise AssertionError(
        f"{bound} Bound, {len(behind)} runtime statuses behind their workloads: {behind[:3]}"
    )


def writes_by_resource(controller: ControllerProcess) -> dict[str, float]:
    _, text = controller.get("/metrics")
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(WRITES + "{"):
            labels, value = line.rsplit(" ", 1)
            out[labels[len(WRITES) :]] = float(value)
    return out


def moved(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def test_many_converged_pairs_get_no_writes_while_steady_nor_from_a_new_leader(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess
) -> None:
    fl = Fluid(k8s, namespace)
    for i in range(PAIRS):
        fl.create(dataset(f"s{i:02d}"))
        fl.create(runtime(f"s{i:02d}"))
    state: dict[str, Any] = {}
    eventually(lambda: settled(fl, state), f"{PAIRS} pairs Bound, their workloads settled", timeout=420)
    quiet(fl, controller)

    before = writes_by_resource(controller)
    time.sleep(30)
    assert moved(before, writes_by_resource(controller)) == {}, "writes in 30 s of a steady cluster"

    # A new leader queues every key once: each must find its children and statuses as they should be.
    controller.stop()
    controller.start()
    controller.wait_ready()
    eventually(
        lambda: (
            controller.metric("fluid_controller_reconcile_total") >= PAIRS
            and controller.metric("fluid_controller_queue_depth") == 0
        ),
        "the new leader reconciled every key",
        timeout=120,
    )
    time.sleep(10)
    assert writes_by_resource(controller) == {}, "writes of a new leader over a steady cluster"
