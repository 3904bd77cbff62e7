"""The demo app (hack/demo/mooncake_app.py) against runtime.sh, without Mooncake: its connection is
built from the runtime.sh the controller renders for the mooncake samples, sourced by a real shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from demo import mooncake_app
from kubectl_fluid.api import names
from tests.unit.mooncake_samples import children


def sourced_env(runtime_sh: str, tmp_path: Path) -> dict[str, str]:
    """The environment after a real shell sources runtime.sh."""
    script = tmp_path / "runtime.sh"
    script.write_text(runtime_sh)
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    out = subprocess.run(
        ["sh", "-c", f'. "$1" && exec {sys.executable} -c "$2"', "sh", str(script), code],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"]},
    ).stdout
    env: dict[str, str] = json.loads(out)
    return env


def test_demo_app_connection_comes_from_runtime_sh_alone(tmp_path: Path) -> None:
    kids = children(master={"options": {"rpc_port": "40051"}})
    env = sourced_env(kids.configmap["data"][names.RUNTIME_SH_KEY], tmp_path)
    conn = mooncake_app.connection_from_env(env, "10.0.0.7")
    assert conn == mooncake_app.Connection(
        master_server_addr="demo-master-0.svc-demo-master:40051",
        metadata_server="P2PHANDSHAKE",
        protocol="tcp",
        local_hostname="10.0.0.7",
    )
    args = conn.setup_args()
    assert args["master_server_addr"] == "demo-master-0.svc-demo-master:40051"  # setup(dict)'s spelling
    assert args["global_segment_size"] == 0  # the worker holds the data, not the app


def test_demo_app_explains_a_missing_or_unusable_runtime_sh() -> None:
    with pytest.raises(mooncake_app.ConfigError, match=r"runtime\.sh is not sourced"):
        mooncake_app.connection_from_env({}, "x")
    with pytest.raises(mooncake_app.ConfigError, match="has no master"):
        mooncake_app.connection_from_env({"MASTER_ENABLED": "false"}, "x")
    env = {"MASTER_ENABLED": "true", "MASTER_NAME": "m", "MASTER_SERVICE_NAME": "s", "MASTER_OPTIONS": "{}"}
    with pytest.raises(mooncake_app.ConfigError, match="no numeric rpc_port"):
        mooncake_app.connection_from_env(env, "x")
    assert mooncake_app.main(["put", "k"]) == 2


def test_two_datasets_scoped_forms_give_one_process_both_connections(tmp_path: Path) -> None:
    """The issue's case: one shell sources two datasets' runtime-scoped.sh and the app reads both."""
    first = children(master={"options": {"rpc_port": "40051"}}).configmap["data"][names.RUNTIME_SCOPED_SH_KEY]
    second = children(master={"options": {"rpc_port": "40052"}}).configmap["data"][
        names.RUNTIME_SCOPED_SH_KEY
    ]
    # The sample's Dataset is "demo" in both: the second's names are made demo2's as its controller would.
    second = (
        second.replace("FLUID_DEMO_", "FLUID_DEMO2_")
        .replace("'demo-", "'demo2-")
        .replace("-demo-", "-demo2-")
    )
    env = sourced_env(first + second, tmp_path)
    source = mooncake_app.connection_from_env(env, "10.0.0.7", mooncake_app.scoped_prefix("demo"))
    target = mooncake_app.connection_from_env(env, "10.0.0.7", mooncake_app.scoped_prefix("demo2"))
    assert source.master_server_addr == "demo-master-0.svc-demo-master:40051"
    assert target.master_server_addr == "demo2-master-0.svc-demo2-master:40052"
    # The app's rule for the prefix is the product's, for names of every shape.
    for dataset in ("demo", "ds-1", "a.b", "x9"):
        assert mooncake_app.scoped_prefix(dataset) == names.scoped_variable_prefix(dataset)
    with pytest.raises(
        mooncake_app.ConfigError, match=r"runtime-scoped\.sh \(FLUID_NOPE_\*\) is not sourced"
    ):
        mooncake_app.connection_from_env(env, "x", mooncake_app.scoped_prefix("nope"))
