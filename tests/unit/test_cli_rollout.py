"""``--wait``: kubectl rollout status's judgement per kind, and the loop that prints its progress."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_fluid.cli.rollout import RolloutError, follow, rollout_status


def obj(generation: int, spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "x", "generation": generation}, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("status", "message", "done"),
    [
        ({"observedGeneration": 1}, "Waiting for deployment spec update to be observed...", False),
        (
            {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 3},
            'Waiting for deployment "x" rollout to finish: 1 out of 2 new replicas have been updated...',
            False,
        ),
        (
            {"observedGeneration": 2, "updatedReplicas": 2, "replicas": 3},
            'Waiting for deployment "x" rollout to finish: 1 old replicas are pending termination...',
            False,
        ),
        (
            {"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 1},
            'Waiting for deployment "x" rollout to finish: 1 of 2 updated replicas are available...',
            False,
        ),
        (
            {"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 2},
            'deployment "x" successfully rolled out',
            True,
        ),
    ],
)
def test_deployment(status: dict[str, Any], message: str, done: bool) -> None:
    assert rollout_status("Deployment", obj(2, {"replicas": 2}, status)) == (message, done)


def test_deployment_past_its_deadline_fails() -> None:
    status = {
        "observedGeneration": 1,
        "conditions": [{"type": "Progressing", "reason": "ProgressDeadlineExceeded"}],
    }
    with pytest.raises(RolloutError, match="exceeded its progress deadline"):
        rollout_status("Deployment", obj(1, {"replicas": 1}, status))


def test_deployment_whose_pods_cannot_be_created_fails_with_the_reason() -> None:
    """Issue 28: --wait timed out without showing the webhook's denial its ReplicaSet got."""
    denied = (
        'pods "app2-5d8f-" is forbidden: admission webhook "pod-admission.fluid.io" denied the request: '
        'dataset "demo" not found in namespace "default"'
    )
    status: dict[str, Any] = {
        "observedGeneration": 2,
        "updatedReplicas": 0,
        "conditions": [
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
            {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": denied},
        ],
    }
    with pytest.raises(RolloutError) as failed:
        rollout_status("Deployment", obj(2, {"replicas": 1}, status))
    assert str(failed.value) == f'deployment "x" cannot create its pods: {denied}'
    # Once the failure is gone (status False, or no condition), it waits as before.
    status["conditions"][1]["status"] = "False"
    assert rollout_status("Deployment", obj(2, {"replicas": 1}, status))[1] is False


def test_daemonset() -> None:
    spec = {"updateStrategy": {"type": "RollingUpdate"}}
    waiting = {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 1}
    assert rollout_status("DaemonSet", obj(1, spec, waiting))[1] is False
    unavailable = {**waiting, "updatedNumberScheduled": 2, "numberAvailable": 1}
    assert "1 of 2 updated pods are available" in rollout_status("DaemonSet", obj(1, spec, unavailable))[0]
    done = {**unavailable, "numberAvailable": 2}
    assert rollout_status("DaemonSet", obj(1, spec, done)) == ('daemon set "x" successfully rolled out', True)


def test_statefulset() -> None:
    spec = {"replicas": 2}
    assert rollout_status("StatefulSet", obj(1, spec, {}))[1] is False
    rolling = {
        "observedGeneration": 1,
        "readyReplicas": 2,
        "updateRevision": "r2",
        "currentRevision": "r1",
        "updatedReplicas": 1,
    }
    assert rollout_status("StatefulSet", obj(1, spec, rolling))[1] is False
    done = {**rolling, "currentRevision": "r2", "currentReplicas": 2}
    assert rollout_status("StatefulSet", obj(1, spec, done)) == (
        "statefulset rolling update complete 2 pods at revision r2...",
        True,
    )
    partitioned = {"replicas": 3, "updateStrategy": {"rollingUpdate": {"partition": 2}}}
    status = {"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 1}
    assert rollout_status("StatefulSet", obj(1, partitioned, status))[1] is True


@pytest.mark.parametrize("kind", ["DaemonSet", "StatefulSet"])
def test_on_delete_has_no_rollout(kind: str) -> None:
    with pytest.raises(RolloutError, match="OnDelete"):
        rollout_status(kind, obj(1, {"updateStrategy": {"type": "OnDelete"}}, {}))


def test_follow_prints_each_new_message_once_and_stops_when_done(capsys: pytest.CaptureFixture[str]) -> None:
    states = [
        obj(2, {"replicas": 1}, {"observedGeneration": 1}),
        obj(2, {"replicas": 1}, {"observedGeneration": 1}),
        obj(
            2,
            {"replicas": 1},
            {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 1, "availableReplicas": 1},
        ),
    ]
    follow(
        "Deployment",
        lambda: states.pop(0),
        timeout=10,
        what="deployment.apps/x",
        namespace="a",
        sleep=lambda _: None,
    )
    assert capsys.readouterr().out.splitlines() == [
        "Waiting for deployment spec update to be observed...",
        'deployment "x" successfully rolled out',
    ]


def test_follow_times_out_with_a_way_to_keep_watching() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(RolloutError, match=r"kubectl rollout status deployment\.apps/x -n a"):
        follow(
            "Deployment",
            lambda: obj(2, {"replicas": 1}, {"observedGeneration": 1}),
            timeout=2,
            what="deployment.apps/x",
            namespace="a",
            clock=lambda: now[0],
            sleep=sleep,
        )
    assert now[0] == pytest.approx(2.0)


def test_follow_notices_deletion() -> None:
    with pytest.raises(RolloutError, match="deleted"):
        follow("Deployment", lambda: None, timeout=1, what="deployment.apps/x", namespace="a")


def test_follow_fails_as_soon_as_a_pod_could_not_be_created() -> None:
    """Issue 28, item 2: a StatefulSet's controller says why it created no pod only in an Event; the
    wait ends with its words instead of timing out."""
    asked = []
    answers = [None, None, 'create Pod s-0 in StatefulSet s failed error: pods "s-0" is forbidden: no']

    def failed_create() -> str | None:
        asked.append(1)
        return answers.pop(0)

    waiting = obj(2, {"replicas": 1}, {"observedGeneration": 2, "readyReplicas": 0})
    with pytest.raises(RolloutError) as failed:
        follow(
            "StatefulSet",
            lambda: waiting,
            timeout=60,
            what="statefulset.apps/s",
            namespace="a",
            sleep=lambda _: None,
            failed_create=failed_create,
        )
    assert str(failed.value) == (
        'statefulset.apps/s cannot create its pods: create Pod s-0 in StatefulSet s failed error: pods "s-0" '
        "is forbidden: no"
    )
    assert len(asked) == 3  # every FAILURE_POLLS polls, not every poll
