"""curvine-fuse's configuration file per mount key (csi/fuse/fuseconfig.py): the node's FUSE settings with
the volume's masters, read back by TOML and by the real curvine-fuse."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csi.fuse.fuseconfig import NodeSettingsError, fuse_config, load_node_settings, write_fuse_config
from csi.model import fusecmd
from csi.model.params import parse_params
from kubectl_fluid.api import names
from tests.unit.curvine_real import requires_real_fuse, validate_config

MASTER = names.PARAM_MASTER_ADDRS
NODE: dict[str, dict[str, object]] = {
    "fuse": {"enable_splice": False, "web_port": 19003},
    "client": {"hostname": "n1", "master_addrs": []},
}


def test_the_volumes_masters_and_the_nodes_settings() -> None:
    text = fuse_config(parse_params({MASTER: "M1:08995,[fd00::1]:1"}), NODE)
    config = tomllib.loads(text)
    assert config["client"] == {
        "hostname": "n1",
        "master_addrs": [{"hostname": "m1", "port": 8995}, {"hostname": "fd00::1", "port": 1}],
    }
    assert config["fuse"]["enable_splice"] is False
    assert config["fuse"]["web_port"] == 19003
    # Quiet by default: every file operation is a line at curvine's info.
    assert config["fuse"]["log"] == {"level": "warn", "log_dir": "stdout"}
    assert NODE["client"]["master_addrs"] == []  # the node's settings are not changed


def test_the_nodes_own_logging_is_kept() -> None:
    node = {"fuse": {"log": {"level": "debug", "log_dir": "/var/log/curvine"}}}
    config = tomllib.loads(fuse_config(parse_params({MASTER: "m:1"}), node))
    assert config["fuse"]["log"] == {"level": "debug", "log_dir": "/var/log/curvine"}


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(
        st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8),
        st.one_of(st.integers(-(2**63), 2**63 - 1), st.booleans(), st.text(max_size=10)),
        max_size=4,
    )
)
def test_any_node_settings_come_back_as_they_were(extra: dict[str, object]) -> None:
    node = {"fuse": {"enable_splice": False}, "master": extra}
    config = tomllib.loads(fuse_config(parse_params({MASTER: "m:1"}), node))
    assert config["master"] == extra
    assert fuse_config(parse_params({MASTER: "m:1"}), node) == fuse_config(
        parse_params({MASTER: "m:1"}), node
    )


def test_node_settings_files(tmp_path: Path) -> None:
    assert load_node_settings(None) == {}
    good = tmp_path / "node.toml"
    good.write_text("[fuse]\nenable_splice = false\n")
    assert load_node_settings(str(good)) == {"fuse": {"enable_splice": False}}
    with pytest.raises(NodeSettingsError, match="No such file"):
        load_node_settings(str(tmp_path / "none.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[fuse\n")
    with pytest.raises(NodeSettingsError, match="not valid TOML"):
        load_node_settings(str(bad))
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('fuse = "x"\n')
    with pytest.raises(NodeSettingsError, match=r"fuse must be a table"):
        load_node_settings(str(wrong))


def test_written_atomically_and_only_when_changed(tmp_path: Path) -> None:
    path = tmp_path / "key" / names.FUSE_CONFIG_FILE
    write_fuse_config(str(path), "a = 1\n")
    assert path.read_text() == "a = 1\n"
    before = path.stat().st_mtime_ns
    write_fuse_config(str(path), "a = 1\n")
    assert path.stat().st_mtime_ns == before
    write_fuse_config(str(path), "a = 2\n")
    assert path.read_text() == "a = 2\n"
    assert sorted(p.name for p in path.parent.iterdir()) == [names.FUSE_CONFIG_FILE]


@requires_real_fuse
@pytest.mark.parametrize("masters", ["127.0.0.1:18995,m2.example:8995", "[::1]:18995"])
def test_the_real_curvine_fuse_reads_it(masters: str, tmp_path: Path) -> None:
    """With an IPv6 master the argv carries no --master-addrs: the file alone names the masters."""
    mnt = tmp_path / "key" / "fuse-mount"
    mnt.mkdir(parents=True)
    params = parse_params({MASTER: masters})
    write_fuse_config(names.fuse_config_path(str(mnt)), fuse_config(params, NODE))
    checked = validate_config(fusecmd.fuse_args(params, str(mnt)))
    assert checked.returncode == 0, checked.stderr
    assert "unrecognized [fuse] config key" not in checked.stderr
