"""Mount keys, host paths, pod sub-paths and the FUSE argv (SPEC §5)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from csi.model.errors import InvalidParameter
from csi.model.fusecmd import fuse_args, fuse_argv
from csi.model.mountkey import fuse_mount_dir, mount_key, mount_key_dir, pod_sub_path, staging_path
from csi.model.params import FuseParams, parse_params
from kubectl_fluid.api import curvinefuse as cf
from kubectl_fluid.api import names
from tests.unit.csi_samples import MASTERS, params

MASTER = names.PARAM_MASTER_ADDRS
FS = names.PARAM_FS_PATH


def test_mount_key_is_a_pinned_label_value() -> None:
    key = mount_key(params())
    assert re.fullmatch(r"[0-9a-f]{32}", key)
    # Pinned: a change of the encoding would silently give every live mount a new key (and a second
    # FUSE after an upgrade); changing it must be deliberate, with this value.
    assert key == mount_key(FuseParams(master_addrs=MASTERS, fs_path="/"))
    assert key == "fa71d886fc2e1e734a907e086abdbb2c"
    # ... and it is what csi/model/mountkey.py documents.
    documented = b'["fluid-mount-key/v1","m1.team-a.svc:8995,m2.team-a.svc:8995","/",[]]'
    assert key == hashlib.sha256(documented).hexdigest()[:32]
    tuned = b'["fluid-mount-key/v1","m1:1","/a",[["direct-io","true"],["io-threads","4"]]]'
    assert (
        mount_key(parse_params({MASTER: "m1:1", FS: "/a", "io-threads": "4", "direct-io": "true"}))
        == (hashlib.sha256(tuned).hexdigest()[:32])
    )


def test_mount_key_is_stable_across_processes() -> None:
    code = (
        "from csi.model.mountkey import mount_key; from csi.model.params import parse_params; "
        f"print(mount_key(parse_params({{'{MASTER}': '{MASTERS}', 'io-threads': '4'}})))"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == mount_key(params(**{"io-threads": "4"}))


def test_mount_key_ignores_spelling_and_path_type() -> None:
    a = params(**{MASTER: "M1:08995", FS: "/a//b/", "clone-fd": "TRUE"})
    b = params(
        **{MASTER: "m1:8995", FS: "/a/b", "clone-fd": "true", names.PARAM_PATH_TYPE: "DirectoryOrCreate"}
    )
    assert mount_key(a) == mount_key(b) == mount_key(b.fuse)


FS_PATHS = st.lists(st.sampled_from(["a", "b", "ab", "a.b", "x-1"]), max_size=3).map(
    lambda s: "/" + "/".join(s)
)
TUNING = st.dictionaries(st.sampled_from(cf.FUSE_COUNT_PARAMS), st.integers(0, 99).map(str), max_size=3)
MASTER_SETS = st.sampled_from(["m1:8995", "m2:8995", "m1:8996", "m1:8995,m2:8995", "m2:8995,m1:8995"])


SETTINGS = st.tuples(MASTER_SETS, FS_PATHS, TUNING)


@given(SETTINGS, SETTINGS)
def test_mount_key_is_distinct_exactly_for_distinct_fuse_settings(
    one: tuple[str, str, dict[str, str]], two: tuple[str, str, dict[str, str]]
) -> None:
    (m1, f1, t1), (m2, f2, t2) = one, two
    a = parse_params({MASTER: m1, FS: f1, **t1})
    b = parse_params({MASTER: m2, FS: f2, **t2})
    assert (mount_key(a) == mount_key(b)) == (a.fuse == b.fuse)
    # Parameter order in the StorageClass does not matter.
    assert mount_key(a) == mount_key(parse_params({FS: f1, **dict(reversed(list(t1.items()))), MASTER: m1}))


def test_host_paths() -> None:
    key = mount_key(params())
    assert fuse_mount_dir("/tmp/r", key) == f"/tmp/r/kubernetes.io/csi/curvine/{key}/fuse-mount"
    assert mount_key_dir("/tmp/r", key) == f"/tmp/r/kubernetes.io/csi/curvine/{key}"
    assert fuse_mount_dir(names.KUBELET_PLUGINS_ROOT, key) == (
        f"/var/lib/kubelet/plugins/kubernetes.io/csi/curvine/{key}/fuse-mount"
    )
    digest = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"  # sha256("hello")
    assert staging_path("/r", "hello") == f"/r/kubernetes.io/csi/curvine.csi.fluid.io/{digest}/globalmount"
    assert (
        names.csi_publish_target("uid-1", "pv-1", "/k")
        == "/k/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount"
    )


@pytest.mark.parametrize(
    ("fs_path", "curvine_path", "expected"),
    [
        ("/", "/team-a/ds1", "/m/fuse-mount/team-a/ds1"),
        ("/", "/", "/m/fuse-mount"),
        ("/data", "/data/pvc-1", "/m/fuse-mount/pvc-1"),
        ("/data/", "/data//pvc-1/", "/m/fuse-mount/pvc-1"),
        ("/data", "/data", "/m/fuse-mount"),
        ("/a/b", "/a/b/c/d", "/m/fuse-mount/c/d"),
    ],
)
def test_pod_sub_path(fs_path: str, curvine_path: str, expected: str) -> None:
    assert pod_sub_path("/m/fuse-mount", fs_path, curvine_path) == expected
    assert pod_sub_path("/m/fuse-mount/", fs_path, curvine_path) == expected


@pytest.mark.parametrize(
    ("fs_path", "curvine_path"),
    [("/data", "/other/pvc"), ("/data", "/database/pvc"), ("/data", "/"), ("/data", "/data/../etc")],
)
def test_pod_sub_path_refuses_paths_outside_fs_path(fs_path: str, curvine_path: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        pod_sub_path("/m", fs_path, curvine_path)
    assert caught.value.key == names.PARAM_CURVINE_PATH


def test_fuse_argv() -> None:
    p = params(
        **{FS: "/data", "worker-threads": "8", "io-threads": "4", "direct-io": "true", "debug": "true"}
    )
    argv = fuse_argv("/opt/curvine/curvine-fuse", p, "/mnt/x y")
    assert argv == [
        "/opt/curvine/curvine-fuse",
        "--conf",
        "/mnt/curvine-fuse.toml",
        "--master-addrs",
        MASTERS,
        "--fs-path",
        "/data",
        "--mnt-path",
        "/mnt/x y",
        "--debug",
        "--direct-io",
        "true",
        "--io-threads",
        "4",
        "--worker-threads",
        "8",
    ]
    assert fuse_args(p, "/mnt/x y") == argv[1:]
    assert fuse_argv(names.FUSE_BINARY, params(), "/m")[0] == names.FUSE_BINARY
    assert len(fuse_argv("f", params(), "/m")) == 9


def test_fuse_argv_leaves_ipv6_masters_to_the_configuration_file() -> None:
    """curvine-fuse's --master-addrs splits an entry at its first colon: an IPv6 master cannot be
    named there, only in the configuration file's [client] master_addrs."""
    p = parse_params({MASTER: "[fd00::1]:8995,m2:8995"})
    assert fuse_args(p, "/k/fuse-mount") == [
        "--conf", "/k/curvine-fuse.toml", "--fs-path", "/", "--mnt-path", "/k/fuse-mount"
    ]  # fmt: skip
