"""hack/prereqs.sh, the first thing `make demo`, `make up` and `.ci/run` run: a missing prerequisite is
one line at second 1. Debian's package database and apt are replaced by stubs on PATH (a test must not
install packages on the machine); everything else (bash, the real python, go) is the machine's own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "prereqs.sh"


def stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    # Outside pytest's 0700 tmp_path: the script runs as another user in one test and must see the stubs.
    top = Path(tempfile.mkdtemp(prefix="prereqs-"))
    top.chmod(0o755)
    d = top / "bin"
    d.mkdir(mode=0o755)
    # dpkg-query knows every package but libibverbs1 (the one `make demo` once died on at minute 17).
    stub(
        d,
        "dpkg-query",
        'for p in "$@"; do case "$p" in -*|*Package*) ;; libibverbs1) ;; *) echo "$p ii ";; esac; done',
    )
    stub(d, "apt-get", f'echo "apt-get $*" >> {top}/apt.log')
    # The script's `go env` with HOME here writes Go's telemetry under it, and a detached child it
    # starts may still be writing while the directory is removed (a CI run failed so: "Directory not
    # empty"). Telemetry off is Go's own switch, read from this file; with it, go writes nothing here.
    telemetry = top / ".config" / "go" / "telemetry"
    telemetry.mkdir(parents=True)
    (telemetry / "mode").write_text("off\n")
    try:
        yield d
    finally:
        left = sorted(str(f.relative_to(telemetry)) for f in telemetry.rglob("*"))
        shutil.rmtree(top)
    assert left == ["mode"], f"go wrote telemetry under the test's HOME: {left}"


def run(
    bin_dir: Path, *, as_nobody: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    full_env = {"PATH": path, "HOME": str(bin_dir.parent), **(env or {})}
    argv = ["bash", str(SCRIPT)]
    if as_nobody:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, check=False, timeout=60)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the script as another user and as root")
def test_a_missing_package_is_one_line_naming_it_and_the_command(bin_dir: Path) -> None:
    done = run(bin_dir, as_nobody=True)
    assert done.returncode == 1
    # Every problem is its own line (here the package, and root), all told at once.
    assert done.stderr.splitlines()[0] == (
        "error: missing Debian packages: libibverbs1; install them with: sudo apt-get install -y libibverbs1"
    )
    assert done.stderr.splitlines()[-1].startswith("error: root is needed")
    assert all(line.startswith("error: ") for line in done.stderr.splitlines())


@pytest.mark.skipif(os.geteuid() != 0, reason="installs (into a stub apt-get) only as root")
def test_as_root_it_installs_what_is_missing(bin_dir: Path) -> None:
    done = run(bin_dir)
    log = (bin_dir.parent / "apt.log").read_text().splitlines()
    assert log[-1] == "apt-get install -y -qq --no-install-recommends libibverbs1"
    assert "[prereqs] installing Debian packages: libibverbs1" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="root passes the root check; this test is about Go")
def test_without_go_and_without_a_cluster_it_says_so(bin_dir: Path) -> None:
    # Every package present, and a PATH of only the tools the script uses, so no go on it.
    stub(
        bin_dir, "dpkg-query", 'for p in "$@"; do case "$p" in -*|*Package*) ;; *) echo "$p ii ";; esac; done'
    )
    for tool in ("grep", "id", "sed", "sort", "head"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    env = {"PATH": str(bin_dir), "PYTHON": sys.executable, "HOME": str(bin_dir.parent)}
    bash = shutil.which("bash") or "/bin/bash"
    done = subprocess.run([bash, str(SCRIPT)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: go >= 1.26 not found: it builds the local control plane "
        "(or point KUBECONFIG at an existing cluster)"
    ]
    # With a cluster named, Go is not needed.
    done = subprocess.run(
        [bash, str(SCRIPT)], env={**env, "KUBECONFIG": "/x"}, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_makefile_runs_it_before_any_build() -> None:
    makefile = (REPO / "Makefile").read_text()
    for target in ("up", "demo", "test", "e2e", "bench"):
        line = next(line for line in makefile.splitlines() if line.startswith(f"{target}:"))
        assert line.split(":", 1)[1].split()[0] == "prereqs", line
    assert "bash hack/prereqs.sh" in (REPO / ".ci" / "run").read_text()
