"""Volumes of the component pods, in upstream's order: runtime config, extra ConfigMaps, the
runtime's volumeMounts, Secrets (tiered store and the client's FUSE mount point elsewhere)."""

from __future__ import annotations

import json

import pytest

from controller.desired.errors import SpecError
from kubectl_fluid.api import names
from tests.unit.desired_samples import (
    CLIENTLESS_RUNTIME,
    CURVINE_CLASS,
    DATASET,
    FUSE_RUNTIME,
    MOONCAKE_CLASS,
    build,
    clientless,
    fuse,
    main_container,
    pod,
    secret_option,
    with_spec,
)

CONFIG_MOUNT = {"name": "fluid-runtime-ds1-config", "mountPath": "/etc/fluid/config", "readOnly": True}
CONFIG_VOLUME = {"name": "fluid-runtime-ds1-config", "configMap": {"name": "fluid-runtime-config-ds1"}}
EXTRA_MOUNT = {"name": "fluid-extra-ds1-curvine-config", "mountPath": "/templates", "readOnly": True}
EXTRA_VOLUME = {"name": "fluid-extra-ds1-curvine-config", "configMap": {"name": "curvine-config"}}
SECRETS = [
    {"name": "cache-mnt-secret-s3cred", "secret": {"secretName": "s3cred"}},
    # Secret names may hold dots, volume names may not: the hashed form, with "-" for ".".
    {"name": "cache-mnt-secret-b-tokenb784b1d5", "secret": {"secretName": "b.token"}},
]


def test_master_volumes_and_mounts_in_upstreams_order() -> None:
    master = fuse().statefulsets[0]
    assert pod(master)["volumes"] == [CONFIG_VOLUME, EXTRA_VOLUME, *SECRETS]
    assert main_container(master)["volumeMounts"] == [
        CONFIG_MOUNT,
        EXTRA_MOUNT,
        {"name": "cache-mnt-secret-s3cred", "mountPath": "/etc/fluid/secrets/s3cred", "readOnly": True},
        {
            "name": "cache-mnt-secret-b-tokenb784b1d5",
            "mountPath": "/etc/fluid/secrets/b.token",
            "readOnly": True,
        },
    ]
    # The first init container gets the runtime config and the extra ConfigMaps, not the Secrets.
    assert pod(master)["initContainers"][0]["volumeMounts"] == [CONFIG_MOUNT, EXTRA_MOUNT]


def test_the_runtime_config_is_mounted_in_every_component() -> None:
    for workload in [*clientless().statefulsets, *fuse().statefulsets, fuse().daemonset]:
        assert CONFIG_VOLUME in pod(workload)["volumes"]
        assert CONFIG_MOUNT in main_container(workload)["volumeMounts"]


def test_secrets_by_default_for_master_and_worker_not_the_client() -> None:
    children = fuse()
    assert [v for v in pod(children.statefulsets[1])["volumes"] if "secret" in v] == SECRETS
    assert not [v for v in pod(children.daemonset)["volumes"] if "secret" in v]


@pytest.mark.parametrize(("component", "enabled"), [("client", True), ("master", False)])
def test_secret_mount_enabled_decides_when_set(component: str, enabled: bool) -> None:
    runtime_class = with_spec(
        CURVINE_CLASS, f"topology.{component}.dependencies.secretMount", {"enabled": enabled}
    )
    children = build(DATASET, FUSE_RUNTIME, runtime_class)
    workload = children.daemonset if component == "client" else children.statefulsets[0]
    assert bool([v for v in pod(workload)["volumes"] if "secret" in v]) is enabled


def test_native_mounts_secrets_are_not_mounted_but_runtime_json_names_them() -> None:
    children = clientless()
    assert "local-cred" not in json.dumps(pod(children.statefulsets[0])["volumes"])
    mounts = json.loads(children.configmap["data"]["runtime.json"])["mounts"]
    assert mounts[2]["encryptOptions"]["x"] == "/etc/fluid/secrets/local-cred/k"


def test_every_mounted_secret_file_is_where_runtime_json_points() -> None:
    children = clientless()
    mounted = {m["mountPath"] for m in main_container(children.statefulsets[0])["volumeMounts"]}
    for mount in json.loads(children.configmap["data"]["runtime.json"])["mounts"]:
        if mount["mountPoint"].startswith(names.NATIVE_MOUNT_SCHEMES):
            continue
        for path in mount["encryptOptions"].values():
            assert path.rsplit("/", 1)[0] in mounted


def test_shared_encrypt_options_secrets_come_first_and_each_secret_once() -> None:
    dataset = with_spec(DATASET, "spec.sharedEncryptOptions", [secret_option("t", "b.token", "t")])
    volumes = [
        v["secret"]["secretName"]
        for v in pod(build(dataset, CLIENTLESS_RUNTIME, MOONCAKE_CLASS).statefulsets[0])["volumes"]
        if "secret" in v
    ]
    assert volumes == ["b.token", "s3cred"]


def test_no_secret_volumes_without_encrypt_options() -> None:
    dataset = with_spec(DATASET, "spec", {"mounts": [{"name": "m", "mountPoint": "s3://bucket"}]})
    assert pod(build(dataset, CLIENTLESS_RUNTIME, MOONCAKE_CLASS).statefulsets[0])["volumes"] == [
        CONFIG_VOLUME
    ]


def test_runtime_volume_mounts_go_to_the_first_container_with_the_volumes_they_name() -> None:
    runtime = with_spec(
        CLIENTLESS_RUNTIME,
        "spec.volumes",
        [
            {"name": "unused", "emptyDir": {}},
            {"name": "extra", "emptyDir": {}},
        ],
    )
    runtime = with_spec(runtime, "spec.master.volumeMounts", [{"name": "extra", "mountPath": "/extra"}])
    master = build(DATASET, runtime, MOONCAKE_CLASS).statefulsets[0]
    assert {"name": "extra", "emptyDir": {}} in pod(master)["volumes"]
    assert "unused" not in [v["name"] for v in pod(master)["volumes"]]
    assert {"name": "extra", "mountPath": "/extra"} in main_container(master)["volumeMounts"]
    # Only the component whose volumeMounts name it.
    assert "extra" not in [
        v["name"] for v in pod(build(DATASET, runtime, MOONCAKE_CLASS).statefulsets[1])["volumes"]
    ]


def test_a_runtime_volume_mount_may_name_a_template_volume() -> None:
    runtime_class = with_spec(
        MOONCAKE_CLASS, "topology.master.template.spec.volumes", [{"name": "conf", "emptyDir": {}}]
    )
    runtime = with_spec(
        CLIENTLESS_RUNTIME, "spec.master.volumeMounts", [{"name": "conf", "mountPath": "/conf"}]
    )
    master = build(DATASET, runtime, runtime_class).statefulsets[0]
    assert {"name": "conf", "mountPath": "/conf"} in main_container(master)["volumeMounts"]


def test_a_volume_mount_of_an_unknown_volume_is_refused() -> None:
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.worker.volumeMounts", [{"name": "nope", "mountPath": "/x"}])
    with pytest.raises(
        SpecError,
        match=r"spec\.worker\.volumeMounts\[0\]: volume not found for volumeMount nope, check the "
        "CacheRuntime Spec",
    ):
        build(DATASET, runtime, MOONCAKE_CLASS)


def test_an_undefined_extra_configmap_is_refused_naming_it() -> None:
    runtime_class = with_spec(CURVINE_CLASS, "extraResources", None)
    with pytest.raises(
        SpecError,
        match="component has undefined config map extra resource 'curvine-config', check the "
        "CacheRuntimeClass definition",
    ) as error:
        build(DATASET, FUSE_RUNTIME, runtime_class)
    assert error.value.reason == "InvalidRuntimeClass"
    assert "topology.master.dependencies.extraResources.configMaps[0]" in str(error.value)


def test_the_extra_configmaps_are_made_shared_and_owned_by_the_runtime() -> None:
    (extra,) = fuse().extra_configmaps
    assert extra["metadata"]["name"] == "curvine-config"
    assert extra["metadata"]["namespace"] == "team-a"
    assert extra["data"] == {"cluster.toml": "[master]\n"}
    (owner,) = extra["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CacheRuntime", "ds1", False)
    # The same labels for every runtime of the class: nothing per runtime to fight over.
    assert extra["metadata"]["labels"] == {
        names.LABEL_APP_NAME: "curvinefs",
        names.LABEL_APP_MANAGED_BY: names.MANAGED_BY,
        names.LABEL_RUNTIME_CLASS: "curvine",
    }
    assert clientless().extra_configmaps == ()


@pytest.mark.parametrize(
    ("resources", "match"),
    [
        ([{"data": {}}], "needs a name"),
        ([{"name": "a"}, {"name": "a"}], "defined twice"),
        ([{"name": "fluid-runtime-config-ds2"}], "names the runtimes' own ConfigMaps"),
    ],
)
def test_bad_extra_configmaps_are_refused(resources: list[dict[str, object]], match: str) -> None:
    runtime_class = with_spec(CURVINE_CLASS, "extraResources", {"configMaps": resources})
    runtime_class = with_spec(runtime_class, "topology.master.dependencies", None)
    runtime_class = with_spec(runtime_class, "topology.client.dependencies", None)
    with pytest.raises(SpecError, match=match):
        build(DATASET, FUSE_RUNTIME, runtime_class)
