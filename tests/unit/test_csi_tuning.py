"""FUSE tuning keys (SPEC §5) against the real curvine-fuse: every flag its ``list-config-flags``
declares is a tuning key or a flag the driver refuses with its reason; every tuning key, given a
value, becomes an argv that the binary's own ``validate-config`` accepts; the design document's
keys are translated (seconds → ``--*-timeout-ms``) or warned about; the value rules curvine-fuse
enforces across keys are refused at parse time, naming the key, where the binary refuses too."""

from __future__ import annotations

from pathlib import Path

import pytest

from csi.fuse.fuseconfig import fuse_config
from csi.model import fusecmd
from csi.model.errors import InvalidParameter
from csi.model.params import VolumeParams, parse_params
from kubectl_fluid.api import curvinefuse as cf
from kubectl_fluid.api import names
from tests.unit.curvine_real import list_config_flags, requires_real_fuse, validate_config

MASTER = names.PARAM_MASTER_ADDRS
MASTERS = "127.0.0.1:18995"

# A valid StorageClass value of every tuning key, and the argv it must become (after the flag).
EXAMPLES: dict[str, tuple[str, list[str]]] = {
    **{key: ("0004", ["4"]) for key in (*cf.FUSE_COUNT_PARAMS, *cf.FUSE_CLIENT_COUNT_PARAMS)},
    **{key: ("8", ["8"]) for key in cf.FUSE_POSITIVE_PARAMS},
    cf.PARAM_MAX_BACKGROUND: ("300", ["300"]),
    cf.PARAM_CONGESTION_THRESHOLD: ("100", ["100"]),
    "web-port": ("19999", ["19999"]),
    **{key: ("True", ["true"]) for key in (*cf.FUSE_SWITCH_PARAMS, *cf.FUSE_CLIENT_SWITCH_PARAMS)},
    **{key: ("TRUE", []) for key in cf.FUSE_PRESENCE_PARAMS},
    **{key: ("250", ["250"]) for key in cf.FUSE_MILLISECONDS_PARAMS},
    **{key: ("30m", ["30m"]) for key in (*cf.FUSE_DURATION_PARAMS, *cf.FUSE_CLIENT_DURATION_PARAMS)},
    **{key: ("64mb", ["64MB"]) for key in cf.FUSE_CLIENT_SIZE_PARAMS},
    cf.PARAM_MNT_NUMBER: ("1", ["1"]),
    cf.PARAM_OPTIONS: ("allow_other,nodev,allow_other", ["allow_other,nodev"]),
    cf.PARAM_CLIENT_HOSTNAME: ("Worker-1.Example", ["worker-1.example"]),
    cf.PARAM_CLIENT_UMASK: ("0o22", ["022"]),
    cf.PARAM_CLIENT_STORAGE_TYPE: ("SSD", ["ssd"]),
    cf.PARAM_CLIENT_TTL_ACTION: ("Delete", ["delete"]),
}


def argv_of(raw: dict[str, str], mnt: Path) -> list[str]:
    return fusecmd.fuse_args(parse_params({MASTER: MASTERS, **raw}), str(mnt))


def tuning_of(args: list[str]) -> list[str]:
    """The argv after the driver's own flags (--conf, --master-addrs, --fs-path, --mnt-path)."""
    return args[8:]


@pytest.fixture
def mount_dir(tmp_path: Path) -> Path:
    """A mount key's directory layout: the mount point and, beside it, the configuration file."""
    mnt = tmp_path / "key" / "fuse-mount"
    mnt.mkdir(parents=True)
    return mnt


def write_config(mnt: Path, params: VolumeParams) -> None:
    Path(names.fuse_config_path(str(mnt))).write_text(fuse_config(params, {}))


def test_every_tuning_key_has_an_example() -> None:
    assert set(EXAMPLES) == set(cf.FUSE_TUNING_PARAMS)
    assert len(cf.FUSE_TUNING_PARAMS) == len(set(cf.FUSE_TUNING_PARAMS))


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_a_tuning_key_becomes_its_flag_with_the_value_curvine_fuse_takes(key: str, mount_dir: Path) -> None:
    value, expected = EXAMPLES[key]
    assert tuning_of(argv_of({key: value}, mount_dir)) == [f"--{key}", *expected]


@requires_real_fuse
def test_every_flag_of_the_real_cli_is_a_tuning_key_or_the_drivers_own() -> None:
    declared = {flag["long"] for flag in list_config_flags()}
    assert declared == set(cf.FUSE_TUNING_PARAMS) | set(cf.FUSE_DRIVER_FLAGS)
    value_less = {flag["long"] for flag in list_config_flags() if not flag["takes_value"]}
    assert value_less - set(cf.FUSE_DRIVER_FLAGS) == set(cf.FUSE_PRESENCE_PARAMS)


@requires_real_fuse
@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_the_real_curvine_fuse_accepts_each_tuning_key_as_the_driver_passes_it(
    key: str, mount_dir: Path
) -> None:
    params = parse_params({MASTER: MASTERS, key: EXAMPLES[key][0]})
    write_config(mount_dir, params)
    checked = validate_config(fusecmd.fuse_args(params, str(mount_dir)))
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize(
    ("key", "refused_by", "flag"),
    [(key, key, f"--{key}") for key in cf.FUSE_DRIVER_FLAGS if key != cf.FLAG_MNT_PATH],
)
def test_the_flags_the_driver_sets_are_not_tuning_keys(key: str, refused_by: str, flag: str) -> None:
    if key in (cf.FLAG_MASTER_ADDRS, cf.FLAG_FS_PATH):
        return  # the volume's own parameters, of their own shapes (test_csi_params)
    with pytest.raises(InvalidParameter) as caught:
        parse_params({MASTER: MASTERS, key: "x"})
    assert caught.value.key == refused_by
    assert "the driver sets itself" in caught.value.message


# --- the design document's keys ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"entry-timeout": "0.5"}, ["--entry-timeout-ms", "500"]),
        ({"attr-timeout": "2"}, ["--attr-timeout-ms", "2000"]),
        ({"negative-timeout": "0.001"}, ["--negative-timeout-ms", "1"]),
        ({"negative-timeout": "000"}, ["--negative-timeout-ms", "0"]),
        ({"attr-timeout": "1.25"}, ["--attr-timeout-ms", "1250"]),
        ({"mnt-per-task": "2"}, ["--tasks-per-mnt", "2"]),
    ],
)
def test_design_document_keys_are_handed_over_under_their_new_names(
    raw: dict[str, str], expected: list[str], mount_dir: Path
) -> None:
    assert tuning_of(argv_of(raw, mount_dir)) == expected
    # ... and are the very setting the new name gives: one FUSE for both spellings.
    (new_key, new_value) = (expected[0][2:], expected[1])
    assert parse_params({MASTER: MASTERS, **raw}) == parse_params({MASTER: MASTERS, new_key: new_value})


@requires_real_fuse
@pytest.mark.parametrize(
    "old", ["--entry-timeout", "--attr-timeout", "--negative-timeout", "--node-cache-size"]
)
def test_the_real_cli_refuses_the_design_documents_flags(old: str, mount_dir: Path) -> None:
    params = parse_params({MASTER: MASTERS})
    write_config(mount_dir, params)
    checked = validate_config([*fusecmd.fuse_args(params, str(mount_dir)), old, "1"])
    assert checked.returncode == 2, checked.stderr
    assert "unexpected argument" in checked.stderr


def test_node_cache_size_is_accepted_with_a_warning_and_not_handed_over(mount_dir: Path) -> None:
    params = parse_params({MASTER: MASTERS, "node-cache-size": "1024", "io-threads": "4"})
    assert params.tuning == (("io-threads", "4"),)
    assert any("node-cache-size" in w and "no longer" in w for w in params.warnings)
    assert "--node-cache-size" not in fusecmd.fuse_args(params, str(mount_dir))


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"entry-timeout": "1", "entry-timeout-ms": "1000"}, "entry-timeout"),
        ({"mnt-per-task": "2", "tasks-per-mnt": "2"}, "mnt-per-task"),
    ],
)
def test_two_keys_for_one_setting_are_refused(raw: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_params({MASTER: MASTERS, **raw})
    assert caught.value.key == named
    assert "one setting" in caught.value.message


@pytest.mark.parametrize("value", ["0.0001", "1.5s", "-1", ".5", "1e3"])
def test_seconds_finer_than_a_millisecond_or_not_a_decimal_are_refused(value: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_params({MASTER: MASTERS, "entry-timeout": value})
    assert caught.value.key == "entry-timeout"
    assert "milliseconds" in caught.value.message


def test_presence_flags_false_leave_the_flag_out(mount_dir: Path) -> None:
    params = parse_params({MASTER: MASTERS, "debug": "false", "readonly": "False"})
    assert params.tuning == ()
    assert params == parse_params({MASTER: MASTERS})


# --- value rules curvine-fuse enforces --------------------------------------------------------

# (StorageClass tuning, the key named, words of the message)
REFUSED: list[tuple[dict[str, str], str, str]] = [
    ({"max-background": "0"}, "max-background", "1-65535"),
    ({"congestion-threshold": "0"}, "congestion-threshold", "1-65535"),
    ({"max-background": "100"}, "max-background", "set congestion-threshold too, at most 100"),
    ({"max-background": "100", "congestion-threshold": "101"}, "congestion-threshold", "<= max-background"),
    ({"congestion-threshold": "300"}, "congestion-threshold", "curvine-fuse's default"),
    ({"io-threads": "0"}, "io-threads", "refuses 0"),
    ({"list-limit": "0"}, "list-limit", "refuses 0"),
    ({"mnt-number": "2"}, "mnt-number", "below the one the driver binds"),
    ({"direct-io": "true", "write-back-cache": "true"}, "write-back-cache", "direct-io"),
    ({"readonly": "true", "options": "rw"}, "options", "readonly"),
    ({"options": "ro,rw"}, "options", "opposites"),
    ({"options": "auto_unmount"}, "options", "mount options"),
    ({"options": "allow_other,"}, "options", "mount options"),
    ({"clone-fd": "1"}, "clone-fd", "true or false"),
    ({"client.storage-type": "floppy"}, "client.storage-type", "one of"),
    ({"client.ttl-action": "keep"}, "client.ttl-action", "one of"),
    ({"client.block-size": "64XB"}, "client.block-size", "size"),
    ({"client.umask": "089"}, "client.umask", "octal"),
    ({"client.hostname": "a_b"}, "client.hostname", "DNS name"),
    ({"meta-cache-ttl": "1y"}, "meta-cache-ttl", "duration"),
    ({"entry-timeout-ms": "0.5"}, "entry-timeout-ms", "whole milliseconds"),
    ({"web-port": "65536"}, "web-port", "0-65535"),
]


@pytest.mark.parametrize(
    ("raw", "key", "words"), REFUSED, ids=[f"{k}:{sorted(r.items())}" for r, k, _ in REFUSED]
)
def test_values_curvine_fuse_would_refuse_are_refused_naming_the_key(
    raw: dict[str, str], key: str, words: str
) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_params({MASTER: MASTERS, **raw})
    assert caught.value.key == key
    assert words in caught.value.message, caught.value.message


# Where the driver is stricter than curvine-fuse, and why.
STRICTER = {
    # More mount points would lie below --mnt-path, the one point the driver binds volumes from.
    cf.PARAM_MNT_NUMBER: "mnt-number",
    # curvine-fuse takes any string; one that is no host name only breaks short-circuit reads.
    cf.PARAM_CLIENT_HOSTNAME: "client.hostname",
}


@requires_real_fuse
@pytest.mark.parametrize(
    ("raw", "key", "words"), REFUSED, ids=[f"{k}:{sorted(r.items())}" for r, k, _ in REFUSED]
)
def test_the_real_curvine_fuse_refuses_them_too(
    raw: dict[str, str], key: str, words: str, mount_dir: Path
) -> None:
    """The refusals are the binary's, not inventions: each value, passed as it is, makes
    validate-config fail, but for the two the driver refuses on purpose (STRICTER)."""
    if key in STRICTER:
        return
    params = parse_params({MASTER: MASTERS})
    write_config(mount_dir, params)
    flags = []
    for name, value in raw.items():
        flags += [f"--{name}"] if name in cf.FUSE_PRESENCE_PARAMS else [f"--{name}", value]
    checked = validate_config([*fusecmd.fuse_args(params, str(mount_dir)), *flags])
    assert checked.returncode != 0, f"validate-config took {flags}"


# --- SPEC §5's list, key by key -----------------------------------------------------------------

# The tuning keys SPEC §5 names (the design document's), each with a value a StorageClass may carry.
SPEC_KEYS: dict[str, str] = {
    "io-threads": "4",
    "worker-threads": "4",
    "mnt-per-task": "2",
    "clone-fd": "true",
    "fuse-channel-size": "8",
    "stream-channel-size": "8",
    "direct-io": "true",
    "cache-readdir": "false",
    "entry-timeout": "0.5",
    "attr-timeout": "1",
    "negative-timeout": "0.25",
    "max-background": "300",
    "congestion-threshold": "100",
    "node-cache-size": "1024",
    "node-cache-timeout": "30m",
    "mnt-number": "1",
}


@pytest.mark.parametrize("key", sorted(SPEC_KEYS))
def test_every_spec_key_is_handed_over_or_warned_and_dropped(key: str, mount_dir: Path) -> None:
    params = parse_params({MASTER: MASTERS, key: SPEC_KEYS[key]})
    tuning = tuning_of(fusecmd.fuse_args(params, str(mount_dir)))
    if key == "node-cache-size":
        assert tuning == []
        assert any(key in w for w in params.warnings)
    else:
        assert len(tuning) == 2, tuning
        assert tuning[0].startswith("--"), tuning
        assert params.warnings == ()


@requires_real_fuse
@pytest.mark.parametrize("key", sorted(set(SPEC_KEYS) - {"node-cache-size"}))
def test_the_real_curvine_fuse_accepts_every_spec_key_as_the_driver_passes_it(
    key: str, mount_dir: Path
) -> None:
    params = parse_params({MASTER: MASTERS, key: SPEC_KEYS[key]})
    write_config(mount_dir, params)
    checked = validate_config(fusecmd.fuse_args(params, str(mount_dir)))
    assert checked.returncode == 0, checked.stderr
