"""One AdmissionReview in, one out: the pipeline between the HTTP surface and the cluster view.

Fails closed: a pod that asked for injection and cannot get it is denied with the reason; an error
of our own (a bug, an API outage on a cache miss) denies it too, never admits it unmutated.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import orjson

from webhook import metrics
from webhook.cache import ClusterLookup
from webhook.collect import collect
from webhook.errors import Denied
from webhook.pipeline import admit
from webhook.profile import Profile

log = logging.getLogger(__name__)


class Admission:
    def __init__(self, lookup: ClusterLookup, profile: Profile) -> None:
        self.lookup = lookup
        self.profile = profile

    async def review(self, review: dict[str, Any]) -> dict[str, Any]:
        request = review["request"]
        uid = request["uid"]
        pod = request["object"]
        # Pods from a controller carry no namespace in the object: the request's is the truth.
        namespace = request.get("namespace") or pod.get("metadata", {}).get("namespace") or "default"
        if request.get("operation", "CREATE") != "CREATE":
            return _answer(uid, allowed=True)
        try:
            try:
                wanted = collect(pod, namespace, self.lookup).datasets
            except Denied:
                wanted = []  # the pipeline denies it again, with the message
            await self.lookup.prefetch(namespace, wanted)
            outcome = admit(pod, namespace, self.lookup, self.profile)
        except Exception as e:
            log.exception("admission failed", extra={"namespace": namespace, "pod": _pod_name(pod)})
            metrics.ADMISSIONS.labels("unknown", "", "error").inc()
            return _answer(
                uid,
                allowed=False,
                message=f"fluid webhook could not inject pod {_pod_name(pod)}: {e}; "
                "retry, or check the webhook's logs",
            )
        plugins = ",".join(outcome.plugins_run)
        if outcome.denied is not None:
            metrics.ADMISSIONS.labels(outcome.group, plugins, "denied").inc()
            log.info(
                "denied",
                extra={"namespace": namespace, "pod": _pod_name(pod), "reason": outcome.denied},
            )
            return _answer(uid, allowed=False, message=outcome.denied, warnings=outcome.warnings)
        result = "mutated" if outcome.patch else "unchanged"
        metrics.ADMISSIONS.labels(outcome.group, plugins, result).inc()
        return _answer(uid, allowed=True, patch=outcome.patch, warnings=outcome.warnings)


def _pod_name(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata", {})
    return str(meta.get("name") or (meta.get("generateName", "") + "*"))


def _answer(
    uid: str,
    *,
    allowed: bool,
    patch: list[dict[str, Any]] | None = None,
    message: str | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(patch)).decode()
    if message is not None:
        response["status"] = {"code": 403, "reason": "Forbidden", "message": message}
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
