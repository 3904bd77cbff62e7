"""The wheel as a user installs it: ``python -m build`` makes a wheel and an sdist (the wheel built from
the sdist, as build does), a fresh venv gets the wheel alone, with its runtime dependencies and no
extras, and there kubectl runs ``kubectl fluid`` against the cluster and every console script the
wheel declares answers ``--help``."""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from kubernetes import client

from kubectl_fluid import __version__
from tests.e2e.fluid import REPO
from tests.e2e.plugin_checks import check_installed_plugin

DEV_ONLY = ("pytest", "hypothesis", "kubernetes", "ruff", "mypy", "grpcio-tools", "build")


def run(*argv: str | Path, cwd: Path | None = None, timeout: float = 600) -> str:
    done = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(map(str, argv))}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--outdir", out, REPO)
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (no system site-packages) with the wheel alone installed; its bin folder."""
    root = tmp_path_factory.mktemp("fresh") / "venv"
    run(sys.executable, "-m", "venv", root)
    (wheel,) = dist.glob("*.whl")
    run(root / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", wheel)
    return root / "bin"


def test_build_makes_one_wheel_and_one_sdist_of_this_version(dist: Path) -> None:
    assert sorted(p.name for p in dist.iterdir()) == [
        f"kubectl_fluid-{__version__}-py3-none-any.whl",
        f"kubectl_fluid-{__version__}.tar.gz",
    ]
    (wheel,) = dist.glob("*.whl")
    members = zipfile.ZipFile(wheel).namelist()
    # The CSI driver's gRPC stubs are generated (never committed): the sdist must carry them, or a
    # wheel built from it has a driver that cannot start.
    assert "csi/proto/csi_pb2.py" in members
    assert "csi/proto/csi_pb2_grpc.py" in members
    assert f"kubectl_fluid-{__version__}.dist-info/licenses/LICENSE" in members
    assert not [m for m in members if m.startswith("tests/")]
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"csi/proto/csi_pb2.py", "LICENSE", "pyproject.toml"} <= names


def test_the_fresh_venv_has_no_dev_extras(venv: Path) -> None:
    listed = json.loads(run(venv / "pip", "list", "--format=json", "--disable-pip-version-check"))
    installed = {str(p["name"]).lower() for p in listed}
    assert "kubectl-fluid" in installed
    assert not installed & set(DEV_ONLY)


def console_scripts(dist: Path) -> list[str]:
    (wheel,) = dist.glob("*.whl")
    parser = configparser.ConfigParser()
    parser.read_string(
        zipfile.ZipFile(wheel).read(f"kubectl_fluid-{__version__}.dist-info/entry_points.txt").decode()
    )
    return sorted(parser["console_scripts"])


def test_every_console_script_answers_help(dist: Path, venv: Path, tmp_path: Path) -> None:
    scripts = console_scripts(dist)
    assert {
        "kubectl-fluid",
        "kubectl_complete-fluid",
        "fluid-controller",
        "fluid-webhook",
        "fluid-csi",
    } <= set(scripts)
    for script in scripts:
        out = run(venv / script, "--help", cwd=tmp_path)
        if script == "kubectl_complete-fluid":
            # kubectl's completion protocol: the last word is the one being completed.
            assert out.splitlines()[-1].startswith(":"), out
            assert out.startswith("--help\t")
        else:
            assert "usage" in out.lower(), (script, out)


def test_kubectl_runs_the_installed_plugin_against_the_cluster(
    venv: Path, fluid: Path, k8s: client.ApiClient, namespace: str
) -> None:
    check_installed_plugin(venv, fluid, k8s, namespace)
