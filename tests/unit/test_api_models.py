"""API models: SPEC §1 defaults, Kubernetes JSON spelling, tolerance of unknown fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kubectl_fluid.api.base import kube_camel
from kubectl_fluid.api.cacheruntime import CacheRuntime, CachingComponentSpec, ComponentSpec, Medium
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset, Mount
from kubectl_fluid.api.fusemount import FuseMount


def test_mount_path_defaults_to_slash_name() -> None:
    assert Mount.model_validate({"name": "m1", "mountPoint": "s3://bucket"}).path == "/m1"
    assert Mount.model_validate({"name": "m1", "mountPoint": "s3://bucket", "path": "/x"}).path == "/x"


def test_mount_point_needs_five_characters() -> None:
    with pytest.raises(ValidationError, match="at least 5"):
        Mount(name="m", mount_point="s3:/")


def test_access_modes_default_to_read_only_many_and_are_not_shared() -> None:
    a = Dataset.model_validate({"metadata": {"name": "a"}, "spec": {}})
    b = Dataset.model_validate({"metadata": {"name": "b"}, "spec": {}})
    assert a.spec.access_modes == ["ReadOnlyMany"]
    a.spec.access_modes.append("ReadWriteMany")
    assert b.spec.access_modes == ["ReadOnlyMany"]


def test_component_replicas_default_to_one() -> None:
    assert ComponentSpec().replicas == 1
    with pytest.raises(ValidationError):
        ComponentSpec(replicas=-1)


def test_kubernetes_json_round_trips_in_camel_case() -> None:
    obj = {
        "apiVersion": "data.fluid.io/v1alpha1",
        "kind": "CacheRuntime",
        "metadata": {"name": "ds1", "namespace": "ns", "resourceVersion": "7", "managedFields": [{}]},
        "spec": {
            "runtimeClassName": "mooncake",
            "options": {"a": "1"},
            "worker": {
                "nodeSelector": {"k": "v"},
                "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "resources": {"limits": {"memory": "1Gi"}},
                "tolerations": [{"operator": "Exists"}],
                "tieredStore": {"levels": [{"medium": {"emptyDir": {"medium": "Memory"}}, "quota": "1Gi"}]},
            },
            "client": {"disabled": True},
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]
        },
    }
    runtime = CacheRuntime.model_validate(obj)
    assert runtime.metadata.resource_version == "7"
    assert runtime.spec.runtime_class_name == "mooncake"
    worker = runtime.spec.worker
    assert isinstance(worker, CachingComponentSpec)
    assert worker.tiered_store is not None
    assert worker.tiered_store.levels[0].medium.empty_dir is not None
    assert runtime.spec.client is not None
    assert runtime.spec.client.disabled
    dumped = runtime.to_kube()
    assert dumped["spec"]["worker"]["env"] == obj["spec"]["worker"]["env"]  # type: ignore[index]
    assert dumped["spec"]["worker"]["nodeSelector"] == {"k": "v"}
    assert dumped["status"]["conditions"][0]["lastTransitionTime"] == "2024-01-01T00:00:00Z"
    assert "managedFields" not in dumped["metadata"]  # unknown fields are tolerated, not kept


def test_python_names_are_accepted_too() -> None:
    mount = Mount(name="m", mount_point="hdfs://x", read_only=True)
    assert mount.to_kube() == {
        "mountPoint": "hdfs://x",
        "name": "m",
        "path": "/m",
        "options": {},
        "encryptOptions": [],
        "readOnly": True,
        "shared": False,
    }


def test_initialisms_follow_kubernetes_spelling() -> None:
    assert kube_camel("cluster_id") == "clusterID"
    assert kube_camel("pod_uid") == "podUID"
    assert kube_camel("uid") == "uid"
    fm = FuseMount.model_validate(
        {
            "metadata": {"name": "n1-0123456789abcdef"},
            "spec": {
                "nodeName": "n1",
                "mountKey": "0123456789abcdef00",
                "clusterID": "abcd1234",
                "masterAddrs": "m:8995",
                "fsPath": "/",
                "mntPath": "/mnt",
                "mode": "embedded",
            },
            "status": {
                "phase": "Ready",
                "refCount": 1,
                "volumes": [
                    {"volumeID": "v", "stagingPath": "/s", "targets": [{"path": "/t", "podUID": "u"}]}
                ],
            },
        }
    )
    assert fm.spec.cluster_id == "abcd1234"
    assert fm.status is not None
    assert fm.status.volumes[0].targets[0].pod_uid == "u"
    assert fm.to_kube()["status"]["volumes"][0]["volumeID"] == "v"


def test_medium_needs_exactly_one_kind() -> None:
    Medium.model_validate({"processMemory": {}})
    for bad in ({}, {"processMemory": {}, "hostPath": {"path": "/x"}}):
        with pytest.raises(ValidationError, match="exactly one"):
            Medium.model_validate(bad)


def test_runtime_class_fields_sit_at_the_top_level() -> None:
    crc = CacheRuntimeClass.model_validate(
        {
            "metadata": {"name": "mooncake"},
            "fileSystemType": "mooncake",
            "topology": {
                "master": {"image": "m:1", "options": {"a": "b"}, "ports": [{"containerPort": 50051}]}
            },
        }
    )
    assert crc.topology.master is not None
    assert crc.topology.master.ports[0].protocol == "TCP"
    assert crc.topology.component("client") is None
