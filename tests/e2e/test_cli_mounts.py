"""``kubectl fluid mounts`` over FuseMount objects in a real API server.

The objects are written here directly through the API (test data, as the CSI node service would
publish them), on node names no other test uses, so the listing can be checked exactly with --node
and by inclusion without it. The node-driven path (a real node service publishing) is tested with it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.csi import node_object
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.wait import as_json, eventually

PLURAL = "fusemounts"


@pytest.fixture
def node() -> str:
    return f"e2e-cli-{secrets.token_hex(3)}"


Publish = Callable[[str, str, dict[str, Any]], None]


@pytest.fixture
def publish(k8s: client.ApiClient, core: client.CoreV1Api, fluid: Path) -> Iterator[Publish]:
    """Writes a FuseMount and its status as the node service would; deletes them afterwards (they are
    cluster-scoped, no namespace takes them along). Each node gets a Node that kwok keeps Ready
    first: the controller marks the mounts of a node that is not Ready, or has no Node, Unknown."""
    custom = client.CustomObjectsApi(k8s)
    made: list[str] = []
    nodes: list[str] = []

    def write(node: str, key: str, status: dict[str, Any]) -> None:
        if node not in nodes:
            core.create_node(node_object(node))
            nodes.append(node)
            eventually(lambda: node_ready(core, node), f"kwok makes node {node} Ready", timeout=30)
        made.append(write_fusemount(custom, node, key, status))

    yield write
    for name in made:
        custom.delete_cluster_custom_object(names.GROUP, names.VERSION, PLURAL, name)
    for node in nodes:
        core.delete_node(node)


def write_fusemount(
    custom: client.CustomObjectsApi, node: str, key: str, status: dict[str, Any], **spec: Any
) -> str:
    """A FuseMount of ``node`` with ``status``, as the node service would publish it (an embedded
    mount's spec, ``spec``'s fields over it; None takes one away); its name."""
    name = names.fuse_mount_name(node, key)
    embedded: dict[str, Any] = {
        "nodeName": node,
        "mountKey": key,
        "clusterID": names.cluster_id("m1:8995"),
        "masterAddrs": "m1:8995",
        "fsPath": "/data",
        "mntPath": names.fuse_mount_path(key),
        "mode": "embedded",
    }
    body = {
        "apiVersion": names.API_VERSION,
        "kind": "FuseMount",
        "metadata": {"name": name, "labels": names.fuse_mount_labels(node, key)},
        "spec": {k: v for k, v in {**embedded, **spec}.items() if v is not None},
    }
    custom.create_cluster_custom_object(names.GROUP, names.VERSION, PLURAL, body)
    custom.patch_cluster_custom_object_status(names.GROUP, names.VERSION, PLURAL, name, {"status": status})
    return name


def node_ready(core: client.CoreV1Api, node: str) -> bool:
    conditions = core.read_node(node).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def test_mounts_table_filters_and_formats(
    publish: Publish, core: client.CoreV1Api, namespace: str, node: str, kubeconfig: Path
) -> None:
    # A pod bound to the node, as kubelet would publish a target for it.
    app = as_json(
        core.create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": "reader"},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            },
        )
    )
    key_a, key_b = "a" * 32, "b" * 32
    publish(
        node,
        key_a,
        {
            "phase": "Ready",
            "refCount": 2,
            "volumes": [
                {
                    "volumeID": "vol-1",
                    "stagingPath": "/s/1",
                    "targets": [{"path": "/t/1", "podUID": app["metadata"]["uid"]}],
                },
                {"volumeID": "vol-2", "stagingPath": "/s/2", "targets": []},
            ],
        },
    )
    reason = "the FUSE's fs-path /data is gone from the cache at m1:8995: delete the pods using it"
    publish(node, key_b, {"phase": "Broken", "refCount": 0, "reason": reason})
    other = f"{node}-other"
    publish(other, key_a, {"phase": "Ready", "refCount": 1})

    rows = [line.split() for line in ok(kubectl_fluid(kubeconfig, "mounts", "--node", node)).splitlines()]
    assert rows[0] == ["NODE", "MOUNT-KEY", "MASTER-ADDRS", "FS-PATH", "MODE", "REFS", "PHASE", "AGE"]
    assert [r[:7] for r in rows[1:]] == [
        [node, "a" * 16, "m1:8995", "/data", "embedded", "2", "Ready"],
        [node, "b" * 16, "m1:8995", "/data", "embedded", "0", "Broken"],
    ]

    wide = [
        line.split()
        for line in ok(kubectl_fluid(kubeconfig, "mounts", "--node", node, "-o", "wide")).splitlines()
    ]
    assert wide[0][-4:] == ["VOLUMES", "TARGETS", "PODS", "REASON"]
    assert wide[1][-4:] == ["vol-1,vol-2", "1", f"{namespace}/reader", "<none>"]
    broken = " ".join(wide[2])
    assert broken.endswith(f"<none> 0 <none> {reason}"), broken

    # Without --node, every node's mounts, ours among them, sorted by node.
    everything = [
        line.split()[:2] for line in ok(kubectl_fluid(kubeconfig, "mounts", "--no-headers")).splitlines()
    ]
    ours = [row for row in everything if row[0] in (node, other)]
    assert ours == [[node, "a" * 16], [node, "b" * 16], [other, "a" * 16]]

    listed = json.loads(ok(kubectl_fluid(kubeconfig, "mounts", "--node", node, "-o", "json")))
    assert listed["kind"] == "List"
    assert [(i["spec"]["mountKey"], i["status"]["refCount"]) for i in listed["items"]] == [
        (key_a, 2),
        (key_b, 0),
    ]
    assert ok(kubectl_fluid(kubeconfig, "mounts", "--node", node, "-o", "name")).split() == [
        f"fusemount.data.fluid.io/{names.fuse_mount_name(node, key_a)}",
        f"fusemount.data.fluid.io/{names.fuse_mount_name(node, key_b)}",
    ]


def test_no_mounts_on_a_node(fluid: Path, kubeconfig: Path, node: str) -> None:
    run = kubectl_fluid(kubeconfig, "mounts", "--node", node)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "No resources found.\n")
