"""The mooncake sample class's container scripts, without Mooncake: the master and worker pods the
controller would create from manifests/samples run their ``sh -c`` script as a local process, with the
env and the runtime-config files the pod would get, and stand-in ``mooncake_master``/``mooncake_client``
that print their flags."""

from __future__ import annotations

import copy
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.unit.mooncake_samples import Json, children

# What a stand-in ``hostname -i`` answers: the pod's address.
POD_IP = "10.244.0.7"


def statefulset_pod(kids: Any, component: str) -> Json:
    """Pod 0 of a component's StatefulSet, as the StatefulSet controller would store it."""
    sts = next(s for s in kids.statefulsets if s["metadata"]["name"] == f"demo-{component}")
    template = copy.deepcopy(sts["spec"]["template"])
    name = f"{sts['metadata']['name']}-0"
    spec = {**template["spec"], "hostname": name, "subdomain": sts["spec"]["serviceName"]}
    return {"metadata": {**template["metadata"], "name": name, "namespace": "default"}, "spec": spec}


def run_container(
    pod: Json, configmap: Json, config_dir: Path, path: str
) -> subprocess.CompletedProcess[str]:
    """The pod's one container as a local process with what the pod would get: its env, and the files
    of its runtime-config ConfigMap volume in ``config_dir``, which stands in for the volume's mount
    path (in the env too). The env holds plain values, and the command names none of them as kubelet's
    ``$(NAME)``: so kubelet would run this very command with this very env."""
    spec = pod["spec"]
    (container,) = spec["containers"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if "configMap" in volumes[m["name"]]]
    assert volumes[mount["name"]]["configMap"]["name"] == configmap["metadata"]["name"]
    for key, text in configmap["data"].items():
        (config_dir / key).write_text(text)
    env = {}
    for var in container["env"]:
        assert set(var) == {"name", "value"}, var  # nothing to resolve from the API
        value = var["value"]
        if value == mount["mountPath"] or value.startswith(mount["mountPath"] + "/"):
            value = str(config_dir) + value[len(mount["mountPath"]) :]
        env[var["name"]] = value
    argv = [*container["command"], *container.get("args", [])]
    assert not [n for n in env for a in argv if f"$({n})" in a], argv
    return subprocess.run(
        argv, env={"PATH": path, **env}, capture_output=True, text=True, timeout=30, check=False
    )


@pytest.fixture
def fake_bin(tmp_path: Path) -> str:
    """mooncake_master and mooncake_client that print their arguments, one per line, and a hostname
    whose ``-i`` is the pod's address."""
    for tool in ("mooncake_master", "mooncake_client"):
        path = tmp_path / tool
        path.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
        path.chmod(0o755)
    hostname = tmp_path / "hostname"
    hostname.write_text(f'#!/bin/sh\n[ "$1" = -i ] && echo {POD_IP}\n')
    hostname.chmod(0o755)
    return f"{tmp_path}{os.pathsep}{os.environ['PATH']}"


def flags(component: str, path: str, tmp_path: Path, **runtime_spec: Any) -> list[str]:
    kids = children(**runtime_spec)
    pod = statefulset_pod(kids, component)
    config_dir = Path(tempfile.mkdtemp(prefix="config-", dir=tmp_path))
    proc = run_container(pod, kids.configmap, config_dir, path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_master_flags_come_from_its_options(fake_bin: str, tmp_path: Path) -> None:
    assert flags("master", fake_bin, tmp_path) == [
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
    assert flags("master", fake_bin, tmp_path, master={"options": local})[:4] == [
        "--rpc_address=127.0.0.1",
        "--rpc_port=40051",
        "--metrics_host=127.0.0.1",
        "--metrics_port=40003",
    ]


def test_worker_flags_follow_the_master_its_options_and_its_quota(fake_bin: str, tmp_path: Path) -> None:
    assert flags("worker", fake_bin, tmp_path) == [
        f"--host={POD_IP}",  # hostname -i: the pod's address
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
        tmp_path,
        master={"options": {"rpc_port": "40051"}},
        worker={
            "options": {"port": "40052"},
            "tieredStore": {"levels": [{"processMemory": {"quota": "64Mi"}}]},
        },
    )
    assert moved[1:3] == ["--port=40052", "--master_server_address=demo-master-0.svc-demo-master:40051"]
    assert moved[5] == "--global_segment_size=64MB"
