"""The wheel as a user installs it: ``python -m build`` makes a wheel and an sdist (the wheel built from
the sdist, as build does), a fresh venv gets the wheel alone, with its runtime dependencies and no
extras, and there kubectl runs ``kubectl fluid`` against the cluster and every console script the
wheel declares answers ``--help``."""

from __future__ import annotations

import configparser
import json
import shutil
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
    stubs = {
        f"csi/proto/{proto}{suffix}.py"
        for proto in ("csi", "pluginregistration")
        for suffix in ("_pb2", "_pb2_grpc")
    }
    assert stubs <= set(members)
    assert f"kubectl_fluid-{__version__}.dist-info/licenses/LICENSE" in members
    assert not [m for m in members if m.startswith("tests/")]
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {*stubs, "csi/proto/pluginregistration.proto", "LICENSE", "pyproject.toml"} <= names


def test_a_fresh_checkout_installs_editable_and_refuses_a_wheel_without_the_stubs(tmp_path: Path) -> None:
    # `make venv` on a fresh clone installs the checkout editable first and generates the gRPC stubs
    # after it (the generator comes with the install): the editable install must not need them.
    checkout = tmp_path / "checkout"
    tracked = run("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=REPO)
    for name in filter(None, tracked.split("\0")):
        if (REPO / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    assert not list((checkout / "csi/proto").glob("*_pb2*"))
    root = tmp_path / "venv"
    run(sys.executable, "-m", "venv", root)
    pip = (str(root / "bin" / "pip"), "--disable-pip-version-check", "--quiet")
    run(*pip, "install", "--no-deps", "-e", checkout)
    # A wheel is what users run: without the stubs its fluid-csi could not start, so it is refused.
    refused = subprocess.run(
        [*pip, "wheel", "--no-deps", "--wheel-dir", tmp_path / "wheels", checkout],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert refused.returncode != 0
    assert "make csi-stubs" in refused.stdout + refused.stderr


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
