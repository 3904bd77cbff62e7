"""The Go oracle (hack/go-oracle): apimachinery's resource.Quantity, and encoding/json over upstream's
runtime.json types, asked line by line. Built on first use into the cache outside the repository
(``$KUBECTL_FLUID_CACHE``, default ~/.cache/kubectl-fluid), keyed by its apimachinery version and a
hash of its sources, so a change to either builds it again and nothing built lands in the tree.

Without Go the tests that need it skip, and under CI (where Go is installed) a skip is a failure
(tests/conftest.py). With Go, a failed build fails the test with the compiler's output.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parents[2] / "hack" / "go-oracle"
ERROR = "!error"


def _cache_root() -> Path:
    return Path(os.environ.get("KUBECTL_FLUID_CACHE", "~/.cache/kubectl-fluid")).expanduser()


def _build_key() -> str:
    files = sorted(p for p in SOURCES.iterdir() if p.is_file())
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    version = re.search(r"k8s\.io/apimachinery (v\S+)", (SOURCES / "go.mod").read_text())
    assert version, "hack/go-oracle/go.mod must require k8s.io/apimachinery"
    return f"go-oracle-{version[1]}-{digest.hexdigest()[:12]}"


@cache
def _binary() -> Path | str:
    """The oracle's path, or why it cannot be had (a reason to skip)."""
    target = _cache_root() / _build_key() / "go-oracle"
    if target.is_file():
        return target
    go = shutil.which("go")
    if go is None:
        return "go not found: the Go oracle (hack/go-oracle) needs Go >= 1.26 (hack/prereqs.sh checks it)"
    _cache_root().mkdir(parents=True, exist_ok=True)
    # Built in a scratch folder and renamed into place, so an interrupted build is never trusted.
    scratch = Path(tempfile.mkdtemp(prefix="go-oracle-build-", dir=_cache_root()))
    try:
        for path in SOURCES.iterdir():
            shutil.copy2(path, scratch / path.name)
        out = scratch / "out"
        out.mkdir()
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
        build = subprocess.run(
            [go, "build", "-trimpath", "-o", str(out / "go-oracle"), "."],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        if build.returncode != 0:
            pytest.fail(f"building hack/go-oracle failed:\n{build.stdout}{build.stderr}")
        try:
            out.rename(target.parent)
        except OSError:
            if not target.is_file():  # another run won the race, or something real went wrong
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


class GoOracle:
    def __init__(self, binary: Path) -> None:
        self._proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def ask(self, *fields: str) -> str:
        line = "\t".join(fields)
        assert not {"\n", "\r"} & set(line), "one request per line"
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._proc.stdin.write(line.encode() + b"\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        assert answer.endswith(b"\n"), (
            f"go-oracle stopped: {self._proc.stderr.read() if self._proc.stderr else ''!r}"
        )
        return answer[:-1].decode()

    def quantity(self, text: str) -> str:
        """``ParseQuantity(text).String()``, or ERROR."""
        return self._error_or(self.ask("quantity", text))

    def add(self, a: str, b: str) -> str:
        return self._error_or(self.ask("add", a, b))

    def runtime_json(self, doc: str) -> str:
        """``doc`` decoded into upstream's runtime.json types and encoded again by Go."""
        return self.ask("runtimejson", doc)

    @staticmethod
    def _error_or(answer: str) -> str:
        return ERROR if answer.startswith(ERROR) else answer

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)


@cache
def _oracle(binary: Path) -> GoOracle:
    oracle = GoOracle(binary)
    atexit.register(oracle.close)
    return oracle


def go_oracle() -> GoOracle:
    """The running oracle, shared by every test of the session; skips with the reason without Go."""
    binary = _binary()
    if isinstance(binary, str):
        pytest.skip(binary)
    return _oracle(binary)
