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
