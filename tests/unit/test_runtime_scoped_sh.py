"""runtime-scoped.sh (kubectl_fluid/runtimeconfig/scoped.py): two datasets' configs sourced into one
real shell (dash, bash, busybox sh) leave both, every value byte-exact under its dataset's names,
where two runtime.sh leave only the second's; runtime.sh itself is untouched by it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_fluid.api import names
from kubectl_fluid.runtimeconfig import RuntimeConfig, flatten, render_scoped_sh, render_sh
from kubectl_fluid.runtimeconfig.scoped import scoped_exports
from tests.unit.hostile import runtime_configs
from tests.unit.samples import spec_config
from tests.unit.shells import SHELLS, source_and_dump

# Dataset names as the CRD admits them (DNS-1035 labels), short enough to be quick.
dataset_names = st.from_regex(r"[a-z]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)


def test_the_names_carry_the_dataset_and_the_values_are_runtime_shs() -> None:
    config = spec_config()
    scoped = scoped_exports(config, "ds-1")
    assert [(n.removeprefix("FLUID_DS_1_"), v) for n, v in scoped] == flatten(config)
    assert all(n.startswith("FLUID_DS_1_") for n, _ in scoped)
    assert ("FLUID_DS_1_MASTER_NAME", dict(flatten(config))["MASTER_NAME"]) in scoped
    assert names.scoped_config_env_name("ds-1") == "FLUID_SCOPED_CONFIG_PATH_DS_1"
    assert names.pod_runtime_scoped_sh_path("ds-1") == "/etc/fluid/config/ds-1/runtime-scoped.sh"


def test_two_runtime_sh_overwrite_each_other_and_two_scoped_forms_do_not(tmp_path: Path) -> None:
    """The issue's case: sourcing ds1's then ds2's runtime.sh leaves ds2's MASTER_NAME only."""
    one = spec_config()
    assert one.master is not None
    two = one.model_copy(update={"master": one.master.model_copy(update={"name": "ds2-master"})})
    plain = source_and_dump("dash", render_sh(one) + render_sh(two), tmp_path)
    assert plain["MASTER_NAME"] == "ds2-master"
    both = source_and_dump("dash", render_scoped_sh(one, "ds1") + render_scoped_sh(two, "ds2"), tmp_path)
    assert both["FLUID_DS1_MASTER_NAME"] == one.master.name
    assert both["FLUID_DS2_MASTER_NAME"] == "ds2-master"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runtime_configs, runtime_configs, dataset_names, dataset_names)
def test_two_scoped_forms_compose_in_every_shell(
    first: RuntimeConfig, second: RuntimeConfig, a: str, b: str
) -> None:
    if names.shell_safe(a) == names.shell_safe(b):
        b = b + "x"
    expected = {**dict(scoped_exports(first, a)), **dict(scoped_exports(second, b))}
    script = render_scoped_sh(first, a) + render_scoped_sh(second, b)
    with tempfile.TemporaryDirectory() as workdir:
        for shell in SHELLS:
            assert source_and_dump(shell, script, Path(workdir)) == expected, shell
