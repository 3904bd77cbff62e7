"""Rules about FUSE mounts: a FuseMount in scope that is Broken or Unknown (``fuse-broken``), and a pod
whose volumes kubelet fails to mount (``failed-mount``). Pure.

The CSI node service writes why a mount is Broken, and the controller why one is Unknown (its node is
lost), as words that say what to do (``csi/node/brokenreasons.py``, ``controller/nodeloss.py``): the
reason is the evidence and the advice. kubelet says why a volume does not mount only in Events; the
newest ``FailedMount`` (the CSI node's refusal word for word) is shown while the pod is Pending.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.rules import inscope
from kubectl_fluid.cli.rules.finding import Finding, ObjectRef
from kubectl_fluid.cli.rules.needs import rule
from kubectl_fluid.cli.snapshot import key, name_of

if TYPE_CHECKING:
    from kubectl_fluid.cli.rules.finding import Rule, Scope
    from kubectl_fluid.cli.snapshot import Snapshot

FUSE_BROKEN = "fuse-broken"
FUSE_POD_NOT_RUNNING = "fuse-pod-not-running"
FAILED_MOUNT = "failed-mount"
# The phases of a FuseMount that serve no data: Broken (the node service's), Unknown (the node lost).
BAD_PHASES = ("Broken", "Unknown")


@rule(FUSE_BROKEN, "fusemounts")
def fuse_broken(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    for mount in inscope.fusemounts(snap, scope):
        spec, status = mount.get("spec") or {}, mount.get("status") or {}
        phase = status.get("phase")
        if phase not in BAD_PHASES:
            continue
        evidence = [f"status.phase: {phase}"]
        if status.get("reason"):
            evidence.append(f"status.reason: {status['reason']}")
        if status.get("podName"):
            evidence.append(f"status.podName: {status['podName']}")
        if status.get("lastTransitionTime"):
            evidence.append(f"status.lastTransitionTime: {status['lastTransitionTime']}")
        node = spec.get("nodeName", "?")
        yield Finding(
            rule=FUSE_BROKEN,
            severity="error",
            object=ObjectRef("FuseMount", name_of(mount)),
            message=(
                f"the FUSE mount on node {node} (mode {spec.get('mode', '?')}, refs "
                f"{status.get('refCount', 0)}) is {phase}: its volumes serve no data"
            ),
            evidence=tuple(evidence),
            # The reason is the node service's (or the controller's) own words for what to do.
            advice=" ".join(str(status["reason"]).split())
            if status.get("reason")
            else f"look at the CSI node service's log on node {node} (kubectl fluid debug pod POD tails it)",
        )


@rule(FUSE_POD_NOT_RUNNING, "fusemounts", "pods")
def fuse_pod_not_running(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    """A staged mount whose FUSE pod (standalone: fluid-system's; client: the runtime's client) is gone
    or not running: its FUSE died and was not replaced. The node service replaces a standalone pod and
    kubelet restarts a client's container; until then the volumes serve nothing, whatever the phase
    says (a dead FUSE answers ENOTCONN, which the node's health check leaves to the replacement)."""
    for mount in inscope.fusemounts(snap, scope):
        spec, status = mount.get("spec") or {}, mount.get("status") or {}
        name = status.get("podName")
        if not name or not status.get("refCount") or status.get("phase") not in ("Ready", "Broken"):
            continue
        client = spec.get("mode") == "client"
        namespace = (
            str((spec.get("dataset") or {}).get("namespace") or "") if client else names.FLUID_NAMESPACE
        )
        if not snap.sees_pods_of(namespace):
            continue  # not read: nothing to say
        pod = snap.get("pods", namespace, str(name))
        state = _not_running(pod)
        if state is None:
            continue
        node = spec.get("nodeName", "?")
        what = "the runtime's client pod" if client else "its FUSE pod"
        yield Finding(
            rule=FUSE_POD_NOT_RUNNING,
            severity="error",
            object=ObjectRef("FuseMount", name_of(mount)),
            message=(
                f"{what} {namespace}/{name} on node {node} {state}: the FUSE of {status.get('refCount')} "
                "staged volume(s) is not served"
            ),
            evidence=(f"status.podName: {name}", f"status.phase: {status.get('phase')}", f"pod: {state}"),
            advice=(
                f"the CSI node service on {node} replaces a FUSE pod: its log says why it cannot (a quota, "
                "the FUSE pod policy, the image); kubectl fluid debug pod POD tails it"
                if not client
                else f"kubelet restarts the client's container: kubectl -n {namespace} describe pod {name}"
            ),
        )


def _not_running(pod: dict[str, Any] | None) -> str | None:
    """How a FUSE pod is not serving (``is gone``, ``is Failed``...), or None while it runs."""
    if pod is None:
        return "is gone"
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "is being deleted"
    if status.get("phase") != "Running":
        return f"is {status.get('phase') or 'not running'}"
    stopped = []
    for c in status.get("containerStatuses") or ():
        state = c.get("state") or {}
        if state.get("terminated"):
            done = state["terminated"]
            stopped.append(
                f"{c.get('name')} terminated: {done.get('reason', '?')}, exit code {done.get('exitCode')}"
            )
        elif state.get("waiting"):
            stopped.append(f"{c.get('name')} waiting: {state['waiting'].get('reason', '?')}")
    return f"has its container not running ({'; '.join(stopped)})" if stopped else None


@rule(FAILED_MOUNT, "pods", "events")
def failed_mount(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    from kubectl_fluid.cli.eventview import MOUNT_REASONS, event_line, newest

    for pod in inscope.pods(snap, scope):
        if (pod.get("status") or {}).get("phase") != "Pending":
            continue  # its volumes mounted (or it ended): old FailedMount events no longer hold
        event = newest(snap.events_for([pod]), MOUNT_REASONS, (pod.get("metadata") or {}).get("uid"))
        if event is None:
            continue
        ns, name = key(pod)
        node = inscope.node_of(pod)
        yield Finding(
            rule=FAILED_MOUNT,
            severity="error",
            object=ObjectRef("Pod", name, ns),
            # kubelet's words carry the cause (the CSI node's refusal, what it waits for): the message.
            message=f"kubelet cannot mount its volumes on node {node or '?'}: {event_line(event)}",
            evidence=(f"Event {event_line(event)}",),
            advice=(
                "fix what the CSI node (or kubelet) names; kubectl fluid debug pod "
                f"{name} -n {ns} walks the volume to its FUSE and tails the logs"
            ),
        )


RULES: list[Rule] = [fuse_broken, fuse_pod_not_running, failed_mount]
