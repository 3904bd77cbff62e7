"""runtime.sh sourced by real shells (dash, bash, busybox sh): every value comes back byte-exact,
nothing is expanded or executed, and scripts can run under ``set -u`` whatever is disabled."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from kubectl_fluid.runtimeconfig import RuntimeConfig, flatten, render_json, render_sh
from kubectl_fluid.runtimeconfig.model import MountConfig
from tests.unit.hostile import HOSTILE, runtime_configs
from tests.unit.samples import spec_config
from tests.unit.sh_oracle import expected_exports
from tests.unit.shells import SHELLS, shell_argv, source_and_dump


def _assert_round_trip(config: RuntimeConfig, workdir: Path) -> None:
    script = render_sh(config)
    assert flatten(config) == expected_exports(render_json(config))
    expected = dict(flatten(config))
    for shell in SHELLS:
        assert source_and_dump(shell, script, workdir) == expected, shell
    # `$(touch pwned)` and friends must stay text.
    assert sorted(p.name for p in workdir.iterdir()) == ["runtime.sh"]


def _hostile_mount(i: int, value: str) -> MountConfig:
    return MountConfig(
        name=value,
        path=value,
        mount_point=value,
        read_only=bool(i % 2),
        shared=False,
        options={value: value, f"k{i}": value},
        encrypt_options={value: value},
    )


def test_every_hostile_value_in_one_script(tmp_path: Path) -> None:
    config = spec_config()
    assert config.master is not None
    config = config.model_copy(
        update={
            "target_path": "".join(HOSTILE),
            "access_modes": HOSTILE,
            "mounts": [_hostile_mount(i, v) for i, v in enumerate(HOSTILE)],
            "master": config.master.model_copy(update={"options": {v: v for v in HOSTILE}}),
        }
    )
    _assert_round_trip(config, tmp_path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runtime_configs)
def test_hostile_configs_come_back_byte_exact(config: RuntimeConfig) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        _assert_round_trip(config, Path(workdir))


@pytest.mark.parametrize("shell", SHELLS)
def test_set_u_with_the_client_disabled(shell: str, tmp_path: Path) -> None:
    (tmp_path / "runtime.sh").write_text(render_sh(spec_config()), encoding="utf-8")
    script = (
        "set -eu; . ./runtime.sh; printf '%s|' "
        '"$CLIENT_ENABLED" "$CLIENT_NAME" "$CLIENT_REPLICAS" "$CLIENT_SERVICE_NAME" '
        '"$CLIENT_OPTIONS" "$CLIENT_TIEREDSTORE_LEVELS_COUNT" "$WORKER_TIEREDSTORE_LEVELS_COUNT"'
    )
    proc = subprocess.run(
        [*shell_argv(shell), "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "false||0||{}|0|0|"
