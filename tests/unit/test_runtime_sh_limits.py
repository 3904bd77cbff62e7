"""runtime.sh must leave a pod able to start programs: a value over Linux's limit for one environment
string, or a script over the total cap, is refused at render time with the variable, its source
field and the limit named. The limit is checked against real shells and a real exec."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kubectl_fluid.runtimeconfig import (
    RuntimeConfig,
    RuntimeConfigError,
    RuntimeConfigTooLarge,
    flatten,
    render_sh,
)
from kubectl_fluid.runtimeconfig.limits import MAX_ARG_STRLEN, RUNTIME_SH_MAX_BYTES
from kubectl_fluid.runtimeconfig.model import MountConfig, TieredStoreLevelConfig
from kubectl_fluid.runtimeconfig.sources import source_of
from tests.unit.samples import spec_config
from tests.unit.shells import SHELLS, shell_argv

VARIABLE = "MOUNT_0_MOUNTPOINT"
# NAME=, the value, the NUL: the value's largest size that still fits one environment string.
LARGEST_VALUE = MAX_ARG_STRLEN - len(VARIABLE) - 2


def with_mount_point(value: str) -> RuntimeConfig:
    config = spec_config()
    mount = config.mounts[0].model_copy(update={"mount_point": value})
    return config.model_copy(update={"mounts": [mount]})


def with_mount_points(values: list[str]) -> RuntimeConfig:
    config = spec_config()
    mounts = [
        config.mounts[0].model_copy(update={"name": f"m{i}", "mount_point": v}) for i, v in enumerate(values)
    ]
    return config.model_copy(update={"mounts": mounts})


def test_the_limit_is_the_kernels() -> None:
    assert MAX_ARG_STRLEN == 131072
    assert RUNTIME_SH_MAX_BYTES == 262144


def test_a_value_exactly_at_the_limit_renders() -> None:
    script = render_sh(with_mount_point("x" * LARGEST_VALUE))
    assert f"export {VARIABLE}='{'x' * LARGEST_VALUE}'\n" in script


def test_one_byte_more_is_refused_with_the_variable_field_and_limit_named() -> None:
    with pytest.raises(RuntimeConfigTooLarge) as refused:
        render_sh(with_mount_point("x" * (LARGEST_VALUE + 1)))
    message = str(refused.value)
    assert VARIABLE in message
    assert "Dataset spec.mounts[0].mountPoint" in message
    assert f"it is {MAX_ARG_STRLEN + 1} bytes" in message
    assert f"over {MAX_ARG_STRLEN} bytes (MAX_ARG_STRLEN)" in message
    assert "E2BIG" in message
    assert refused.value.reason == "RuntimeConfigTooLarge"
    assert isinstance(refused.value, RuntimeConfigError)  # the controller's path for render errors


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    two_byte = "é" * (LARGEST_VALUE // 2)  # LARGEST_VALUE is even: exactly at the limit
    assert len(two_byte.encode()) == LARGEST_VALUE
    render_sh(with_mount_point(two_byte))
    with pytest.raises(RuntimeConfigTooLarge, match=VARIABLE):
        render_sh(with_mount_point(two_byte + "x"))


def test_a_long_option_names_its_key_and_where_options_come_from() -> None:
    config = spec_config()
    assert config.master is not None
    master = config.master.model_copy(update={"options": {"small": "1", "blob": "x" * MAX_ARG_STRLEN}})
    with pytest.raises(RuntimeConfigTooLarge) as refused:
        render_sh(config.model_copy(update={"master": master}))
    message = str(refused.value)
    assert "MASTER_OPTIONS" in message
    assert "CacheRuntime spec.options or spec.master.options" in message
    assert "CacheRuntimeClass topology.master.options" in message
    assert f'(largest entry "blob": {MAX_ARG_STRLEN} bytes)' in message


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def test_the_whole_script_is_capped_exactly() -> None:
    # Three values, each well under the one-string limit, that together fill the script to the cap.
    parts = 3
    base = len(render_sh(with_mount_points([""] * parts)).encode())
    sizes = _split(RUNTIME_SH_MAX_BYTES - base, parts)
    assert all(size < LARGEST_VALUE for size in sizes)
    at_cap = render_sh(with_mount_points(["y" * size for size in sizes]))
    assert len(at_cap.encode()) == RUNTIME_SH_MAX_BYTES

    sizes[0] += 1
    with pytest.raises(RuntimeConfigTooLarge) as refused:
        render_sh(with_mount_points(["y" * size for size in sizes]))
    message = str(refused.value)
    assert (
        f"would be {RUNTIME_SH_MAX_BYTES + 1} bytes, over its limit of {RUNTIME_SH_MAX_BYTES} bytes"
        in message
    )
    # The largest variables are named with their fields, largest first.
    assert message.index(
        f"MOUNT_0_MOUNTPOINT: {sizes[0] + 20} bytes, from Dataset spec.mounts[0].mountPoint"
    ) < message.index(f"MOUNT_1_MOUNTPOINT: {sizes[1] + 20} bytes, from Dataset spec.mounts[1].mountPoint")


def test_every_variable_a_user_can_fill_names_its_field() -> None:
    # A marker in every user-written string: each variable carrying one must have a source, so a
    # field added to the config without one is caught here. Tier mount paths and medium types are
    # the controller's own.
    config = spec_config()
    marked = config.model_copy(
        update={
            "access_modes": ["MARK"],
            "mounts": [
                MountConfig(
                    name="MARK",
                    path="MARK",
                    mount_point="MARK",
                    options={"k": "MARK"},
                    encrypt_options={"k": "MARK"},
                )
            ],
        }
    )
    level = TieredStoreLevelConfig(
        medium_type="HDD", mount_paths=["/p0", "/p1"], quotas=["MARK", "MARK"], high="MARK", low="MARK"
    )
    for component in ("master", "worker"):
        current = getattr(marked, component)
        assert current is not None
        update = {"options": {"k": "MARK"}, "tiered_store_levels": [level]}
        marked = marked.model_copy(update={component: current.model_copy(update=update)})
    carrying = [name for name, value in flatten(marked) if "MARK" in value]
    assert len(carrying) == 1 + 5 + 2 * 5
    assert [name for name in carrying if source_of(name) is None] == []
    assert source_of("WORKER_TIEREDSTORE_LEVEL_2_QUOTA_0") == (
        "CacheRuntime spec.worker.tieredStore.levels[2].processMemory.quota, .emptyDir.quota or "
        ".hostPath.quotas[0]"
    )
    assert (
        source_of("CLIENT_TIEREDSTORE_LEVEL_0_QUOTA_3")
        == "CacheRuntime spec.client.tieredStore.levels[0].hostPath.quotas[3]"
    )
    assert source_of("WORKER_TIEREDSTORE_LEVEL_0_MOUNTPATH_0") is None
    assert source_of("MASTER_NAME") is None  # the controller's own


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_a_value_at_the_limit_still_lets_the_shell_exec_and_one_more_byte_does_not(
    shell: str, tmp_path: Path
) -> None:
    """Proves the limit is the kernel's: sourcing the largest value render_sh accepts leaves exec
    working; the same script with one byte more (which render_sh refuses) makes exec fail with E2BIG."""
    at_limit = render_sh(with_mount_point("x" * LARGEST_VALUE))
    quoted = f"'{'x' * LARGEST_VALUE}'"
    over = at_limit.replace(quoted, f"'{'x' * (LARGEST_VALUE + 1)}'")
    assert over != at_limit

    def source_then_exec(script: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "runtime.sh").write_text(script, encoding="utf-8")
        return subprocess.run(
            [*shell_argv(shell), "-c", ". ./runtime.sh && exec /bin/true"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )

    ok = source_then_exec(at_limit)
    assert (ok.returncode, ok.stderr) == (0, "")
    broken = source_then_exec(over)
    assert broken.returncode != 0
    assert "Argument list too long" in broken.stderr
