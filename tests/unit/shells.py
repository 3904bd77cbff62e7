"""Source runtime.sh in real shells and read back what they export."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# Debian packages providing each shell; .ci/run installs them.
SHELLS: dict[str, tuple[list[str], str]] = {
    "dash": (["dash"], "dash"),
    "bash": (["bash"], "bash"),
    "busybox": (["busybox", "sh"], "busybox"),
}
# Variables the shells themselves add to the environment.
SHELL_OWN = frozenset({"PATH", "PWD", "OLDPWD", "SHLVL", "_"})


def shell_argv(shell: str) -> list[str]:
    argv, package = SHELLS[shell]
    if shutil.which(argv[0]) is None:
        # A missing peer must fail, not skip: a skipped test would let CI pass without the check.
        pytest.fail(f"{argv[0]} not found: install the Debian package {package!r} (.ci/run does)")
    return argv


def source_and_dump(shell: str, script: str, workdir: Path, *, set_u: bool = True) -> dict[str, str]:
    """Exported environment after sourcing ``script`` (as runtime.sh in ``workdir``), minus the
    shell's own variables. Fails on any output besides the dump, so a value that ran a command or
    upset the parser shows up here."""
    (workdir / "runtime.sh").write_text(script, encoding="utf-8")
    prologue = "set -eu; " if set_u else ""
    proc = subprocess.run(
        [*shell_argv(shell), "-c", f"{prologue}. ./runtime.sh && exec env -0"],
        cwd=workdir,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert proc.returncode == 0, f"{shell} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}"
    assert proc.stderr == b"", f"{shell} wrote to stderr: {proc.stderr.decode(errors='replace')}"
    dump = {}
    for entry in proc.stdout.split(b"\0")[:-1]:
        name, _, value = entry.decode("utf-8").partition("=")
        if name not in SHELL_OWN:
            dump[name] = value
    return dump
