"""What client mode (SPEC §7) asks of the API server, for this node only: set and remove a
dataset's FUSE label on its own Node (``fluid.io/f-{ns}-{name}: "true"``, upstream's, which the
runtime's client DaemonSet selects), read the runtime's client cleanPolicy, and read the runtime's
client pod on this node (for a FailedMount reason that says what it is doing).

The label is a JSON merge patch of ``metadata.labels`` alone, as upstream's node server patches it:
no read-modify-write of the Node, so kubelet's own status updates never conflict with it. RBAC lets
the node service patch Nodes; manifests/csi/node-label-policy.yaml narrows that to its own Node and
to labels under ``fluid.io/f-``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import kr8s.asyncio

from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import CACHERUNTIMES, NODES, PODS

Connect = Callable[[], Awaitable[kr8s.asyncio.Api]]


class ClientNode:
    def __init__(self, node: str, connect: Connect) -> None:
        self.node, self.connect = node, connect
        self._client: kr8s.asyncio.Api | None = None

    async def _api(self) -> kr8s.asyncio.Api:
        if self._client is None:
            self._client = await self.connect()
        return self._client

    async def set_label(self, namespace: str, name: str, present: bool) -> None:
        label = names.fuse_node_label(namespace, name)
        body = {"metadata": {"labels": {label: names.TRUE if present else None}}}
        await http.request(
            await self._api(),
            "PATCH",
            NODES.object_path(None, self.node),
            body=json.dumps(body),
            content_type=http.MERGE_PATCH,
        )

    async def runtime(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The CacheRuntime, or None when it is gone."""
        return await http.get(await self._api(), CACHERUNTIMES.object_path(namespace, name))

    async def client_pod(self, namespace: str, runtime: str) -> dict[str, Any] | None:
        """The runtime's client pod on this node (the newest, should a replacement overlap), or None."""
        found = await http.request(
            await self._api(),
            "GET",
            PODS.collection_path(namespace),
            params={
                "labelSelector": names.client_pod_selector(runtime),
                "fieldSelector": f"spec.nodeName={self.node}",
            },
        )
        pods: list[dict[str, Any]] = (found or {}).get("items") or []
        if not pods:
            return None
        return max(pods, key=lambda pod: pod.get("metadata", {}).get("creationTimestamp", ""))
