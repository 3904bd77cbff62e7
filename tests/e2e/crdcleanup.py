"""The CRDs of an uninstall waited out, with kube-apiserver's stalled cleanup of one requeued.

Deleting a CRD makes kube-apiserver re-create its storage, and its CRD finalizer's first List of the
instances then meets "storage is (re)initializing": it records ``Terminating`` with reason
``InstanceDeletionFailed`` and retries. When the retry reads the CRD from a cache that has not yet
seen that condition, its status write conflicts and it drops the key, waiting for a change to the CRD
other than its own condition. None comes until its informer's resync, five minutes later. Seen here
on kube-apiserver 1.36.3 in 1 uninstall of 8, and by others (operator-framework/operator-controller
#1437; projectcalico/calico#13677 requeues the same way). Any other change to the CRD requeues the
cleanup at once, so a stalled one gets an annotation; README's uninstall tells users the same."""

from __future__ import annotations

import time
from dataclasses import dataclass

from kubernetes import client

STALLED_REASON = "InstanceDeletionFailed"
REQUEUE_ANNOTATION = "kubectl-fluid.test/requeue-cleanup"
# kube-apiserver retries a failed cleanup within milliseconds; longer than this, it has dropped it.
STALLED_AFTER = 5.0


@dataclass
class Cleanup:
    requeued: list[str]
    seconds: float


def stalled(crd: client.V1CustomResourceDefinition) -> bool:
    """Being deleted, and its last cleanup attempt failed."""
    conditions = (crd.status and crd.status.conditions) or []
    return crd.metadata.deletion_timestamp is not None and any(
        c.type == "Terminating" and c.status == "True" and c.reason == STALLED_REASON for c in conditions
    )


def wait_gone(api: client.ApiClient, crds: set[str], timeout: float = 120.0) -> Cleanup:
    """Wait until none of ``crds`` is left; requeue one whose cleanup stalled. Returns which were
    requeued and how long it took."""
    ext = client.ApiextensionsV1Api(api)
    start = time.monotonic()
    stalled_since: dict[str, float] = {}
    requeued: list[str] = []
    while True:
        items: list[client.V1CustomResourceDefinition] = ext.list_custom_resource_definition().items
        left = [c for c in items if str(c.metadata.name) in crds]
        if not left:
            return Cleanup(requeued, time.monotonic() - start)
        now = time.monotonic()
        for crd in left:
            name = crd.metadata.name
            if not stalled(crd):
                stalled_since.pop(name, None)
            elif now - stalled_since.setdefault(name, now) > STALLED_AFTER:
                body = {"metadata": {"annotations": {REQUEUE_ANNOTATION: str(time.time())}}}
                ext.patch_custom_resource_definition(name, body)
                requeued.append(name)
                del stalled_since[name]
        if now - start > timeout:
            shown = {
                c.metadata.name: [(k.type, k.reason, k.message) for k in c.status.conditions] for c in left
            }
            raise AssertionError(f"CRDs still there after {timeout:.0f}s: {shown}")
        time.sleep(0.5)
