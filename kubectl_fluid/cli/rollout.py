"""``--wait``: follow a workload's rollout the way ``kubectl rollout status`` does, with its messages.

``rollout_status`` is kubectl's status viewers restated as a pure function of the object; ``follow``
polls the object and prints each new message until the rollout is done or the time is up.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_fluid.cli.errors import CliError

POLL_SECONDS = 0.5
# Events are listed every this many polls (2 s): a rollout that fails says so that soon.
FAILURE_POLLS = 4
NO_ROLLOUT_KINDS = ("Job", "CronJob")


class RolloutError(CliError):
    """The rollout cannot finish as asked (deadline exceeded, or no rolling strategy to follow)."""


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) else 0


def rollout_status(kind: str, obj: Mapping[str, Any]) -> tuple[str, bool]:
    """(message, done) for a Deployment, StatefulSet or DaemonSet."""
    name = (obj.get("metadata") or {}).get("name", "")
    generation = _int((obj.get("metadata") or {}).get("generation"))
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    observed = _int(status.get("observedGeneration"))
    if kind == "Deployment":
        return _deployment(name, generation, observed, spec, status)
    if kind == "DaemonSet":
        return _daemonset(name, generation, observed, spec, status)
    if kind == "StatefulSet":
        return _statefulset(name, generation, observed, spec, status)
    raise RolloutError(f"{kind} has no rollout to follow")


def _deployment(
    name: str, generation: int, observed: int, spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[str, bool]:
    if generation > observed:
        return "Waiting for deployment spec update to be observed...", False
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
            raise RolloutError(f'deployment "{name}" exceeded its progress deadline')
        # Its ReplicaSet could not create a pod (the deployment controller copies the ReplicaSet's
        # condition here): waiting on would only time out, while the reason, an admission webhook's
        # denial say, is right here. kubectl rollout status waits; an inject --wait should not.
        if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
            why = condition.get("message") or condition.get("reason") or "no reason given"
            raise RolloutError(f'deployment "{name}" cannot create its pods: {why}')
    replicas = spec.get("replicas", 1)
    updated = _int(status.get("updatedReplicas"))
    if isinstance(replicas, int) and updated < replicas:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {updated} out of {replicas} new replicas '
            "have been updated...",
            False,
        )
    total = _int(status.get("replicas"))
    if total > updated:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {total - updated} old replicas are pending '
            "termination...",
            False,
        )
    available = _int(status.get("availableReplicas"))
    if available < updated:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {available} of {updated} updated replicas '
            "are available...",
            False,
        )
    return f'deployment "{name}" successfully rolled out', True


def _rolling(kind: str, name: str, spec: Mapping[str, Any]) -> None:
    strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
    if strategy != "RollingUpdate":
        raise RolloutError(
            f'{kind} "{name}" uses updateStrategy {strategy}: its pods get the change only when they are '
            "deleted, so there is no rollout to wait for (delete them to recreate them)"
        )


def _daemonset(
    name: str, generation: int, observed: int, spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[str, bool]:
    _rolling("daemon set", name, spec)
    if generation > observed:
        return "Waiting for daemon set spec update to be observed...", False
    desired = _int(status.get("desiredNumberScheduled"))
    updated = _int(status.get("updatedNumberScheduled"))
    if updated < desired:
        return (
            f'Waiting for daemon set "{name}" rollout to finish: {updated} out of {desired} new pods have '
            "been updated...",
            False,
        )
    available = _int(status.get("numberAvailable"))
    if available < desired:
        return (
            f'Waiting for daemon set "{name}" rollout to finish: {available} of {desired} updated pods are '
            "available...",
            False,
        )
    return f'daemon set "{name}" successfully rolled out', True


def _statefulset(
    name: str, generation: int, observed: int, spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[str, bool]:
    _rolling("statefulset", name, spec)
    if observed == 0 or generation > observed:
        return "Waiting for statefulset spec update to be observed...", False
    replicas = spec.get("replicas", 1)
    ready = _int(status.get("readyReplicas"))
    if isinstance(replicas, int) and ready < replicas:
        return f"Waiting for {replicas - ready} pods to be ready...", False
    partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition")
    updated = _int(status.get("updatedReplicas"))
    if isinstance(partition, int) and isinstance(replicas, int) and partition > 0:
        if updated < replicas - partition:
            return (
                "Waiting for partitioned roll out to finish: "
                f"{updated} out of {replicas - partition} new pods have been updated...",
                False,
            )
        return f"partitioned roll out complete: {updated} new pods have been updated...", True
    revision = status.get("updateRevision", "")
    if revision != status.get("currentRevision"):
        return (
            f"waiting for statefulset rolling update to complete {updated} pods at revision {revision}...",
            False,
        )
    current = _int(status.get("currentReplicas"))
    return f"statefulset rolling update complete {current} pods at revision {revision}...", True


def follow(
    kind: str,
    read: Callable[[], Mapping[str, Any] | None],
    *,
    timeout: float | None,
    what: str,
    namespace: str,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    failed_create: Callable[[], str | None] | None = None,
) -> None:
    """Print each new status line on stdout until done; raise RolloutError on timeout, or as soon as
    ``failed_create`` (asked every ``FAILURE_POLLS`` polls) tells why a pod could not be created: a
    StatefulSet's or DaemonSet's controller says so only in an Event."""
    deadline = None if not timeout else clock() + timeout
    last = ""
    polls = 0
    while True:
        obj = read()
        if obj is None:
            raise RolloutError(f"{what} was deleted while waiting for its rollout")
        message, done = rollout_status(kind, obj)
        if message != last:
            sys.stdout.write(message + "\n")
            sys.stdout.flush()
            last = message
        if done:
            return
        if failed_create is not None and polls % FAILURE_POLLS == 0 and (why := failed_create()):
            raise RolloutError(f"{what} cannot create its pods: {why}")
        polls += 1
        if deadline is not None and clock() >= deadline:
            raise RolloutError(
                f"timed out waiting for the rollout of {what} ({message.rstrip('.')}); it goes on in the "
                f"background: follow it with kubectl rollout status {what} -n {namespace}"
            )
        sleep(POLL_SECONDS)
