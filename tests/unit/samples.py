"""The inputs behind SPEC §3's example, shared by the runtime config tests."""

from __future__ import annotations

from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import RuntimeConfig, build_runtime_config

SPEC_DATASET = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "Dataset",
    "metadata": {"name": "ds1", "namespace": "default"},
    "spec": {"mounts": [{"name": "default", "mountPoint": "hdfs://nn:8020/data"}]},
}
SPEC_RUNTIME = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntime",
    "metadata": {"name": "ds1", "namespace": "default"},
    "spec": {"runtimeClassName": "mooncake", "client": {"disabled": True}},
}
_TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "mooncake:1"}]}}
# Master and worker with headless Services, no client: a clientless class.
MOONCAKE_CLASS = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntimeClass",
    "metadata": {"name": "mooncake"},
    "fileSystemType": "mooncake",
    "topology": {
        "master": {"service": {"headless": {}}, "template": _TEMPLATE},
        "worker": {"service": {"headless": {}}, "template": _TEMPLATE},
    },
}


def spec_config() -> RuntimeConfig:
    return build_runtime_config(
        Dataset.model_validate(SPEC_DATASET),
        CacheRuntime.model_validate(SPEC_RUNTIME),
        CacheRuntimeClass.model_validate(MOONCAKE_CLASS),
        "default",
    )
