"""After a FUSE was replaced and its targets bound again: which pods still show the dead mount, told
to the pod's readers as an Event (``kubectl describe pod``) and returned for the FuseMount's reason
(issue 28, item 1). The judgement is ``csi/model/propagation.py``'s; this reads the pod and its PV."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import kr8s.asyncio

from csi.model.propagation import TargetRef, claim_volumes, pv_of_target, stale_reason, unpropagated
from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import EVENTS, PERSISTENT_VOLUMES, PODS

log = logging.getLogger(__name__)

EVENT_REASON: Final = "FuseRemountNotSeen"
COMPONENT: Final = "fluid-csi-node"


class PropagationCheck:
    """Called by the node service with the targets it bound again; answers target -> reason for
    those whose pod does not see the new mount, and records a Warning Event on each such pod.
    Lookups that fail are logged and leave the target unmarked (the next restart checks again)."""

    def __init__(self, node: str, connect: Callable[[], Awaitable[kr8s.asyncio.Api]]) -> None:
        self.node = node
        self._connect = connect
        self._api: kr8s.asyncio.Api | None = None

    async def __call__(self, targets: Sequence[TargetRef]) -> dict[str, str]:
        marks: dict[str, str] = {}
        for ref in targets:
            try:
                reason = await self._judge(ref)
            except Exception as err:
                log.warning(
                    "cannot tell whether pod %s/%s sees its remounted volume: %s", ref.namespace, ref.pod, err
                )
                continue
            if reason is not None:
                marks[ref.target] = reason
        return marks

    async def _judge(self, ref: TargetRef) -> str | None:
        pv_name = pv_of_target(ref.target)
        if pv_name is None:
            return None
        api = await self._client()
        pod = await http.get(api, PODS.object_path(ref.namespace, ref.pod))
        if pod is None or (ref.pod_uid and (pod.get("metadata") or {}).get("uid") != ref.pod_uid):
            return None  # gone, or another pod of that name: kubelet unpublishes the old one
        pv = await http.get(api, PERSISTENT_VOLUMES.object_path(None, pv_name))
        claim_ref = ((pv or {}).get("spec") or {}).get("claimRef") or {}
        if claim_ref.get("namespace") != ref.namespace or not claim_ref.get("name"):
            return None
        lacking = unpropagated(pod, claim_volumes(pod, claim_ref["name"]))
        if not lacking:
            return None
        reason = stale_reason(ref.namespace, ref.pod, lacking)
        log.error("%s", reason, extra={"target": ref.target})
        await self._event(api, pod, reason)
        return reason

    async def _client(self) -> kr8s.asyncio.Api:
        if self._api is None:
            self._api = await self._connect()
        return self._api

    async def _event(self, api: kr8s.asyncio.Api, pod: dict[str, Any], message: str) -> None:
        meta = pod.get("metadata") or {}
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'pod')}.", "namespace": meta.get("namespace")},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
            "type": "Warning",
            "reason": EVENT_REASON,
            "message": message,
            "source": {"component": COMPONENT, "host": self.node},
            "reportingComponent": f"{names.CSI_DRIVER}/{COMPONENT}",
            "reportingInstance": self.node,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        await http.request(api, "POST", EVENTS.collection_path(meta.get("namespace")), body=body)
