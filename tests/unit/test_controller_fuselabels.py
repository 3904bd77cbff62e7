"""A runtime gone takes its client's node labels off (controller/fuselabels.py): only the Nodes that
have the label are patched, with a merge patch that removes that label and nothing else."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from controller.fuselabels import label_removal, labelled_nodes, remove_fuse_labels
from kubectl_fluid.api import names
from kubectl_fluid.kube import http

LABEL = names.fuse_node_label("default", "demo")


def test_the_removal_is_the_label_alone_set_to_null() -> None:
    assert json.loads(label_removal("default", "demo")) == {"metadata": {"labels": {LABEL: None}}}


def test_labelled_nodes_reads_a_list_answer() -> None:
    assert labelled_nodes(None) == []
    assert labelled_nodes({"items": [{"metadata": {"name": "b"}}, {"metadata": {"name": "a"}}]}) == ["a", "b"]


class FakeApi:
    def __init__(self, nodes: list[str], gone: frozenset[str] = frozenset()) -> None:
        self.nodes, self.gone = nodes, gone
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def __call__(self, method: str, path: str, **kwargs: Any) -> Any:
        self.calls.append((method, path, kwargs))
        if method == "GET":
            return {"items": [{"metadata": {"name": n}} for n in self.nodes]}
        if path.rsplit("/", 1)[-1] in self.gone:
            raise http.ApiError(404, "NotFound", "nodes not found")
        return {}


def test_every_labelled_node_is_patched_and_a_node_gone_meanwhile_is_no_error() -> None:
    api = FakeApi(["n1", "n0"], gone=frozenset({"n1"}))
    assert asyncio.run(remove_fuse_labels(api, "default", "demo")) == ["n0", "n1"]
    [(_, _, listing), *patches] = api.calls
    assert listing == {"params": {"labelSelector": LABEL}}
    assert [(m, p) for m, p, _ in patches] == [("PATCH", "/api/v1/nodes/n0"), ("PATCH", "/api/v1/nodes/n1")]
    assert {kw["content_type"] for _, _, kw in patches} == {http.MERGE_PATCH}


def test_no_labelled_node_is_one_list_and_no_write() -> None:
    api = FakeApi([])
    assert asyncio.run(remove_fuse_labels(api, "default", "demo")) == []
    assert len(api.calls) == 1
