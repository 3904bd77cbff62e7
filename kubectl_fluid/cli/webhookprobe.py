"""Does the API server reach fluid-webhook? Ask it: create a pod labelled ``fluid.io/inject=true``
with ``dryRun=All``. The API server runs admission as for a real pod (the webhook's entries declare
``sideEffects: None``, so dry-run calls them) and stores nothing. A refusal that says it "failed
calling webhook" is the answer ``webhook-unreachable`` reports; an admission (the pod names no
dataset: the webhook passes it with a warning) means the webhook answered.

Chosen over reading the webhook Service's EndpointSlices: the configuration may point at a URL (no
Service), and ready endpoints do not prove the API server can reach them (network, TLS); this asks
the one party whose view matters. It needs ``create pods`` in the namespace; without it the probe is
recorded as unreadable and the rule skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubectl_fluid.api import names

if TYPE_CHECKING:
    from kubectl_fluid.cli.snapshot import Snapshot
    from kubectl_fluid.kube.transport import Api

# Never pulled: a dry-run create schedules and runs nothing.
PROBE_IMAGE = "registry.k8s.io/pause:3.10"


def probe_pod() -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": names.DIAGNOSE_PROBE_PREFIX, "labels": {names.LABEL_INJECT: names.TRUE}},
        "spec": {"containers": [{"name": "probe", "image": PROBE_IMAGE}]},
    }


def probe(api: Api, snap: Snapshot, namespace: str) -> None:
    """Record in ``snap`` whether a labelled pod created in ``namespace`` reaches the webhook."""
    from kubectl_fluid.cli.snapshot import PROBE
    from kubectl_fluid.kube import resources
    from kubectl_fluid.kube.errors import ApiError

    if snap.get("mutatingwebhookconfigurations", "", names.WEBHOOK_NAME) is None:
        return
    try:
        api.request(
            "POST", resources.PODS.collection_path(namespace), params={"dryRun": "All"}, body=probe_pod()
        )
    except ApiError as e:
        # A 403 is RBAC's refusal, unless an admission webhook answered it (a policy engine's denial
        # comes as 403 too): that one the API server did reach.
        if e.code in (401, 403, 404) and "admission webhook" not in str(e.message or ""):
            snap.unreadable[PROBE] = f"{e.code} {e.reason or ''}".strip()
            return
        snap.probes[namespace] = str(e.message or e)
        return
    snap.probes[namespace] = None
