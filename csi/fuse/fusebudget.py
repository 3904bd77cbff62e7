"""The disruption budget of one FUSE pod (standalone mode): ``kubectl drain`` and every other
eviction leave a FUSE pod alone while it runs; its node service deletes it once the last volume on it
is unstaged, and only then.

A drain evicts the application pods and the FUSE pod at once. Evicted with them, the FUSE would die
while the applications still shut down on its volumes (``Transport endpoint is not connected`` in
their last writes), and the node service would start it again for the volumes still staged. With the
budget the FUSE pod's eviction is refused (429) and retried by drain; the applications go, their
volumes are unstaged, the node service deletes the pod (a deletion, not an eviction), and drain's next
try finds it gone. ``minAvailable: 1`` over this one pod: nothing of it may be disrupted.

The budget's owner is its pod, so it goes with the pod whoever deletes it (the node service, a node's
loss, an operator). A pure function: the node service's FusePodManager applies what this returns.
"""

from __future__ import annotations

from typing import Any

from kubectl_fluid.api import names


def fuse_pod_budget(node: str, mount_key: str, pod_uid: str) -> dict[str, Any]:
    name = names.fuse_pod_name(node, mount_key)
    labels = names.fuse_pod_labels(node, mount_key)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": name,
            "namespace": names.FLUID_NAMESPACE,
            "labels": labels,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod_uid}],
        },
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
    }
