"""API models: upstream Fluid's v1alpha1 shapes and defaults, Kubernetes JSON spelling, core/v1
parts kept whole, tolerance of unknown fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kubectl_fluid.api.base import kube_camel
from kubectl_fluid.api.cacheruntime import CacheRuntime, CacheRuntimeMasterSpec, RuntimeTieredStoreLevel
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset, Mount
from kubectl_fluid.api.fusemount import FuseMount


def test_a_mounts_path_is_its_absolute_path_else_slash_name_as_upstream_computes_it() -> None:
    assert Mount.model_validate({"name": "m1", "mountPoint": "s3://bucket"}).dataset_path() == "/m1"
    assert (
        Mount.model_validate({"name": "m1", "mountPoint": "s3://bucket", "path": "/x"}).dataset_path() == "/x"
    )
    # Upstream ignores a relative path.
    assert (
        Mount.model_validate({"name": "m1", "mountPoint": "s3://bucket", "path": "x"}).dataset_path() == "/m1"
    )


def test_mount_point_needs_five_characters() -> None:
    with pytest.raises(ValidationError, match="at least 5"):
        Mount(name="m", mount_point="s3:/")


def test_access_modes_default_to_read_only_many_without_a_crd_default() -> None:
    a = Dataset.model_validate({"metadata": {"name": "a"}, "spec": {}})
    assert a.spec.access_modes is None  # nothing written into stored objects, as upstream
    assert a.spec.effective_access_modes() == ["ReadOnlyMany"]
    b = Dataset.model_validate({"metadata": {"name": "b"}, "spec": {"accessModes": ["ReadWriteMany"]}})
    assert b.spec.effective_access_modes() == ["ReadWriteMany"]


def test_placement_exclusive_is_the_default() -> None:
    for placement, exclusive in ((None, True), ("", True), ("Exclusive", True), ("Shared", False)):
        spec = {"placement": placement} if placement is not None else {}
        assert Dataset.model_validate({"spec": spec}).spec.is_exclusive() is exclusive
    with pytest.raises(ValidationError):
        Dataset.model_validate({"spec": {"placement": "Sometimes"}})


def test_component_replicas_default_to_one_and_are_not_negative() -> None:
    assert CacheRuntimeMasterSpec().replicas == 1
    with pytest.raises(ValidationError):
        CacheRuntimeMasterSpec(replicas=-1)
    runtime = CacheRuntime.model_validate({"spec": {"runtimeClassName": "x"}})
    # Components are structs, as upstream has them: absent means empty, not missing.
    assert runtime.spec.master.replicas == 1
    assert runtime.spec.worker.replicas == 1
    assert runtime.spec.client.clean_policy == "OnRuntimeDeleted"


def test_kubernetes_json_round_trips_in_camel_case_with_core_parts_whole() -> None:
    obj = {
        "apiVersion": "data.fluid.io/v1alpha1",
        "kind": "CacheRuntime",
        "metadata": {"name": "ds1", "namespace": "ns", "resourceVersion": "7", "managedFields": [{}]},
        "spec": {
            "runtimeClassName": "mooncake",
            "options": {"a": "1"},
            "worker": {
                "runtimeVersion": {"image": "m", "imageTag": "1", "imagePullPolicy": "Always"},
                "nodeSelector": {"k": "v"},
                "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "resources": {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]},
                "tolerations": [{"operator": "Exists"}],
                "volumeMounts": [{"name": "v", "mountPath": "/v", "subPathExpr": "$(POD)"}],
                "tieredStore": {
                    "levels": [{"emptyDir": {"quota": "1Gi", "medium": "Memory"}, "high": "0.9"}]
                },
            },
            "client": {"disabled": True},
            "volumes": [{"name": "v", "csi": {"driver": "x", "volumeAttributes": {"a": "b"}}}],
        },
        "status": {
            "valueFile": "fluid-runtime-config-ds1",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "master": {"phase": "Ready", "readyReplicas": 1},
        },
    }
    runtime = CacheRuntime.model_validate(obj)
    assert runtime.metadata.resource_version == "7"
    worker = runtime.spec.worker
    assert worker.runtime_version is not None
    assert worker.runtime_version.reference() == "m:1"
    level = worker.tiered_levels()[0]
    assert level.empty_dir is not None
    assert level.empty_dir.medium == "Memory"
    assert runtime.spec.client.disabled
    dumped = runtime.to_kube()
    for field in ("env", "resources", "volumeMounts", "nodeSelector"):
        assert dumped["spec"]["worker"][field] == obj["spec"]["worker"][field]  # type: ignore[index]
    assert dumped["spec"]["volumes"] == obj["spec"]["volumes"]  # type: ignore[index]
    assert dumped["status"]["master"] == {"phase": "Ready", "readyReplicas": 1}
    assert "managedFields" not in dumped["metadata"]  # unknown fields are tolerated, not kept


def test_quantities_are_integers_or_strings() -> None:
    level = RuntimeTieredStoreLevel.model_validate({"processMemory": {"quota": 1073741824}})
    assert level.process_memory is not None
    assert level.process_memory.quota == 1073741824
    level = RuntimeTieredStoreLevel.model_validate(
        {"hostPath": {"paths": ["/a", "/b"], "quotas": ["1Gi", 2]}}
    )
    assert level.media() == ["hostPath"]
    with pytest.raises(ValidationError):
        RuntimeTieredStoreLevel.model_validate({"hostPath": {"paths": [], "quotas": []}})


def test_python_names_are_accepted_too() -> None:
    mount = Mount(name="m", mount_point="hdfs://x", read_only=True)
    assert mount.to_kube() == {"mountPoint": "hdfs://x", "name": "m", "readOnly": True}


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


def test_runtime_class_fields_sit_at_the_top_level_with_upstreams_topology() -> None:
    crc = CacheRuntimeClass.model_validate(
        {
            "metadata": {"name": "mooncake"},
            "fileSystemType": "mooncakefs",
            "topology": {
                "master": {
                    "options": {"a": "b"},
                    "service": {"headless": {}},
                    "executionEntries": {"mountUFS": {"command": ["sh", "-c", "true"], "timeout": 30}},
                    "template": {"spec": {"containers": [{"name": "m", "image": "m:1"}]}},
                },
                "worker": {"template": {"spec": {"containers": [{"name": "w"}]}}},
            },
            "extraResources": {"configMaps": [{"name": "conf", "data": {"a.toml": "x"}}]},
            "dataOperationSpecs": [{"name": "DataLoad", "command": ["load"]}],
        }
    )
    master = crc.component("master")
    assert master is not None
    assert master.has_service()
    assert master.execution_entries is not None
    assert master.execution_entries.mount_ufs is not None
    assert master.to_kube()["executionEntries"] == {
        "mountUFS": {"command": ["sh", "-c", "true"], "timeout": 30}
    }
    worker = crc.component("worker")
    assert worker is not None
    assert not worker.has_service()
    assert crc.component("client") is None
    assert CacheRuntimeClass.model_validate({"fileSystemType": "x"}).component("master") is None


def test_report_summary_under_curvines_spelling_too() -> None:
    """Curvine's own class writes ``ReportSummary``: accepted (the CRD has the field) and read as
    reportSummary, which wins when both are there."""
    from kubectl_fluid.api.cacheruntimeclass import ExecutionEntries, ExecutionEntry

    curvine = ExecutionEntries.model_validate({"ReportSummary": {"command": ["report"], "timeout": 30}})
    assert curvine.summary() == ExecutionEntry(command=["report"], timeout=30)
    assert curvine.to_kube() == {"ReportSummary": {"command": ["report"], "timeout": 30}}
    both = ExecutionEntries.model_validate(
        {"ReportSummary": {"command": ["curvine"]}, "reportSummary": {"command": ["upstream"]}}
    )
    assert both.summary() == ExecutionEntry(command=["upstream"])
