"""A Dataset's teardown takes its runtime's client down first, while the master still serves it.

The client pods are the FUSE of the Dataset's PVC on their nodes (SPEC §7). Deleted together with
the master and worker (owner references collect all three at once), a client's preStop unmount
asks a master that is already gone, hangs until the grace period, and the FUSE is killed mounted:
a dead mount stays at the target path on the node. Upstream Fluid's deletion takes the FUSE down
before the master for the same reason. So while any client pod is left, the Dataset's finalizer
deletes the client DaemonSet and waits; the runtime (and with it the master and worker) goes after.
Pure: the reconciler lists the pods and makes the calls."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubectl_fluid.api import names


def client_pods(pods: Iterable[dict[str, Any]], runtime: str) -> list[str]:
    """Names of the runtime's client pods among ``pods`` (one namespace's)."""
    wanted = {
        names.LABEL_CACHERUNTIME_NAME: runtime,
        names.LABEL_CACHERUNTIME_COMPONENT: names.component_name(runtime, "client"),
    }
    found = []
    for pod in pods:
        labels = pod.get("metadata", {}).get("labels") or {}
        if all(labels.get(key) == value for key, value in wanted.items()):
            found.append(pod["metadata"]["name"])
    return sorted(found)
