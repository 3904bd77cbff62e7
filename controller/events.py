"""Kubernetes Events a person reads with ``kubectl describe``: one per distinct (object, reason,
message), so a key retried with backoff does not flood the namespace."""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

import kr8s.asyncio

from controller import metrics
from controller.conditions import now
from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import EVENTS

log = logging.getLogger(__name__)


class Recorder:
    def __init__(self, api: kr8s.asyncio.Api, instance: str, remember: int = 4096) -> None:
        self.api = api
        self.instance = instance
        self._sent: OrderedDict[tuple[str, str, str, str], None] = OrderedDict()
        self._remember = remember

    async def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        meta = obj.get("metadata", {})
        key = (meta.get("uid", ""), type_, reason, message)
        if key in self._sent:
            self._sent.move_to_end(key)
            return
        self._sent[key] = None
        if len(self._sent) > self._remember:
            self._sent.popitem(last=False)
        namespace = meta.get("namespace") or "default"
        stamp = now()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": names.CONTROLLER_FIELD_MANAGER},
            "reportingComponent": names.CONTROLLER_FIELD_MANAGER,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            await http.request(self.api, "POST", EVENTS.collection_path(namespace), body=body)
            metrics.WRITES.labels("create", "events").inc()
        except Exception as e:  # an Event is advice: never fail a reconcile over it
            self._sent.pop(key, None)
            log.warning("could not record event %s on %s: %s", reason, meta.get("name"), e)
