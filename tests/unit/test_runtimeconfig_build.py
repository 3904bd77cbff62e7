"""build_runtime_config: upstream's rules for mounts, components and tiered-store levels, and the
errors for what upstream refuses, each naming the field to change (SPEC §3, build.py, tiers.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import RuntimeConfig, RuntimeConfigError, build_runtime_config, render_json
from kubectl_fluid.runtimeconfig.shell import flatten
from tests.unit.samples import MOONCAKE_CLASS, SPEC_DATASET, SPEC_RUNTIME

DATASET = Dataset.model_validate(SPEC_DATASET)
TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "cache:1"}]}}


def _runtime(spec: dict[str, Any]) -> CacheRuntime:
    return CacheRuntime.model_validate({**SPEC_RUNTIME, "spec": {"runtimeClassName": "mooncake", **spec}})


def _class(topology: dict[str, Any] | None) -> CacheRuntimeClass:
    return CacheRuntimeClass.model_validate({**MOONCAKE_CLASS, "topology": topology})


ALL = _class({c: {"template": TEMPLATE} for c in ("master", "worker", "client")})


def _build(spec: dict[str, Any], crc: CacheRuntimeClass = ALL, dataset: Dataset = DATASET) -> RuntimeConfig:
    return build_runtime_config(dataset, _runtime(spec), crc, "ns")


def _json(config: RuntimeConfig) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(render_json(config))
    return doc


def test_options_layer_class_then_runtime_then_component() -> None:
    crc = _class({"worker": {"options": {"a": "class", "b": "class", "c": "class"}}})
    config = _build(
        {"options": {"b": "runtime", "c": "runtime"}, "worker": {"options": {"c": "worker"}}}, crc
    )
    assert config.worker is not None
    assert config.worker.options == {"a": "class", "b": "runtime", "c": "worker"}


def test_a_component_runs_where_the_class_defines_it_and_the_runtime_does_not_disable_it() -> None:
    # The runtime's own spec of a component the class lacks does not make it run (upstream #6157).
    config = _build({"worker": {"replicas": 3}, "client": {"options": {"x": "y"}}}, _class({"master": {}}))
    assert config.master is not None
    assert (config.worker, config.client) == (None, None)
    assert _build({"master": {"disabled": True}}, _class({"master": {}, "worker": {}})).master is None
    assert set(_json(_build({"client": {"disabled": True}}))) == {
        "mounts",
        "accessModes",
        "targetPath",
        "master",
        "worker",
    }


@pytest.mark.parametrize("topology", [None, {}, {"master": None}])
def test_a_class_without_components_is_refused_in_upstreams_words(topology: dict[str, Any] | None) -> None:
    with pytest.raises(RuntimeConfigError) as refused:
        _build({}, _class(topology))
    assert str(refused.value) == (
        'CacheRuntimeClass "mooncake": at least one component should be defined in runtimeClass: give its '
        "topology a master, a worker or a client"
    )
    assert refused.value.reason == "InvalidRuntimeClass"  # the Ready=False condition's reason


def test_names_replicas_and_services() -> None:
    crc = _class(
        {"master": {"service": {"headless": {}}}, "worker": {}, "client": {"service": {"headless": {}}}}
    )
    config = build_runtime_config(DATASET, _runtime({"worker": {"replicas": 0}}), crc, "team-a")
    assert config.target_path == "/runtime-mnt/cache/team-a/ds1/cache-fuse"
    doc = _json(config)
    assert doc["master"] == {
        "enabled": True,
        "name": "ds1-master",
        "replicas": 1,
        "service": {"name": "svc-ds1-master"},
    }
    # No headless Service in the class: the name is "", still written. Zero replicas are left out.
    assert doc["worker"] == {"enabled": True, "name": "ds1-worker", "service": {"name": ""}}
    # The client has no replicas in runtime.json at all; runtime.sh says 0 for both.
    assert doc["client"] == {"enabled": True, "name": "ds1-client", "service": {"name": "svc-ds1-client"}}
    exports = dict(flatten(config))
    assert (exports["WORKER_REPLICAS"], exports["CLIENT_REPLICAS"]) == ("0", "0")


def _dataset(spec: dict[str, Any]) -> Dataset:
    return Dataset.model_validate({**SPEC_DATASET, "spec": spec})


def test_mounts_layer_shared_options_and_resolve_secret_files() -> None:
    dataset = _dataset(
        {
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
                        {"name": "sk", "valueFrom": {"secretKeyRef": {"name": "mine", "key": "secret-key"}}}
                    ],
                },
                {"name": "plain", "mountPoint": "local:///srv"},
            ],
        }
    )
    doc = _json(_build({}, dataset=dataset))
    assert doc["accessModes"] == ["ReadWriteMany"]
    assert doc["mounts"] == [
        {
            "mountPoint": "s3://bucket",
            "options": {"endpoint": "own", "region": "eu"},
            "encryptOptions": {
                "ak": "/etc/fluid/secrets/shared/ak",
                "sk": "/etc/fluid/secrets/mine/secret-key",
            },
            "name": "m",
            "path": "/data",
            "readOnly": True,
        },
        # Shared options and encrypt options reach every mount, local:// ones too.
        {
            "mountPoint": "local:///srv",
            "options": {"endpoint": "shared", "region": "eu"},
            "encryptOptions": {"ak": "/etc/fluid/secrets/shared/ak", "sk": "/etc/fluid/secrets/shared/sk"},
            "name": "plain",
            "path": "/plain",
        },
    ]


@pytest.mark.parametrize(
    ("mount", "path"),
    [
        ({"name": "m", "path": "/abs/dir"}, "/abs/dir"),
        ({"name": "m", "path": "relative/dir"}, "/m"),  # upstream ignores a relative path
        ({"name": "/m"}, "/m"),
        ({}, "/"),
    ],
)
def test_the_path_of_a_mount(mount: dict[str, Any], path: str) -> None:
    config = _build({}, dataset=_dataset({"mounts": [{"mountPoint": "s3://bucket", **mount}]}))
    assert config.mounts[0].path == path


@pytest.mark.parametrize(
    ("option", "field"),
    [
        ({"name": "ak", "valueFrom": {"secretKeyRef": {"name": "creds"}}}, "mounts[0].encryptOptions"),
        ({"name": "ak"}, "mounts[0].encryptOptions"),
    ],
)
def test_an_encrypt_option_without_a_secret_key_is_refused(option: dict[str, Any], field: str) -> None:
    dataset = _dataset({"mounts": [{"mountPoint": "s3://bucket", "name": "m", "encryptOptions": [option]}]})
    with pytest.raises(RuntimeConfigError) as refused:
        _build({}, dataset=dataset)
    assert str(refused.value).startswith(
        f'Dataset "ds1" spec.{field}: encryptOption ak has empty secretKeyRef name or key: set '
        "valueFrom.secretKeyRef.name"
    )


def _levels(levels: list[dict[str, Any]], component: str = "worker") -> list[dict[str, Any]]:
    doc = _json(_build({component: {"tieredStore": {"levels": levels}}}))
    out: list[dict[str, Any]] = doc[component]["tieredStoreLevels"]
    return out


def test_tiered_store_levels_as_upstream_describes_them() -> None:
    assert _levels(
        [
            {"processMemory": {"quota": "4096Mi"}, "high": "0.95", "low": "0.7"},
            {"emptyDir": {"quota": "1Gi", "medium": "Memory"}},
            {"emptyDir": {"quota": 2000000000}, "low": "0.5"},
            {"hostPath": {"paths": ["/mnt/a", "/mnt/b"], "quotas": ["0.5Gi", "1500Mi"]}},
            {"high": "0.9"},  # no medium: described all the same, as upstream does
        ]
    ) == [
        {"mountPaths": ["/dev/shm"], "mediumType": "MEM", "quotas": ["4Gi"], "high": "0.95", "low": "0.7"},
        {
            "mountPaths": ["/etc/fluid/mount/tiered-store/level-1-index-0-emptydir"],
            "mediumType": "MEM",
            "quotas": ["1Gi"],
        },
        {
            "mountPaths": ["/etc/fluid/mount/tiered-store/level-2-index-0-emptydir"],
            "mediumType": "HDD",
            "quotas": ["2G"],
            "low": "0.5",
        },
        {
            "mountPaths": [
                "/etc/fluid/mount/tiered-store/level-3-index-0-hostpath",
                "/etc/fluid/mount/tiered-store/level-3-index-1-hostpath",
            ],
            "mediumType": "HDD",
            "quotas": ["512Mi", "1500Mi"],
        },
        {"mediumType": "HDD", "high": "0.9"},
    ]


def test_the_client_has_a_tiered_store_too() -> None:
    assert _levels([{"processMemory": {"quota": "1Gi"}}], "client") == [
        {"mountPaths": ["/dev/shm"], "mediumType": "MEM", "quotas": ["1Gi"]}
    ]


LEVELS = 'CacheRuntime "ds1" spec.worker.tieredStore.levels'


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        (
            [{"processMemory": {"quota": "1Gi"}}, {"processMemory": {"quota": "1Gi"}}],
            f"{LEVELS}: RuntimeTieredStore should have only one ProcessMemoryMediumSource for all levels",
        ),
        (
            [
                {"emptyDir": {"quota": "1Gi"}},
                {"emptyDir": {"quota": "1Gi"}, "hostPath": {"paths": ["/a"], "quotas": [1]}},
            ],
            f"{LEVELS}[1]: only one storage medium can be specified per level at index 1, but found 2 "
            "(emptyDir, hostPath)",
        ),
        (
            [{"processMemory": {"quota": "0Gi"}}],
            f"{LEVELS}[0].processMemory.quota: process memory quota cannot be zero at level index 0",
        ),
        (
            [{"emptyDir": {"quota": 0}}],
            f"{LEVELS}[0].emptyDir.quota: emptyDir quota cannot be zero for empty dir medium source at level "
            "index 0",
        ),
        (
            [{"hostPath": {"paths": ["/a", "/b"], "quotas": ["1Gi"]}}],
            f"{LEVELS}[0].hostPath: number of paths and quotas must be equal at level index 0 (2 paths, "
            "1 quotas)",
        ),
        (
            [{"hostPath": {"paths": ["/a"], "quotas": ["lots"]}}],
            f'{LEVELS}[0].hostPath.quotas[0]: "lots" is not a quantity',
        ),
    ],
)
def test_levels_upstream_refuses_are_refused_with_its_words_and_the_field(
    levels: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(RuntimeConfigError) as refused:
        _build({"worker": {"tieredStore": {"levels": levels}}})
    assert str(refused.value).startswith(message)
    assert refused.value.reason == "InvalidTieredStore"


def test_the_levels_of_a_component_that_does_not_run_are_not_checked() -> None:
    bad = {"tieredStore": {"levels": [{"processMemory": {"quota": "0"}}]}}
    assert _build({"client": {"disabled": True, **bad}}).client is None
    assert _build({"client": bad}, _class({"master": {}})).client is None


def test_runtime_must_share_the_dataset_name() -> None:
    runtime = CacheRuntime.model_validate({**SPEC_RUNTIME, "metadata": {"name": "other"}})
    with pytest.raises(
        RuntimeConfigError, match='CacheRuntime "other" must have the same name as its Dataset "ds1"'
    ):
        build_runtime_config(DATASET, runtime, ALL, "ns")


def test_building_twice_gives_equal_configs() -> None:
    spec = {
        "options": {"z": "1", "a": "2"},
        "worker": {"tieredStore": {"levels": [{"emptyDir": {"quota": "1Gi"}}]}},
    }
    assert _build(spec) == _build(spec)
