"""StorageClass parameter validation (SPEC §5): defaults, normalisation, and every refusal naming
the key it is about."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csi.model import tuning
from csi.model.errors import InvalidParameter
from csi.model.params import VolumeParams, normalize_curvine_path, parse_params
from kubectl_fluid.api import curvinefuse as cf
from kubectl_fluid.api import names
from tests.unit.csi_samples import MASTERS, params

MASTER = names.PARAM_MASTER_ADDRS
FS = names.PARAM_FS_PATH
PATH_TYPE = names.PARAM_PATH_TYPE
CURVINE = names.PARAM_CURVINE_PATH


def test_defaults() -> None:
    got = parse_params({MASTER: "m1:8995"})
    assert got == VolumeParams(master_addrs="m1:8995", fs_path="/", path_type="Directory", tuning=())
    assert got.warnings == ()
    assert got.to_context() == {MASTER: "m1:8995", FS: "/", PATH_TYPE: "Directory"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("m1:8995", "m1:8995"),
        (" M1.Example.COM:08995 , m2:1 ", "m1.example.com:8995,m2:1"),
        ("10.0.0.1:65535", "10.0.0.1:65535"),
        ("[fd00:0:0::1]:8995,[::1]:1", "[fd00::1]:8995,[::1]:1"),
        ("svc-a.ns.svc:8995,svc-b.ns.svc:8995", "svc-a.ns.svc:8995,svc-b.ns.svc:8995"),
        ("b:1,a:1", "b:1,a:1"),
    ],
)
def test_master_addrs_are_normalised_in_order(raw: str, expected: str) -> None:
    assert parse_params({MASTER: raw}).master_addrs == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/", "/"),
        ("/a/b", "/a/b"),
        ("/a//b/", "/a/b"),
        ("/./a/./b/.", "/a/b"),
        ("//", "/"),
        ("/a.../b", "/a.../b"),
    ],
)
def test_fs_path_is_normalised(raw: str, expected: str) -> None:
    assert parse_params({MASTER: MASTERS, FS: raw}).fs_path == expected


def test_path_type_and_tuning() -> None:
    got = parse_params(
        {
            MASTER: MASTERS,
            PATH_TYPE: "DirectoryOrCreate",
            "worker-threads": "008",
            "io-threads": "4",
            "direct-io": "TRUE",
            "entry-timeout": "0.5",
            "node-cache-timeout": "30m",
            "max-background": "65535",
        }
    )
    assert got.path_type == "DirectoryOrCreate"
    # Sorted by key, values canonical.
    assert got.tuning == (
        ("direct-io", "true"),
        ("entry-timeout-ms", "500"),
        ("io-threads", "4"),
        ("max-background", "65535"),
        ("node-cache-timeout", "30m"),
        ("worker-threads", "8"),
    )
    assert got.to_context()["worker-threads"] == "8"


def test_legacy_keys_are_accepted_with_warnings_and_dropped() -> None:
    raw = {MASTER: MASTERS, **{key: "x" for key in names.LEGACY_PARAMS}}
    got = parse_params(raw)
    assert got == params()
    assert len(got.warnings) == len(names.LEGACY_PARAMS)
    assert any(names.PARAM_MNT_PATH in w and "generated" in w for w in got.warnings)
    assert not set(got.to_context()) & set(names.LEGACY_PARAMS)


def test_kubernetes_keys_are_ignored() -> None:
    raw = {
        MASTER: MASTERS,
        "csi.storage.k8s.io/pvc/name": "data",
        "csi.storage.k8s.io/provisioner-secret-name": "s",
    }
    assert parse_params(raw) == params()


def test_every_tuning_key_has_a_shape() -> None:
    assert set(tuning.SHAPES) == set(cf.FUSE_TUNING_PARAMS)
    assert len(cf.FUSE_TUNING_PARAMS) == len(set(cf.FUSE_TUNING_PARAMS)) == 81


INVALID: list[tuple[dict[str, str], str, str]] = [
    # (parameters beyond a valid master-addrs, key named, words in the message)
    ({MASTER: ""}, MASTER, "empty"),
    ({MASTER: "   "}, MASTER, "empty"),
    ({MASTER: "m1"}, MASTER, "no port"),
    ({MASTER: "m1:"}, MASTER, "port"),
    ({MASTER: ":8995"}, MASTER, "no port"),
    ({MASTER: "m1:0"}, MASTER, "1-65535"),
    ({MASTER: "m1:65536"}, MASTER, "1-65535"),
    ({MASTER: "m1:+80"}, MASTER, "port"),
    ({MASTER: "m1:\uff18\uff10"}, MASTER, "port"),  # full-width digits: int() would take them
    ({MASTER: "m1:8995,"}, MASTER, "empty entry"),
    ({MASTER: "m1:1,,m2:1"}, MASTER, "empty entry"),
    ({MASTER: "m1:1,M1:01"}, MASTER, "twice"),
    ({MASTER: "-m1:1"}, MASTER, "DNS"),
    ({MASTER: "m_1:1"}, MASTER, "DNS"),
    ({MASTER: "m 1:1"}, MASTER, "DNS"),
    ({MASTER: "a..b:1"}, MASTER, "DNS"),
    ({MASTER: f"{'a' * 64}:1"}, MASTER, "DNS"),
    ({MASTER: "999.1.1.1:1"}, MASTER, "IPv4"),
    ({MASTER: "::1:8995"}, MASTER, "brackets"),
    ({MASTER: "[::1]"}, MASTER, "no port"),
    ({MASTER: "[::1]x"}, MASTER, "no port"),
    ({MASTER: "[zz::1]:1"}, MASTER, "IPv6"),
    ({MASTER: "[fe80::1%eth0]:1"}, MASTER, "zone"),
    ({FS: ""}, FS, "absolute"),
    ({FS: "a/b"}, FS, "absolute"),
    ({FS: "/a/../b"}, FS, ".."),
    ({FS: "/.."}, FS, ".."),
    ({FS: "/a/.."}, FS, ".."),
    ({FS: "/a@b"}, FS, "@"),
    ({FS: "/a\nb"}, FS, "control"),
    ({FS: "/a\x00"}, FS, "control"),
    ({PATH_TYPE: "directory"}, PATH_TYPE, "DirectoryOrCreate"),
    ({PATH_TYPE: ""}, PATH_TYPE, "Directory"),
    ({PATH_TYPE: "File"}, PATH_TYPE, "Directory"),
    ({"io-threads": ""}, "io-threads", "empty"),
    ({"io-threads": "4 "}, "io-threads", "whitespace"),
    ({"io-threads": "4\n"}, "io-threads", "whitespace"),
    ({"io-threads": "-4"}, "io-threads", "integer"),
    ({"io-threads": "4.0"}, "io-threads", "integer"),
    ({"io-threads": str(2**32)}, "io-threads", "integer"),
    ({"mnt-number": "--debug"}, "mnt-number", "1: more mount points"),
    ({"worker-threads": "--debug"}, "worker-threads", "integer"),
    ({"max-background": "65536"}, "max-background", "65535"),
    ({"clone-fd": "yes"}, "clone-fd", "true or false"),
    ({"clone-fd": "1"}, "clone-fd", "true or false"),
    ({"attr-timeout": "1s"}, "attr-timeout", "seconds"),
    ({"attr-timeout": "-1"}, "attr-timeout", "seconds"),
    ({"negative-timeout": ".5"}, "negative-timeout", "seconds"),
    ({"node-cache-timeout": "1y"}, "node-cache-timeout", "duration"),
    ({"node-cache-timeout": "h"}, "node-cache-timeout", "duration"),
    # Longer than Python's int() takes (4300 digits): refused as too large, not an internal error.
    ({"io-threads": "9" * 5000}, "io-threads", "integer"),
    ({"max-background": "9" * 5000}, "max-background", "65535"),
    ({"entry-timeout": "9" * 5000}, "entry-timeout", "seconds"),
    ({"attr-timeout": str(2**32)}, "attr-timeout", "seconds"),
    ({"attr-timeout": "1." + "5" * 5000}, "attr-timeout", "seconds"),
    ({"node-cache-timeout": "9" * 5000 + "s"}, "node-cache-timeout", "duration"),
    ({"bogus": "1"}, "bogus", "not a parameter"),
    ({"Master-Addrs": "m1:1"}, "Master-Addrs", "not a parameter"),
    ({"storage.kubernetes.io/x": "1"}, "storage.kubernetes.io/x", "not a parameter"),
    ({CURVINE: "/a"}, CURVINE, "set by the driver"),
    ({names.PARAM_CLUSTER_ID: "abcd1234"}, names.PARAM_CLUSTER_ID, "set by the driver"),
    ({names.PARAM_VOLUME_HANDLE: "x"}, names.PARAM_VOLUME_HANDLE, "set by the driver"),
]


@pytest.mark.parametrize(
    ("extra", "key", "words"), INVALID, ids=[f"{k}={v[:40]!r}" for e, k, _ in INVALID for v in [e[k]]]
)
def test_invalid_parameters_name_their_key(extra: dict[str, str], key: str, words: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_params({MASTER: MASTERS, **extra})
    assert caught.value.key == key
    assert f'"{key}"' in str(caught.value)
    assert words in caught.value.message


def test_missing_master_addrs() -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_params({FS: "/a"})
    assert caught.value.key == MASTER
    assert "required" in caught.value.message
    with pytest.raises(InvalidParameter, match="master-hostname and master-rpc-port are no longer read"):
        parse_params({names.PARAM_MASTER_HOSTNAME: "m1", names.PARAM_MASTER_RPC_PORT: "8995"})


def test_first_error_in_key_order_is_reported() -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_params({"zzz": "1", MASTER: MASTERS, "aaa": "1", FS: "rel"})
    assert caught.value.key == "aaa"


@pytest.mark.parametrize(
    ("curvine_path", "fs_path", "expected"),
    [
        ("/a/pv", "/", "/a/pv"),
        ("/a//pv/", "/a", "/a/pv"),
        ("/a", "/a", "/a"),
        ("/", "/", "/"),
    ],
)
def test_curvine_path_inside_fs_path(curvine_path: str, fs_path: str, expected: str) -> None:
    assert normalize_curvine_path(curvine_path, fs_path) == expected


@pytest.mark.parametrize(
    ("curvine_path", "fs_path", "words"),
    [
        ("/ab/pv", "/a", "outside"),
        ("/b", "/a", "outside"),
        ("/", "/a", "outside"),
        ("a/pv", "/", "absolute"),
        ("/a/../b", "/a", ".."),
        ("/a/p@v", "/a", "@"),
    ],
)
def test_curvine_path_refusals(curvine_path: str, fs_path: str, words: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        normalize_curvine_path(curvine_path, fs_path)
    assert caught.value.key == CURVINE
    assert words in caught.value.message


# Keys whose values are bounded by 2^32-1 (of their unit).
NUMERIC_KEYS = [*cf.FUSE_COUNT_PARAMS, *cf.FUSE_CLIENT_COUNT_PARAMS, *cf.FUSE_DURATION_PARAMS]


@settings(max_examples=200, deadline=None)
@given(
    key=st.sampled_from(NUMERIC_KEYS),
    zeros=st.integers(0, 6000),
    digits=st.text("0123456789", min_size=1, max_size=6000),
    unit=st.sampled_from(["", "s", "m"]),
)
def test_numbers_of_any_length_are_a_value_or_invalid_argument(
    key: str, zeros: int, digits: str, unit: str
) -> None:
    value = "0" * zeros + digits + (unit if key in cf.FUSE_DURATION_PARAMS else "")
    refused: str | None = None
    try:
        got = dict(parse_params({MASTER: MASTERS, key: value}).tuning)[key]
    except InvalidParameter as err:
        refused = err.key
    if refused is not None:
        assert refused == key
        return
    whole = got[: len(got) - len(got.lstrip("0123456789"))]
    assert len(whole.lstrip("0")) <= 10
    assert int(whole.lstrip("0") or "0") <= 2**32 - 1


def test_leading_zeros_of_a_long_count_are_dropped() -> None:
    assert parse_params({MASTER: MASTERS, "io-threads": "0" * 5000 + "7"}).tuning == (("io-threads", "7"),)


KNOWN_KEYS = [
    FS,
    PATH_TYPE,
    *cf.FUSE_TUNING_PARAMS,
    *cf.FUSE_RENAMED_PARAMS,
    *cf.FUSE_SECONDS_PARAMS,
    *cf.FUSE_DROPPED_PARAMS,
    *names.LEGACY_PARAMS,
    "csi.storage.k8s.io/x",
]
VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["/", "/a//b", "0", "007", "true", "False", "1.5", "30m", "Directory", "DirectoryOrCreate"]
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.one_of(st.sampled_from(KNOWN_KEYS), st.text(max_size=12)), VALUES, max_size=6))
def test_arbitrary_input_is_accepted_or_refused_by_key(raw: dict[str, str]) -> None:
    """Whatever the input, parse_params returns VolumeParams or raises InvalidParameter naming a key
    of the input (or the missing master-addrs); never another exception."""
    refused: InvalidParameter | None = None
    try:
        got = parse_params({MASTER: MASTERS, **raw})
    except InvalidParameter as err:
        refused = err
    if refused is not None:
        assert refused.key in raw or refused.key == MASTER
        return
    assert got.master_addrs
    assert got.fs_path.startswith("/")
    # Canonical output is a fixed point.
    canonical = {MASTER: got.master_addrs, FS: got.fs_path, names.PARAM_PATH_TYPE: got.path_type}
    assert parse_params({**canonical, **dict(got.tuning)}) == got
