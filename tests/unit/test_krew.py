"""The krew release (hack/krew.py, plugins/fluid.yaml): the archive is reproducible, holds what the
manifest says it holds, runs with no library installed, and the committed manifest is the generator's
and passes krew's own validator. Installing it with krew is tests/e2e/test_krew.py."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import krew
import pytest
import yaml

from kubectl_fluid import __version__
from tests.tools import BUILT_BY, krew_dir

COMMITTED = yaml.safe_load(krew.MANIFEST.read_text())


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return krew.build_archive(tmp_path_factory.mktemp("krew"))


def members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_the_archive_is_reproducible(archive: Path, tmp_path: Path) -> None:
    again = krew.build_archive(tmp_path)
    assert again.read_bytes() == archive.read_bytes()
    assert archive.name == f"kubectl-fluid_v{__version__}.tar.gz"


def test_the_archive_holds_what_the_manifest_names(archive: Path) -> None:
    found = members(archive)
    (platform,) = COMMITTED["spec"]["platforms"]
    assert platform["files"] == [{"from": "*", "to": "."}]
    assert found[platform["bin"]].mode == 0o755
    assert found["kubectl_complete-fluid"].mode == 0o755
    assert "LICENSE" in found
    for dist in krew.VENDORED:
        assert [n for n in found if n.startswith(f"licenses/{dist}-")], dist
    assert {m.uid for m in found.values()} == {0}
    assert {m.mtime for m in found.values()} == {krew.MTIME}
    assert not [n for n in found if "__pycache__" in n or n.endswith(".pyc")]


def test_the_archive_carries_the_plugin_and_no_server_code(archive: Path) -> None:
    modules = {n for n in members(archive) if n.startswith("lib/kubectl_fluid/") and n.endswith(".py")}
    assert "lib/kubectl_fluid/cli/main.py" in modules
    # The executable's first module and the help it prints without click.
    assert {"lib/kubectl_fluid/cli/entry.py", "lib/kubectl_fluid/cli/roothelp.py"} <= modules
    assert "lib/kubectl_fluid/cli/version.py" in modules
    tops = {n.split("/")[1] for n in members(archive) if n.startswith("lib/") and n.count("/") > 1}
    assert tops == {"kubectl_fluid", "click", "yaml", "tabulate"}
    # kr8s glue, pydantic models, runtime config: server code the plugin must never load.
    assert not [
        m for m in modules if m.startswith(("lib/kubectl_fluid/runtimeconfig", "lib/kubectl_fluid/kube/c"))
    ]


def test_a_new_third_party_import_in_the_plugin_fails_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    real = krew._imports

    def with_kr8s(tree: object) -> object:
        yield from real(tree)  # type: ignore[arg-type]
        yield "kr8s"

    monkeypatch.setattr(krew, "_imports", with_kr8s)
    with pytest.raises(SystemExit, match="the plugin imports kr8s, which the krew archive does not carry"):
        krew.plugin_modules()


def test_the_extracted_archive_runs_without_site_packages(archive: Path, tmp_path: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    for args, first in ((["--help"], "Usage: kubectl fluid"), (["version", "--client"], "Client Version: ")):
        # -S: no site-packages at all, so click, PyYAML and tabulate can come from lib/ only.
        run = subprocess.run(
            [sys.executable, "-S", str(tmp_path / "kubectl-fluid"), *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith(first)
    complete = subprocess.run(
        [sys.executable, "-S", str(tmp_path / "kubectl_complete-fluid"), "con"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert complete.stdout.splitlines()[0].startswith("config\t")


def test_the_committed_manifest_is_the_generators_but_for_the_digest(archive: Path) -> None:
    (platform,) = COMMITTED["spec"]["platforms"]
    committed = krew.MANIFEST.read_text()
    assert committed == krew.manifest(platform["sha256"])
    assert COMMITTED["metadata"]["name"] == "fluid"
    assert COMMITTED["spec"]["version"] == f"v{__version__}"
    assert platform["uri"].endswith(f"/v{__version__}/{archive.name}")
    # The digest is the release's: it changes with every change to the plugin, and is rewritten at
    # release time (python hack/krew.py manifest --write); it must at least be a sha256.
    assert len(platform["sha256"]) == 64
    assert int(platform["sha256"], 16) >= 0


def test_the_manifest_downloads_from_the_one_repository_setting() -> None:
    # pyproject.toml's [project.urls] Repository is the release's home; nothing else spells it.
    with (krew.REPO / "pyproject.toml").open("rb") as f:
        repository = tomllib.load(f)["project"]["urls"]["Repository"]
    assert krew.repository() == repository
    assert re.fullmatch(r"https://github\.com/[A-Za-z0-9-]+/[A-Za-z0-9._-]+", repository), repository
    (platform,) = COMMITTED["spec"]["platforms"]
    assert platform["uri"] == (
        f"{repository}/releases/download/v{__version__}/kubectl-fluid_v{__version__}.tar.gz"
    )
    # A placeholder left in (OWNER, <owner>, example.com) would publish a manifest krew cannot fetch.
    assert not re.search(r"OWNER|<[a-z-]+>|example\.(com|org)", krew.MANIFEST.read_text(), re.IGNORECASE)


@pytest.mark.skipif(krew_dir() is None, reason=f"validate-krew-manifest is {BUILT_BY}")
def test_krews_validator_accepts_the_committed_manifest() -> None:
    validator = krew_dir() / "validate-krew-manifest"  # type: ignore[operator]
    run = subprocess.run(
        [str(validator), "-manifest", str(krew.MANIFEST), "-skip-install"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "structural validation OK" in run.stderr
    assert "no overlapping spec.platform[].selector" in run.stderr


def test_the_launcher_refuses_an_old_python_in_one_line(tmp_path: Path) -> None:
    # This Python stands in for an old one: the launcher is made to want a newer one.
    source = krew.LAUNCHER.format(doc="d", module="kubectl_fluid.cli.entry")
    assert "sys.version_info < (3, 11)" in source
    launcher = tmp_path / "kubectl-fluid"
    launcher.write_text(source.replace("(3, 11)", "(99, 0)"))
    run = subprocess.run(
        [sys.executable, str(launcher), "--help"], capture_output=True, text=True, check=False
    )
    assert run.returncode == 1
    assert run.stderr == (
        f"error: kubectl fluid needs Python 3.11 or newer; python3 here is {sys.version.split()[0]}\n"
    )
