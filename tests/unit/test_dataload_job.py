"""The loader Job of a DataLoad (controller/dataload/job.py): upstream's cache dataloader chart,
built from the class's DataLoad spec, with the runtime config mounted."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.dataload.job import Unsupported, build_job, loader_env
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataload import DataLoad
from tests.unit.desired_samples import CURVINE_CLASS, FUSE_RUNTIME, NAMESPACE

LOAD_SPEC = {"name": "DataLoad", "command": ["/bin/sh", "-c"], "args": ["cv load $FLUID_DATALOAD_DATA_PATH"]}


def dataload(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": "DataLoad",
        "metadata": {
            "name": "warm",
            "namespace": NAMESPACE,
            "uid": "u-1",
            "creationTimestamp": "2026-12-05T01:00:00Z",
        },
        "spec": {"dataset": {"name": "ds1"}, **spec},
    }


def klass(*specs: dict[str, Any], **changes: Any) -> CacheRuntimeClass:
    obj = copy.deepcopy(CURVINE_CLASS)
    obj["dataOperationSpecs"] = list(specs)
    obj.update(changes)
    return CacheRuntimeClass.model_validate(obj)


def job(dl: dict[str, Any], runtime: dict[str, Any] = FUSE_RUNTIME, *specs: dict[str, Any]) -> dict[str, Any]:
    return build_job(
        DataLoad.model_validate(dl),
        "ds1",
        CacheRuntime.model_validate(runtime),
        klass(*(specs or (LOAD_SPEC,))),
    )


def env(job: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_the_job_is_upstreams_with_the_specs_command_and_the_runtime_config_mounted() -> None:
    built = job(dataload(target=[{"path": "/a", "replicas": 2}, {"path": "/b"}], loadMetadata=True))
    assert built["metadata"]["name"] == "warm-loader-job"
    assert built["metadata"]["ownerReferences"] == [
        {
            "apiVersion": names.API_VERSION,
            "kind": "DataLoad",
            "name": "warm",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    labels = built["metadata"]["labels"]
    assert (labels["role"], labels["app"], labels["targetDataset"], labels["release"]) == (
        "dataload-job",
        "cache",
        "ds1",
        "warm-loader",
    )
    spec = built["spec"]
    assert (spec["backoffLimit"], spec["completions"], spec["parallelism"]) == (3, 1, 1)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert spec["template"]["metadata"]["labels"]["role"] == "dataload-pod"
    main = pod["containers"][0]
    assert (main["command"], main["args"]) == (LOAD_SPEC["command"], LOAD_SPEC["args"])
    assert env(built) == {
        "FLUID_DATALOAD_METADATA": "true",
        "FLUID_DATALOAD_DATA_PATH": "/a:/b",
        "FLUID_DATALOAD_PATH_REPLICAS": "2:1",
        "FLUID_RUNTIME_CONFIG_PATH": "/etc/fluid/config/runtime.json",
    }
    assert main["volumeMounts"] == [
        {"name": "fluid-runtime-ds1-config", "mountPath": "/etc/fluid/config", "readOnly": True}
    ]
    assert pod["volumes"] == [
        {"name": "fluid-runtime-ds1-config", "configMap": {"name": "fluid-runtime-config-ds1"}}
    ]


def test_without_targets_the_whole_dataset_is_loaded_once_without_metadata() -> None:
    assert env(job(dataload())) | {"FLUID_RUNTIME_CONFIG_PATH": ""} == {
        "FLUID_DATALOAD_METADATA": "false",
        "FLUID_DATALOAD_DATA_PATH": "/",  # a Dataset without a mount the cache mounts
        "FLUID_DATALOAD_PATH_REPLICAS": "1",
        "FLUID_RUNTIME_CONFIG_PATH": "",
    }


def test_without_targets_each_mount_of_the_dataset_is_loaded() -> None:
    mounts = [
        {"name": "s3data", "mountPoint": "s3://b/data"},
        {"name": "x", "path": "/models/x", "mountPoint": "s3://b/x"},
        {"name": "local", "mountPoint": "local:///mnt/y"},  # Fluid-native: the cache mounts none
    ]
    built = build_job(
        DataLoad.model_validate(dataload()),
        "ds1",
        CacheRuntime.model_validate(FUSE_RUNTIME),
        klass(LOAD_SPEC),
        mounts,
    )
    assert env(built)["FLUID_DATALOAD_DATA_PATH"] == "/s3data:/models/x"
    assert env(built)["FLUID_DATALOAD_PATH_REPLICAS"] == "1:1"
    named = build_job(
        DataLoad.model_validate(dataload(target=[{"path": "/s3data/a"}])),
        "ds1",
        CacheRuntime.model_validate(FUSE_RUNTIME),
        klass(LOAD_SPEC),
        mounts,
    )
    assert env(named)["FLUID_DATALOAD_DATA_PATH"] == "/s3data/a"  # named paths as they are


def test_the_image_is_the_specs_else_the_masters_as_the_master_runs_it() -> None:
    assert job(dataload())["spec"]["template"]["spec"]["containers"][0]["image"] == "curvine:0.2"
    pinned = copy.deepcopy(FUSE_RUNTIME)
    pinned["spec"]["master"]["runtimeVersion"] = {"image": "curvine", "imageTag": "0.9"}
    assert job(dataload(), pinned)["spec"]["template"]["spec"]["containers"][0]["image"] == "curvine:0.9"
    own = {**LOAD_SPEC, "image": "loader:1"}
    assert job(dataload(), pinned, own)["spec"]["template"]["spec"]["containers"][0]["image"] == "loader:1"
    no_master = copy.deepcopy(FUSE_RUNTIME)
    no_master["spec"]["master"] = {"disabled": True}
    worker_version = {"image": "curvine-worker", "imageTag": "1"}
    no_master["spec"]["worker"] = {"runtimeVersion": worker_version}
    assert (
        job(dataload(), no_master)["spec"]["template"]["spec"]["containers"][0]["image"] == "curvine-worker:1"
    )


def test_the_dataloads_pod_settings_reach_the_pod() -> None:
    built = job(
        dataload(
            nodeSelector={"disk": "ssd"},
            tolerations=[{"key": "k", "operator": "Exists"}],
            schedulerName="volcano",
            affinity={"nodeAffinity": {}},
            resources={"limits": {"cpu": "1"}},
            podMetadata={"labels": {"team": "a", "role": "mine"}, "annotations": {"a": "b"}},
        )
    )
    template = built["spec"]["template"]
    pod = template["spec"]
    assert pod["nodeSelector"] == {"disk": "ssd"}
    assert pod["tolerations"] == [{"key": "k", "operator": "Exists"}]
    assert (pod["schedulerName"], pod["affinity"]) == ("volcano", {"nodeAffinity": {}})
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
    # The product's labels win: the Job's watch and its pod's role are read by them.
    assert template["metadata"]["labels"]["role"] == "dataload-pod"
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false", "a": "b"}


def test_a_class_without_a_dataload_spec_says_so() -> None:
    with pytest.raises(Unsupported, match="no dataOperationSpecs entry named DataLoad"):
        build_job(
            DataLoad.model_validate(dataload()), "ds1", CacheRuntime.model_validate(FUSE_RUNTIME), klass()
        )
    with pytest.raises(Unsupported, match="can not be both empty"):
        job(dataload(), FUSE_RUNTIME, {"name": "DataLoad"})


def test_a_long_dataload_name_still_names_a_job() -> None:
    dl = dataload()
    dl["metadata"]["name"] = "x" * 63
    assert len(job(dl)["metadata"]["name"]) <= 63


@given(
    st.lists(
        st.tuples(st.text("abc/_-.", min_size=1, max_size=12), st.one_of(st.none(), st.integers(1, 9))),
        max_size=6,
    ),
    st.lists(st.text("abc/", min_size=1, max_size=8).map(lambda p: "/" + p), max_size=4),
)
def test_paths_and_replicas_line_up_one_to_one(
    targets: list[tuple[str, int | None]], whole: list[str]
) -> None:
    dl = DataLoad.model_validate(dataload(target=[{"path": p, "replicas": r} for p, r in targets]))
    values = {e["name"]: e["value"] for e in loader_env(dl, whole)}
    paths = values["FLUID_DATALOAD_DATA_PATH"].split(":")
    replicas = values["FLUID_DATALOAD_PATH_REPLICAS"].split(":")
    assert len(paths) == len(replicas) == (len(targets) or max(1, len(whole)))
    if targets:
        assert replicas == [str(r or 1) for _, r in targets]
    else:
        assert paths == (whole or ["/"])
        assert set(replicas) == {"1"}
