"""The krew path as an operator (and krew-index's CI) takes it: krew's own validate-krew-manifest installs
the manifest's archive through ``kubectl krew install`` (the archive served on loopback in place of the
release download), then ``kubectl krew install --archive`` puts the plugin under a fresh KREW_ROOT and
kubectl runs it against the cluster, then ``kubectl krew uninstall`` removes it."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import krew
import pytest
from kubernetes import client

from tests.e2e.fluid import kubectl_binary
from tests.e2e.plugin_checks import check_installed_plugin
from tests.serving import serving
from tests.tools import BUILT_BY, krew_dir

pytestmark = pytest.mark.skipif(krew_dir() is None, reason=f"krew is {BUILT_BY}")


@contextlib.contextmanager
def served(archive: Path) -> Iterator[str]:
    """The archive's URL on a loopback HTTP server."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(archive.parent))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)) as port:
        yield f"http://127.0.0.1:{port}/{archive.name}"


def krew_env(root: Path) -> dict[str, str]:
    # krew's bin on PATH, as its setup asks (it warns otherwise), then krew itself and kubectl.
    tools = [
        str(root / "bin"),
        str(krew_dir()),
        str(Path(kubectl_binary()).parent),
        os.environ.get("PATH", ""),
    ]
    return {
        **os.environ,
        "PATH": os.pathsep.join(tools),
        "KREW_ROOT": str(root),
        "KREW_NO_UPGRADE_CHECK": "1",
    }


def krew_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [kubectl_binary(), "krew", *args],
        env=krew_env(root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, f"kubectl krew {' '.join(args)}: {run.stderr}"
    return run


def test_krew_validates_installs_runs_and_uninstalls_the_plugin(
    fluid: Path, k8s: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    archive = krew.build_archive(tmp_path / "dist")
    manifest = tmp_path / "index" / "fluid.yaml"  # krew reads the plugin's name from the file name
    manifest.parent.mkdir()
    with served(archive) as url:
        manifest.write_text(krew.manifest(krew.sha256(archive), url))
        validated = subprocess.run(
            [str(krew_dir() / "validate-krew-manifest"), "-manifest", str(manifest)],  # type: ignore[operator]
            env=krew_env(tmp_path / "unused"),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert validated.returncode == 0, validated.stderr
    assert "all 1 spec.platforms installed fine" in validated.stderr

    root = tmp_path / "krew-root"
    installed = krew_run(root, "install", f"--manifest={manifest}", f"--archive={archive}")
    assert "Installed plugin: fluid" in installed.stderr
    assert "kubectl fluid runs on python3 (3.11 or newer)" in installed.stderr  # the caveats are shown
    link = root / "bin" / "kubectl-fluid"
    assert link.is_symlink()
    assert link.resolve().parent == (root / "store" / "fluid" / f"v{krew.version()}").resolve()
    check_installed_plugin(root / "bin", fluid, k8s, namespace)
    assert (root / "receipts" / "fluid.yaml").is_file()

    # `list` and `uninstall` want krew-index cloned (`kubectl krew update`, from GitHub): an empty
    # local index stands in for it, as for any plugin installed from its own manifest.
    index = root / "index" / "default"
    (index / "plugins").mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(index)], check=True)
    # From a manifest of its own, not from an index: krew says so.
    assert krew_run(root, "list").stdout.split() == ["detached/fluid"]

    krew_run(root, "uninstall", "fluid")
    assert not link.exists()
    assert not (root / "store" / "fluid").exists()
    assert not (root / "receipts" / "fluid.yaml").exists()
