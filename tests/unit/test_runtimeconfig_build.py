"""build_runtime_config: SPEC §3's merge rules and the decisions documented in build.py."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import RuntimeConfigError, build_runtime_config
from tests.unit.samples import MOONCAKE_CLASS, SPEC_DATASET, SPEC_RUNTIME


def _runtime(spec: dict[str, Any]) -> CacheRuntime:
    return CacheRuntime.model_validate({**SPEC_RUNTIME, "spec": {"runtimeClassName": "mooncake", **spec}})


def _class(topology: dict[str, Any]) -> CacheRuntimeClass:
    return CacheRuntimeClass.model_validate({**MOONCAKE_CLASS, "topology": topology})


DATASET = Dataset.model_validate(SPEC_DATASET)


def test_options_merge_class_then_runtime_then_component() -> None:
    crc = _class({"worker": {"options": {"a": "class", "b": "class", "c": "class"}}})
    runtime = _runtime({"options": {"b": "runtime", "c": "runtime"}, "worker": {"options": {"c": "worker"}}})
    config = build_runtime_config(DATASET, runtime, crc, "ns")
    assert config.worker is not None
    assert config.worker.options == {"a": "class", "b": "runtime", "c": "worker"}


def test_components_exist_when_runtime_or_class_defines_them() -> None:
    config = build_runtime_config(DATASET, _runtime({"worker": {}}), _class({"master": {}}), "ns")
    assert config.master is not None
    assert config.worker is not None
    assert config.client is None  # neither defines it
    config = build_runtime_config(
        DATASET, _runtime({"master": {"disabled": True}}), _class({"master": {}}), "ns"
    )
    assert config.master is None
    assert build_runtime_config(DATASET, _runtime({}), None, "ns").master is None


def test_component_names_and_replicas() -> None:
    config = build_runtime_config(DATASET, _runtime({"worker": {"replicas": 3}}), None, "team-a")
    assert config.worker is not None
    assert (config.worker.name, config.worker.service.name, config.worker.replicas) == (
        "ds1-worker",
        "svc-ds1-worker",
        3,
    )
    assert config.target_path == "/runtime-mnt/cache/team-a/ds1/cache-fuse"


def test_mounts_merge_shared_options_and_resolve_secrets() -> None:
    dataset = Dataset.model_validate(
        {
            **SPEC_DATASET,
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "sharedOptions": {"region": "eu", "endpoint": "shared"},
                "sharedEncryptOptions": [
                    {"name": "ak", "valueFrom": {"secretKeyRef": {"name": "shared", "key": "ak"}}},
                    {"name": "sk", "valueFrom": {"secretKeyRef": {"name": "shared", "key": "sk"}}},
                ],
                "mounts": [
                    {
                        "name": "m",
                        "mountPoint": "s3://bucket",
                        "path": "/data",
                        "readOnly": True,
                        "options": {"endpoint": "own"},
                        "encryptOptions": [
                            {
                                "name": "sk",
                                "valueFrom": {"secretKeyRef": {"name": "mine", "key": "secret-key"}},
                            }
                        ],
                    }
                ],
            },
        }
    )
    config = build_runtime_config(dataset, _runtime({}), None, "ns")
    (mount,) = config.mounts
    assert config.access_modes == ["ReadWriteMany"]
    assert (mount.path, mount.read_only) == ("/data", True)
    assert mount.options == {"region": "eu", "endpoint": "own"}
    assert mount.encrypt_options == {
        "ak": "/etc/fluid/secrets/shared/ak",
        "sk": "/etc/fluid/secrets/mine/secret-key",
    }


def test_tiered_store_levels() -> None:
    levels = [
        {"medium": {"processMemory": {}}, "quota": "4Gi"},
        {"medium": {"emptyDir": {"medium": "Memory"}}, "quota": "1Gi", "high": "0.9", "low": "0.5"},
        {"medium": {"hostPath": {"path": "/mnt/ssd"}}},
    ]
    config = build_runtime_config(
        DATASET, _runtime({"worker": {"tieredStore": {"levels": levels}}}), None, "ns"
    )
    assert config.worker is not None
    assert [level.model_dump(by_alias=True) for level in config.worker.tiered_store_levels] == [
        {"mediumType": "processMemory", "mountPaths": [], "quotas": ["4Gi"], "high": "", "low": ""},
        {
            "mediumType": "emptyDir",
            "mountPaths": ["/fluid/cache/level-1"],
            "quotas": ["1Gi"],
            "high": "0.9",
            "low": "0.5",
        },
        {"mediumType": "hostPath", "mountPaths": ["/mnt/ssd"], "quotas": [], "high": "", "low": ""},
    ]


def test_runtime_must_share_the_dataset_name() -> None:
    runtime = CacheRuntime.model_validate({**SPEC_RUNTIME, "metadata": {"name": "other"}})
    with pytest.raises(
        RuntimeConfigError, match='CacheRuntime "other" must have the same name as its Dataset "ds1"'
    ):
        build_runtime_config(DATASET, runtime, None, "ns")


def test_building_twice_gives_equal_configs() -> None:
    runtime = _runtime({"options": {"z": "1", "a": "2"}, "worker": {}})
    assert build_runtime_config(DATASET, runtime, None, "ns") == build_runtime_config(
        DATASET, runtime, None, "ns"
    )
