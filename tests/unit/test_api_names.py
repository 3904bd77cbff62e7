"""Name rules of SPEC §1-§6."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.api import names


def test_dataset_name_limit_keeps_the_configmap_a_dns_label() -> None:
    assert names.MAX_DATASET_NAME_LENGTH == 42
    assert len(names.runtime_config_configmap("a" * 42)) == 63
    assert names.dataset_name_error("a" * 42) is None
    message = names.dataset_name_error("a" * 43)
    assert message is not None
    assert "fluid-runtime-config-" in message
    assert "63" in message


@pytest.mark.parametrize("name", ["a.b", "1ds", "Ds1", "ds-", "-ds", "ds_1", "d s", "ds1\n", "", "é"])
def test_a_dataset_name_is_a_dns_1035_label(name: str) -> None:
    message = names.dataset_name_error(name)
    assert message == names.DATASET_NAME_NOT_DNS_1035_MESSAGE
    assert "DNS-1035" in message
    assert "Services" in message  # why: what is named after it


def _is_dns_1035_label(name: str) -> bool:
    """Kubernetes' IsDNS1035Label, spelled out character by character (an oracle, not the regex)."""
    lower = string.ascii_lowercase
    allowed = set(lower + string.digits + "-")
    return (
        0 < len(name) <= 63
        and name[0] in lower
        and name[-1] in allowed - {"-"}
        and all(c in allowed for c in name)
    )


@given(st.text(string.ascii_letters + string.digits + "-._ \n", max_size=50))
def test_dataset_name_rule_is_dns_1035_and_42(name: str) -> None:
    valid = _is_dns_1035_label(name) and len(name) <= names.MAX_DATASET_NAME_LENGTH
    assert (names.dataset_name_error(name) is None) == valid


def test_pod_injection_names() -> None:
    assert names.runtime_config_configmap("ds1") == "fluid-runtime-config-ds1"
    assert names.runtime_config_volume("ds1") == "fluid-runtime-config-ds1"
    assert names.pod_config_dir("ds1") == "/etc/fluid/config/ds1/"
    assert names.pod_runtime_sh_path("ds1") == "/etc/fluid/config/ds1/runtime.sh"
    assert names.runtime_config_env_names("my-ds.v1") == (
        "FLUID_RUNTIME_CONFIG_PATH_my-ds.v1",
        "FLUID_RUNTIME_CONFIG_PATH_MY_DS_V1",
    )
    assert names.runtime_config_env_names("DS") == ("FLUID_RUNTIME_CONFIG_PATH_DS",)


def test_component_and_volume_names() -> None:
    assert names.component_name("ds1", "master") == "ds1-master"
    assert names.component_service("ds1", "worker") == "svc-ds1-worker"
    assert names.target_path("default", "ds1") == "/runtime-mnt/cache/default/ds1/cache-fuse"
    assert names.encrypt_option_path("s3cred", "access-key") == "/etc/fluid/secrets/s3cred/access-key"
    assert names.dataset_pv("team-a", "ds1") == "team-a-ds1"
    assert names.dataset_pvc("ds1") == "ds1"
    assert names.dataset_pvc_label("team-a", "ds1") == "fluid.io/s-team-a-ds1"
    assert names.is_dataset_pvc_label(names.dataset_pvc_label("team-a", "ds1"))
    assert names.dataset_id("team-a", "ds1") == "team-a-ds1"


def test_long_pairs_are_shortened_stably_and_distinctly() -> None:
    ns = "n" * 63
    label = names.dataset_pvc_label(ns, "a" * 42)
    assert len(label.removeprefix("fluid.io/")) == 63
    assert label == names.dataset_pvc_label(ns, "a" * 42)
    assert label != names.dataset_pvc_label(ns, "a" * 41 + "b")
    assert len(names.dataset_id(ns, "a" * 42)) == 63
    assert names.fit_63("x" * 63) == "x" * 63


def test_csi_names() -> None:
    assert names.CSI_DRIVER == "curvine.csi.fluid.io"
    key = "0123456789abcdef0123456789abcdef"
    assert names.fuse_mount_name("node-1", key) == "node-1-0123456789abcdef"
    assert len(names.fuse_mount_name("n" * 253, key)) == 253
    assert names.fuse_mount_labels("node-1", key) == {"fluid.io/node": "node-1", "fluid.io/mount-key": key}
    assert names.fuse_mount_node_selector("node-1") == "fluid.io/node=node-1"
    assert names.cluster_id("m1:8995,m2:8995") == names.cluster_id("m1:8995,m2:8995")
    assert len(names.cluster_id("m1:8995")) == 8
    assert names.volume_handle("abcd1234", "/data", "pv1") == "abcd1234@/data@pv1"
    assert names.fuse_mount_path(key, "/tmp/p") == f"/tmp/p/kubernetes.io/csi/curvine/{key}/fuse-mount"


def test_controller_child_names() -> None:
    assert names.secret_mount_dir("s3cred") == "/etc/fluid/secrets/s3cred"
    assert names.secret_volume("s3cred") == "cache-mnt-secret-s3cred"
    # Upstream's rule for a name that does not fit: 38 characters and 8 hex of sha256, 63 in all.
    long = "a-very-long-secret-name-that-goes-beyond-the-dns-label-limit-xyz"
    assert names.secret_volume(long) == "cache-mnt-secret-a-very-long-secret-name-that-goes-beyo666faac1"
    # Volume names are DNS labels: dotted Secret names take the hashed form, so they stay distinct.
    dotted = names.secret_volume("a.b")
    assert "." not in dotted
    assert dotted.startswith("cache-mnt-secret-a-b")
    assert dotted != names.secret_volume("a-b")
    assert len(names.secret_volume("s." * 120 + "s")) == 63
    assert names.extra_configmap_volume("ds1", "curvine-config") == "fluid-extra-ds1-curvine-config"
    assert names.extra_configmap_volume("ds1", "a.b") != names.extra_configmap_volume("ds1", "a-b")
    assert len(names.extra_configmap_volume("d" * 42, "c" * 253)) == 63
    assert names.fuse_node_label("team-a", "ds1") == "fluid.io/f-team-a-ds1"
    assert len(names.fuse_node_label("n" * 63, "d" * 42).split("/")[1]) == 63
    assert names.shared_field_manager("team-a", "ds1") == "fluid-controller/team-a/ds1"
    assert names.service_host("svc-ds1-master", "team-a") == "svc-ds1-master.team-a.svc"
    assert names.dataset_volume_handle("team-a", "ds1") == "team-a-ds1"
    assert names.dataset_curvine_path("team-a", "ds1") == "/team-a/ds1"


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=253))
def test_a_cron_dataloads_cronjob_name_fits_and_stays_distinct(name: str) -> None:
    cron = names.dataload_cronjob(name)
    assert len(cron) <= names.CRONJOB_NAME_MAX
    assert cron == names.dataload_cronjob(name)
    if len(names.dataload_job(name)) <= names.CRONJOB_NAME_MAX:
        assert cron == names.dataload_job(name)  # upstream's name whenever it fits
    assert names.dataload_cronjob(name + "x") != cron
