"""Volume identities (SPEC §5): CreateVolume's ids, the handle format, static and dynamic volume
contexts at NodeStage, clientless PVs."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from csi.model.errors import ClientlessVolume, InvalidParameter
from csi.model.volumes import (
    ContextVolume,
    VolumeHandle,
    create_volume_ids,
    is_clientless,
    parse_volume_context,
    parse_volume_handle,
)
from kubectl_fluid.api import names
from tests.unit.csi_samples import MASTERS, params

MASTER = names.PARAM_MASTER_ADDRS
FS = names.PARAM_FS_PATH
CURVINE = names.PARAM_CURVINE_PATH


def test_create_volume_ids() -> None:
    got = create_volume_ids(params(**{FS: "/data/", "io-threads": "4"}), "pvc-1")
    cluster = hashlib.sha256(MASTERS.encode()).hexdigest()[:8]
    assert got.cluster_id == cluster
    assert got.volume_handle == f"{cluster}@/data@pvc-1"
    assert got.curvine_path == "/data/pvc-1"
    assert got.volume_context == {
        MASTER: MASTERS,
        FS: "/data",
        names.PARAM_PATH_TYPE: "Directory",
        "io-threads": "4",
        names.PARAM_CLUSTER_ID: cluster,
        names.PARAM_VOLUME_HANDLE: got.volume_handle,
        CURVINE: "/data/pvc-1",
    }
    cluster_id, handle, curvine_path, context = got
    assert (cluster_id, handle, curvine_path) == (cluster, got.volume_handle, "/data/pvc-1")
    assert context is got.volume_context


def test_curvine_path_under_the_root_has_one_slash() -> None:
    assert create_volume_ids(params(), "pvc-1").curvine_path == "/pvc-1"


def test_cluster_id_follows_normalised_master_addrs() -> None:
    a = create_volume_ids(params(**{MASTER: "M1:08995"}), "x")
    b = create_volume_ids(params(**{MASTER: "m1:8995"}), "x")
    assert a.cluster_id == b.cluster_id == names.cluster_id("m1:8995")


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a@b", "a\nb"])
def test_bad_volume_names(name: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        create_volume_ids(params(), name)
    assert caught.value.key == "name"


def test_context_of_a_created_volume_parses_back() -> None:
    original = params(**{FS: "/data", names.PARAM_PATH_TYPE: "DirectoryOrCreate", "clone-fd": "true"})
    created = create_volume_ids(original, "pvc-1")
    # The provisioner stamps its identity into the PV; kubelet adds pod info on publish.
    context = {
        **created.volume_context,
        "storage.kubernetes.io/csiProvisionerIdentity": "123-node",
        "csi.storage.k8s.io/pod.name": "app",
    }
    assert parse_volume_context(context) == ContextVolume(original, "/data/pvc-1")


NAME_RE = st.from_regex(r"[a-z0-9][a-z0-9.-]{0,40}", fullmatch=True).filter(lambda n: n not in (".", ".."))
SEGMENT = st.from_regex(r"[A-Za-z0-9._-]{1,10}", fullmatch=True).filter(lambda s: s not in (".", ".."))


@given(st.lists(SEGMENT, max_size=4), NAME_RE)
def test_handle_round_trip(segments: list[str], pv_name: str) -> None:
    fs_path = "/" + "/".join(segments)
    created = create_volume_ids(params(**{FS: fs_path}), pv_name)
    parsed = parse_volume_handle(created.volume_handle)
    assert parsed == VolumeHandle(created.cluster_id, fs_path, pv_name)
    assert parsed.curvine_path == created.curvine_path
    assert str(parsed) == created.volume_handle


@pytest.mark.parametrize(
    "handle",
    [
        "team-a-ds1",  # a static PV's handle (the controller's)
        "abcd1234@/@",
        "abcd1234@/a",
        "ABCD1234@/a@pv",
        "abcd123@/a@pv",
        "abcd1234@a@pv",
        "abcd1234@/a//b@pv",
        "abcd1234@/a/../b@pv",
        "abcd1234@/a@p/v",
        "abcd1234@/a@pv@x",
    ],
)
def test_other_handles_are_not_dynamic(handle: str) -> None:
    assert parse_volume_handle(handle) is None


def test_static_pv_context_defaults_fs_path() -> None:
    context = {
        MASTER: "svc-ds1-master.team-a.svc:8995",
        CURVINE: "/team-a/ds1",
        names.VOLUME_ATTR_DATASET_NAME: "ds1",
        names.VOLUME_ATTR_DATASET_NAMESPACE: "team-a",
    }
    got = parse_volume_context(context)
    assert got.params.fs_path == "/"
    assert got.curvine_path == "/team-a/ds1"


def test_static_pv_context_needs_curvine_path_inside_fs_path() -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_volume_context({MASTER: MASTERS})
    assert caught.value.key == CURVINE
    with pytest.raises(InvalidParameter, match="outside"):
        parse_volume_context({MASTER: MASTERS, FS: "/a", CURVINE: "/b/c"})
    with pytest.raises(InvalidParameter, match=r"\.\."):
        parse_volume_context({MASTER: MASTERS, CURVINE: "/a/../../etc"})
    with pytest.raises(InvalidParameter) as caught:
        parse_volume_context({CURVINE: "/a"})
    assert caught.value.key == MASTER
    with pytest.raises(InvalidParameter) as caught:
        parse_volume_context({MASTER: MASTERS, CURVINE: "/a", "typo": "1"})
    assert caught.value.key == "typo"


def test_clientless_context_is_refused_with_directions() -> None:
    context = {
        names.VOLUME_ATTR_DATASET_NAME: "ds1",
        names.VOLUME_ATTR_DATASET_NAMESPACE: "team-a",
        names.VOLUME_ATTR_CLIENTLESS: "true",
    }
    assert is_clientless(context)
    assert is_clientless({names.VOLUME_ATTR_CLIENTLESS: "True"})
    assert not is_clientless({names.VOLUME_ATTR_CLIENTLESS: "false"})
    assert not is_clientless({})
    with pytest.raises(ClientlessVolume) as caught:
        parse_volume_context(context)
    message = str(caught.value)
    assert names.LABEL_INJECT in message
    assert names.ANNOTATION_DATASET in message
    assert "team-a/ds1" in message
