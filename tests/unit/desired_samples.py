"""Inputs of the desired-state tests: a clientless (Mooncake-like) and a FUSE (Curvine-like) runtime."""

from __future__ import annotations

import copy
from typing import Any

from controller.desired import Children, desired_children
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset

NAMESPACE = "team-a"
UID = "6f1c0b8e-0000-4000-8000-000000000001"


def _secret(option: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": option, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


DATASET: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "Dataset",
    "metadata": {"name": "ds1", "namespace": NAMESPACE},
    "spec": {
        "accessModes": ["ReadWriteMany"],
        # s3cred is referenced three times with two keys: one volume, two items.
        "sharedEncryptOptions": [_secret("ak", "s3cred", "access-key")],
        "mounts": [
            {
                "name": "a",
                "mountPoint": "s3://bucket/a",
                "encryptOptions": [
                    _secret("ak", "s3cred", "access-key"),
                    _secret("sk", "s3cred", "secret-key"),
                ],
            },
            {
                "name": "b",
                "mountPoint": "s3://bucket/b",
                "encryptOptions": [_secret("token", "b.token", "t")],
            },
        ],
    },
}

MOONCAKE_CLASS: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntimeClass",
    "metadata": {"name": "mooncake"},
    "fileSystemType": "mooncake",
    "topology": {
        "master": {
            "image": "mooncake:1",
            "command": ["mooncake_master"],
            "ports": [{"name": "rpc", "containerPort": 50051}],
        },
        "worker": {"image": "mooncake:1", "options": {"protocol": "tcp"}},
    },
}

CLIENTLESS_RUNTIME: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntime",
    "metadata": {"name": "ds1", "namespace": NAMESPACE, "uid": UID},
    "spec": {
        "runtimeClassName": "mooncake",
        "options": {"global_segment_size": "4GB"},
        "worker": {
            "replicas": 2,
            "env": [{"name": "LOG_LEVEL", "value": "debug"}],
            "resources": {"limits": {"memory": "8Gi"}},
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "cache", "operator": "Exists", "effect": "NoSchedule"}],
            "tieredStore": {
                "levels": [
                    {"medium": {"processMemory": {}}, "quota": "4Gi"},
                    {"medium": {"emptyDir": {"medium": "Memory"}}, "quota": "2Gi"},
                    {"medium": {"hostPath": {"path": "/mnt/ssd"}}, "quota": "100Gi"},
                    {"medium": {"emptyDir": {}}},
                ]
            },
        },
        "client": {"disabled": True},
    },
}

CURVINE_CLASS: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntimeClass",
    "metadata": {"name": "curvine"},
    "fileSystemType": "curvine",
    "topology": {
        "master": {
            "image": "curvine:0.2",
            "args": ["master"],
            "ports": [
                {"name": "rpc", "containerPort": 8995},
                {"name": "journal", "containerPort": 8996},
                {"containerPort": 9000, "protocol": "TCP"},
            ],
        },
        "worker": {"image": "curvine:0.2", "args": ["worker"], "ports": [{"containerPort": 8997}]},
        "client": {"image": "curvine:0.2", "args": ["client"]},
    },
}

FUSE_RUNTIME: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntime",
    "metadata": {"name": "ds1", "namespace": NAMESPACE, "uid": UID},
    "spec": {
        "runtimeClassName": "curvine",
        "master": {"replicas": 3},
        "client": {
            "image": "curvine-client:0.3",
            "tieredStore": {"levels": [{"medium": {"hostPath": {"path": "/var/cache/curvine"}}}]},
        },
    },
}


def models(
    dataset: dict[str, Any], runtime: dict[str, Any], runtime_class: dict[str, Any]
) -> tuple[Dataset, CacheRuntime, CacheRuntimeClass]:
    return (
        Dataset.model_validate(dataset),
        CacheRuntime.model_validate(runtime),
        CacheRuntimeClass.model_validate(runtime_class),
    )


def build(dataset: dict[str, Any], runtime: dict[str, Any], runtime_class: dict[str, Any]) -> Children:
    return desired_children(*models(dataset, runtime, runtime_class), NAMESPACE)


def clientless() -> Children:
    return build(DATASET, CLIENTLESS_RUNTIME, MOONCAKE_CLASS)


def fuse() -> Children:
    return build(DATASET, FUSE_RUNTIME, CURVINE_CLASS)


def with_spec(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with the dotted ``path`` set to ``value`` (None removes it)."""
    out = copy.deepcopy(obj)
    *parents, leaf = path.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(leaf, None)
    else:
        node[leaf] = value
    return out
