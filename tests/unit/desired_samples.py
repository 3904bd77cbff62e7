"""Inputs of the desired-state tests, in upstream Fluid's shapes: a clientless (Mooncake-like) and a
FUSE (Curvine-like) runtime."""

from __future__ import annotations

import copy
from typing import Any

from controller.desired import Children, desired_children
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset

NAMESPACE = "team-a"
UID = "6f1c0b8e-0000-4000-8000-000000000001"


def secret_option(option: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": option, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


DATASET: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "Dataset",
    "metadata": {"name": "ds1", "namespace": NAMESPACE},
    "spec": {
        "accessModes": ["ReadWriteMany"],
        # s3cred is referenced three times: one volume.
        "sharedEncryptOptions": [secret_option("ak", "s3cred", "access-key")],
        "mounts": [
            {
                "name": "a",
                "mountPoint": "s3://bucket/a",
                "encryptOptions": [
                    secret_option("ak", "s3cred", "access-key"),
                    secret_option("sk", "s3cred", "secret-key"),
                ],
            },
            {
                "name": "b",
                "mountPoint": "s3://bucket/b",
                "encryptOptions": [secret_option("token", "b.token", "t")],
            },
            # A Fluid-native mount: its Secret is not mounted (upstream mounts none for them).
            {
                "name": "local",
                "mountPoint": "local:///mnt/data",
                "encryptOptions": [secret_option("x", "local-cred", "k")],
            },
        ],
    },
}


def container(name: str, image: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **fields}


MOONCAKE_CLASS: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntimeClass",
    "metadata": {"name": "mooncake"},
    "fileSystemType": "mooncakefs",
    "topology": {
        "master": {
            "service": {"headless": {}},
            "template": {
                "spec": {
                    "containers": [
                        container(
                            "master",
                            "mooncake:1",
                            command=["mooncake_master"],
                            env=[
                                {
                                    "name": "POD_NAME",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                                }
                            ],
                            ports=[{"name": "rpc", "containerPort": 50051}],
                        )
                    ]
                }
            },
        },
        "worker": {
            "service": {"headless": {}},
            "options": {"protocol": "tcp"},
            "template": {"spec": {"containers": [container("worker", "mooncake:1")]}},
        },
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
            "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "8Gi"}},
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "cache", "operator": "Exists", "effect": "NoSchedule"}],
            "tieredStore": {
                "levels": [
                    {"processMemory": {"quota": "4Gi"}, "high": "0.9"},
                    {"emptyDir": {"quota": "2048Mi", "medium": "Memory"}},
                    {"hostPath": {"paths": ["/mnt/ssd", "/mnt/hdd"], "quotas": ["100Gi", "1Ti"]}},
                    {"emptyDir": {"quota": "1Gi"}, "low": "0.5"},
                ]
            },
        },
    },
}

CURVINE_CLASS: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntimeClass",
    "metadata": {"name": "curvine"},
    "fileSystemType": "curvinefs",
    "extraResources": {"configMaps": [{"name": "curvine-config", "data": {"cluster.toml": "[master]\n"}}]},
    "topology": {
        "master": {
            "service": {"headless": {}},
            "dependencies": {
                "extraResources": {"configMaps": [{"name": "curvine-config", "mountPath": "/templates"}]}
            },
            "template": {
                "spec": {
                    "initContainers": [
                        container("init", "gomplate:1", args=["-d", "config=$(FLUID_RUNTIME_CONFIG_PATH)"])
                    ],
                    "containers": [
                        container(
                            "master",
                            "curvine:0.2",
                            args=["master"],
                            ports=[
                                {"name": "rpc", "containerPort": 8995},
                                {"name": "journal", "containerPort": 8996},
                            ],
                            resources={"limits": {"memory": 2000000000}},
                        )
                    ],
                }
            },
        },
        "worker": {
            "service": {"headless": {}},
            "template": {"spec": {"containers": [container("worker", "curvine:0.2", args=["worker"])]}},
        },
        "client": {
            "dependencies": {
                "extraResources": {"configMaps": [{"name": "curvine-config", "mountPath": "/templates"}]}
            },
            "template": {
                "spec": {
                    "containers": [
                        container(
                            "client", "curvine:0.2", args=["client"], securityContext={"privileged": True}
                        )
                    ]
                }
            },
        },
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
            "runtimeVersion": {"image": "curvine-client", "imageTag": "0.3", "imagePullPolicy": "Always"},
            "tieredStore": {"levels": [{"hostPath": {"paths": ["/var/cache/curvine"], "quotas": ["10Gi"]}}]},
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


def build(
    dataset: dict[str, Any],
    runtime: dict[str, Any],
    runtime_class: dict[str, Any],
    namespace: str = NAMESPACE,
) -> Children:
    return desired_children(*models(dataset, runtime, runtime_class), namespace)


def clientless() -> Children:
    return build(DATASET, CLIENTLESS_RUNTIME, MOONCAKE_CLASS)


def fuse() -> Children:
    return build(DATASET, FUSE_RUNTIME, CURVINE_CLASS)


def with_spec(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with the dotted ``path`` set to ``value`` (None removes it). A numeric
    part indexes a list (``topology.master.template.spec.containers.0.ports``)."""
    out = copy.deepcopy(obj)
    *parents, leaf = path.split(".")
    node: Any = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(leaf)] = value
    elif value is None:
        node.pop(leaf, None)
    else:
        node[leaf] = value
    return out


def pod(workload: dict[str, Any] | None) -> dict[str, Any]:
    assert workload is not None
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def main_container(workload: dict[str, Any] | None) -> dict[str, Any]:
    first: dict[str, Any] = pod(workload)["containers"][0]
    return first
