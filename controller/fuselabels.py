"""A runtime's FUSE node labels taken off once the runtime is gone.

The CSI node service labels a node ``fluid.io/f-{ns}-{name}: "true"`` at a Dataset's NodeStage, so
that the runtime's client DaemonSet runs there (SPEC §7). Under the client's cleanPolicy OnDemand it
removes the label at the node's last unstage; under OnRuntimeDeleted (upstream's default) the label
stays for the runtime's life, and the runtime's deletion is what takes it off: upstream's runtime
controller does so (its cleanupFuse), and so does this one. Left behind, the labels would mark nodes
no pod asks for, and a runtime of the same name made later would start its client on all of them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import NODES

Request = Callable[..., Awaitable[Any]]


def label_removal(namespace: str, dataset: str) -> str:
    """The merge patch that takes the dataset's FUSE label (and nothing else) off a Node."""
    return json.dumps({"metadata": {"labels": {names.fuse_node_label(namespace, dataset): None}}})


def labelled_nodes(listed: dict[str, Any] | None) -> list[str]:
    """The names of the Nodes a list answer holds."""
    return sorted(n["metadata"]["name"] for n in (listed or {}).get("items") or ())


async def remove_fuse_labels(request: Request, namespace: str, dataset: str) -> list[str]:
    """Take the dataset's FUSE label off every Node that has it; the nodes it was taken off."""
    selector = names.fuse_node_label(namespace, dataset)  # a key alone: the label exists
    listed = await request("GET", NODES.collection_path(None), params={"labelSelector": selector})
    nodes = labelled_nodes(listed)
    for node in nodes:
        try:
            await request(
                "PATCH",
                NODES.object_path(None, node),
                body=label_removal(namespace, dataset),
                content_type=http.MERGE_PATCH,
            )
        except http.ApiError as e:
            if e.code != 404:  # a node deleted meanwhile has no label left to take
                raise
    return nodes
