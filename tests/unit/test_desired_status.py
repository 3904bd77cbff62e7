"""A runtime's per-component status from its workloads (upstream's phases), and which workload
changes the controller reacts to."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.desired.status import component_status, components_waiting, not_running, watched_state


def sts(replicas: int, ready: int = 0, current: int = 0, available: int = 0) -> dict[str, Any]:
    status = {"readyReplicas": ready, "currentReplicas": current, "availableReplicas": available}
    return {
        "kind": "StatefulSet",
        "metadata": {"generation": 1},
        "spec": {"replicas": replicas},
        "status": {k: v for k, v in status.items() if v},
    }


def ds(desired: int, ready: int) -> dict[str, Any]:
    return {
        "kind": "DaemonSet",
        "metadata": {"generation": 1},
        "status": {
            "desiredNumberScheduled": desired,
            "numberReady": ready,
            "currentNumberScheduled": desired,
            "numberAvailable": ready,
            "numberUnavailable": desired - ready,
        },
    }


@pytest.mark.parametrize(
    ("component", "replicas", "ready", "phase"),
    [
        ("master", 1, 1, "Ready"),
        ("master", 3, 2, "NotReady"),
        ("master", 0, 0, "Ready"),
        ("worker", 2, 2, "Ready"),
        ("worker", 2, 1, "PartialReady"),
        ("worker", 2, 0, "NotReady"),
        ("worker", 0, 0, "Ready"),
        ("worker", 1, 2, "PartialReady"),
    ],
)
def test_statefulset_phases(component: Any, replicas: int, ready: int, phase: str) -> None:
    assert component_status(component, sts(replicas, ready), replicas)["phase"] == phase


@pytest.mark.parametrize(
    ("desired", "ready", "phase"),
    [(2, 2, "Ready"), (2, 1, "PartialReady"), (2, 0, "NotReady"), (0, 0, "NotReady")],
)
def test_client_phases(desired: int, ready: int, phase: str) -> None:
    assert component_status("client", ds(desired, ready), 0)["phase"] == phase


def test_counts_as_upstream_reports_them_zeros_left_out() -> None:
    assert component_status("worker", sts(3, ready=1, current=3, available=1), 3) == {
        "phase": "PartialReady",
        "desiredReplicas": 3,
        "readyReplicas": 1,
        "currentReplicas": 3,
        "availableReplicas": 1,
        "unavailableReplicas": 2,
    }
    assert component_status("client", ds(2, 1), 0) == {
        "phase": "PartialReady",
        "desiredReplicas": 2,
        "readyReplicas": 1,
        "currentReplicas": 2,
        "availableReplicas": 1,
        "unavailableReplicas": 1,
    }
    # Not seen yet: what the controller asked for, nothing ready.
    assert component_status("master", None, 2) == {"phase": "NotReady", "desiredReplicas": 2}
    assert not_running() == {"phase": ""}


@given(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5), st.integers(0, 5))
def test_unavailable_is_never_negative_and_only_ready_moves_the_phase(
    replicas: int, ready: int, current: int, available: int
) -> None:
    for component in ("master", "worker"):
        status = component_status(component, sts(replicas, ready, current, available), replicas)
        assert status.get("unavailableReplicas", 0) == max(current - available, 0)
        assert status["phase"] == component_status(component, sts(replicas, ready), replicas)["phase"]


def test_the_controller_reacts_to_the_status_fields_it_reports_and_to_new_generations() -> None:
    base = sts(2, ready=1, current=2, available=1)
    base["status"] |= {"observedGeneration": 1, "updateRevision": "r1", "replicas": 2}
    same = {**base, "status": {**base["status"], "updateRevision": "r2", "observedGeneration": 2}}
    assert watched_state(same) == watched_state(base)
    for field in ("readyReplicas", "currentReplicas", "availableReplicas"):
        moved = {**base, "status": {**base["status"], field: 7}}
        assert watched_state(moved) != watched_state(base), field
    respecced = {**base, "metadata": {"generation": 2}}
    assert watched_state(respecced) != watched_state(base)
    daemonset = ds(2, 1)
    assert watched_state({**daemonset, "status": {**daemonset["status"], "numberReady": 2}}) != watched_state(
        daemonset
    )
    # No generation (a ConfigMap): every change counts.
    assert watched_state({"kind": "ConfigMap", "metadata": {}}) is None


def test_a_runtime_waits_for_its_whole_master_and_a_ready_worker_never_for_its_client() -> None:
    def of(master: dict[str, Any], worker: dict[str, Any], client: dict[str, Any]) -> dict[str, Any]:
        return {
            "master": component_status("master", master, 1),
            "worker": component_status("worker", worker, 2),
            "client": component_status("client", client, 0),
        }

    assert components_waiting(of(sts(1, 1), sts(2, 2), ds(0, 0))) is None  # no client pod wanted yet
    assert components_waiting(of(sts(1, 1), sts(2, 1), ds(3, 0))) is None  # one worker serves
    assert components_waiting(of(sts(1), sts(2), ds(0, 0))) == "master 0/1 ready, worker 0/2 ready"
    assert components_waiting(of(sts(2, 1), sts(2, 2), ds(0, 0))) == "master 1/2 ready"
    # Not seen yet: the replicas the controller wants, nothing ready.
    unseen = {"master": component_status("master", None, 1), "worker": component_status("worker", None, 0)}
    assert components_waiting(unseen) == "master 0/1 ready"
    # A component that does not run is not waited for.
    assert components_waiting({"master": not_running(), "worker": not_running()}) is None


@given(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5), st.integers(0, 5))
def test_ready_means_every_master_and_some_worker(
    m_want: int, m_ready: int, w_want: int, w_ready: int
) -> None:
    m_ready, w_ready = min(m_ready, m_want), min(w_ready, w_want)
    components = {
        "master": component_status("master", sts(m_want, m_ready), m_want),
        "worker": component_status("worker", sts(w_want, w_ready), w_want),
    }
    assert (components_waiting(components) is None) == (m_ready == m_want and (w_want == 0 or w_ready > 0))
