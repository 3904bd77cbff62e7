"""The mooncake sample class and the demo app against runtime.sh, without Mooncake: the master and
worker pods the controller would create from manifests/samples run through hack/podrunner.py with
stand-in ``mooncake_master``/``mooncake_client`` that print their flags, and the demo app's
connection is built from a rendered runtime.sh sourced by a real shell."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import podrunner
import pytest
import yaml

from controller.desired import desired_children
from demo import mooncake_app
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset

SAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "samples"
Json = dict[str, Any]

needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="mount namespaces and overlayfs need root and util-linux (CI and the dev machine have both)",
)


def sample(path: str, kind: str) -> Json:
    docs: list[Json] = [
        d for d in yaml.safe_load_all((SAMPLES / path).read_text()) if d and d["kind"] == kind
    ]
    (doc,) = docs
    return doc


def children(**runtime_spec: Any) -> Any:
    runtime = copy.deepcopy(sample("dataset-mooncake.yaml", "CacheRuntime"))
    runtime["metadata"]["uid"] = "uid-1"  # as stored: owner references need it
    for component, spec in runtime_spec.items():
        runtime["spec"].setdefault(component, {}).update(spec)
    return desired_children(
        Dataset.model_validate(sample("dataset-mooncake.yaml", "Dataset")),
        CacheRuntime.model_validate(runtime),
        CacheRuntimeClass.model_validate(sample("cacheruntimeclass-mooncake.yaml", "CacheRuntimeClass")),
        "default",
    )


def statefulset_pod(kids: Any, component: str) -> Json:
    """Pod 0 of a component's StatefulSet, as the StatefulSet controller would store it."""
    sts = next(s for s in kids.statefulsets if s["metadata"]["name"] == f"demo-{component}")
    template = copy.deepcopy(sts["spec"]["template"])
    name = f"{sts['metadata']['name']}-0"
    spec = {**template["spec"], "hostname": name, "subdomain": sts["spec"]["serviceName"]}
    return {"metadata": {**template["metadata"], "name": name, "namespace": "default"}, "spec": spec}


class Source:
    namespace = "default"

    def __init__(self, configmap: Json) -> None:
        self.configmap = configmap

    def pod(self, name: str) -> Json:
        raise KeyError(name)

    def config_map(self, name: str) -> Json | None:
        return self.configmap if name == self.configmap["metadata"]["name"] else None

    def secret(self, name: str) -> Json | None:
        return None


@pytest.fixture
def fake_bin(tmp_path: Path) -> str:
    """mooncake_master and mooncake_client that print their arguments, one per line."""
    for tool in ("mooncake_master", "mooncake_client"):
        path = tmp_path / tool
        path.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
        path.chmod(0o755)
    return f"{tmp_path}{os.pathsep}{os.environ['PATH']}"


def flags(component: str, path: str, **runtime_spec: Any) -> list[str]:
    kids = children(**runtime_spec)
    pod = statefulset_pod(kids, component)
    proc = podrunner.start_pod_object(pod, Source(kids.configmap), env={"PATH": path}, echo=False)
    assert proc.wait(30) == 0, proc.stderr
    return proc.stdout.splitlines()


@needs_namespaces
def test_master_flags_come_from_its_options(fake_bin: str) -> None:
    assert flags("master", fake_bin) == [
        "--rpc_address=0.0.0.0",
        "--rpc_port=50051",
        "--metrics_host=0.0.0.0",
        "--metrics_port=9003",
        "--logtostderr",
        "--minloglevel=1",
    ]
    local = {
        "rpc_address": "127.0.0.1",
        "rpc_port": "40051",
        "metrics_host": "127.0.0.1",
        "metrics_port": "40003",
    }
    assert flags("master", fake_bin, master={"options": local})[:4] == [
        "--rpc_address=127.0.0.1",
        "--rpc_port=40051",
        "--metrics_host=127.0.0.1",
        "--metrics_port=40003",
    ]


@needs_namespaces
def test_worker_flags_follow_the_master_its_options_and_its_quota(fake_bin: str) -> None:
    assert flags("worker", fake_bin) == [
        "--host=127.0.0.1",  # hostname -i: the pod's address, loopback under the runner
        "--port=50052",
        "--master_server_address=demo-master-0.svc-demo-master:50051",
        "--metadata_server=P2PHANDSHAKE",
        "--protocol=tcp",
        "--global_segment_size=1GB",  # quota 1Gi
        "--local_buffer_size=16MB",
    ]
    moved = flags(
        "worker",
        fake_bin,
        master={"options": {"rpc_port": "40051"}},
        worker={
            "options": {"port": "40052"},
            "tieredStore": {"levels": [{"processMemory": {"quota": "64Mi"}}]},
        },
    )
    assert moved[1:3] == ["--port=40052", "--master_server_address=demo-master-0.svc-demo-master:40051"]
    assert moved[5] == "--global_segment_size=64MB"


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
