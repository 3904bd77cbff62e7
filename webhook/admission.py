"""One AdmissionReview in, one out: the pipeline between the HTTP surface and the cluster view.

Fails closed: a pod that asked for injection and cannot get it is denied with the reason; an error
of our own (a bug, an API outage on a cache miss) denies it too, never admits it unmutated.

The API server waits ``timeoutSeconds`` (5) for the answer and then refuses the pod on its own, while
we would go on working for nobody. Cache-miss GETs therefore get ``LOOKUP_DEADLINE`` seconds, after
which the pod is denied with a reason of ours; a namespace that has spent its budget of cache-miss
GETs (``webhook/budgets.py``) has its pod denied at once, saying so. Every denial is cut to
``denials.MAX_DENIAL_BYTES``.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Final

import orjson

from webhook import metrics
from webhook.cache import ClusterLookup, OverBudget
from webhook.collect import MAX_DATASETS_PER_POD, Collected, collect
from webhook.denials import clamp, quote
from webhook.errors import Denied
from webhook.pipeline import admit
from webhook.profile import Profile

log = logging.getLogger(__name__)


# Seconds for the cache-miss GETs of one admission: well inside the configuration's timeoutSeconds
# (5), so the pod's author reads our reason rather than "context deadline exceeded".
LOOKUP_DEADLINE: Final = 3.0


class Admission:
    def __init__(
        self,
        lookup: ClusterLookup,
        profile: Profile,
        *,
        max_datasets: int = MAX_DATASETS_PER_POD,
        lookup_deadline: float = LOOKUP_DEADLINE,
    ) -> None:
        self.lookup = lookup
        self.profile = profile
        self.max_datasets = max_datasets
        self.lookup_deadline = lookup_deadline

    async def review(self, review: dict[str, Any]) -> dict[str, Any]:
        request = review["request"]
        uid = request["uid"]
        pod = request["object"]
        # Pods from a controller carry no namespace in the object: the request's is the truth.
        namespace = request.get("namespace") or pod.get("metadata", {}).get("namespace") or "default"
        if request.get("operation", "CREATE") != "CREATE":
            return _answer(uid, allowed=True)
        try:
            collected: Collected | None
            try:
                collected = collect(pod, namespace, self.lookup, self.max_datasets)
            except Denied:
                collected = None  # the pipeline denies it again, with the message; nothing is fetched
            wanted = collected.datasets if collected else []
            try:
                lookup = await self.lookup.prefetch(namespace, wanted, self.lookup_deadline)
            except TimeoutError:
                return self._lookups_timed_out(uid, namespace, pod)
            except OverBudget as over:
                return _over_budget(uid, over, pod)
            # The PVCs that collect() read come from the same watch cache either way: what it found
            # is what was fetched for, and what the pipeline acts on.
            outcome = admit(
                pod, namespace, lookup, self.profile, max_datasets=self.max_datasets, collected=collected
            )
        except Exception as e:
            log.exception("admission failed", extra={"namespace": namespace, "pod": _pod_name(pod)})
            metrics.count_admission("unknown", "", "error")
            return _answer(
                uid,
                allowed=False,
                message=f"fluid webhook could not inject pod {quote(_pod_name(pod))}: {e}; "
                "retry, or check the webhook's logs",
            )
        plugins = ",".join(outcome.plugins_run)
        if outcome.denied is not None:
            metrics.count_admission(outcome.group, plugins, "denied")
            log.info(
                "denied",
                extra={"namespace": namespace, "pod": _pod_name(pod), "reason": clamp(outcome.denied)},
            )
            return _answer(uid, allowed=False, message=outcome.denied, warnings=outcome.warnings)
        result = "mutated" if outcome.patch else "unchanged"
        metrics.count_admission(outcome.group, plugins, result)
        return _answer(uid, allowed=True, patch=outcome.patch, warnings=outcome.warnings)

    def _lookups_timed_out(self, uid: str, namespace: str, pod: dict[str, Any]) -> dict[str, Any]:
        metrics.count_admission("unknown", "", "error")
        log.warning("cache-miss lookups timed out", extra={"namespace": namespace, "pod": _pod_name(pod)})
        return _answer(
            uid,
            allowed=False,
            message=f"fluid webhook could not read the datasets of pod {quote(_pod_name(pod))} from "
            f"the API server within {self.lookup_deadline:g}s; retry, or check the API server and "
            "the webhook's logs",
        )


def _over_budget(uid: str, over: OverBudget, pod: dict[str, Any]) -> dict[str, Any]:
    metrics.count_admission("unknown", "", "denied")
    log.warning(
        "namespace over its lookup budget", extra={"namespace": over.namespace, "pod": _pod_name(pod)}
    )
    ns, budgets = quote(over.namespace), over.budgets
    return _answer(
        uid,
        allowed=False,
        message=f"fluid webhook refused pod {quote(_pod_name(pod))}: too many lookups of datasets not in "
        f"its cache in namespace {ns} (more than {budgets.burst} at once or {budgets.rate:g} a second); "
        f"retry in a few seconds, and check that the pods of namespace {ns} name datasets that exist "
        f"(kubectl get datasets -n {over.namespace})",
    )


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
        response["status"] = {"code": 403, "reason": "Forbidden", "message": clamp(message)}
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
