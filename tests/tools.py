"""The packaging tools the tests run (Helm, krew and krew's manifest validator), as hack/build-bins.sh
builds them from Go modules into the version-keyed cache; and the kubectl the tests drive them with."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid"))
CHART = REPO / "charts" / "kubectl-fluid"
BUILT_BY = "built by hack/build-bins.sh (make bins)"


def pinned(key: str) -> str:
    """A version pinned in hack/versions.env."""
    for line in (REPO / "hack" / "versions.env").read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip()
    raise KeyError(key)


def cached(component: str, key: str, binary: str) -> Path | None:
    """``$CACHE/{component}-{version}/{binary}`` when it was built, else None."""
    built = CACHE / f"{component}-{pinned(key)}" / binary
    return built if os.access(built, os.X_OK) else None


def helm_binary() -> Path | None:
    return cached("helm", "HELM_VERSION", "helm")


def krew_dir() -> Path | None:
    """The folder holding kubectl-krew and validate-krew-manifest."""
    found = cached("krew", "KREW_VERSION", "validate-krew-manifest")
    return found.parent if found and cached("krew", "KREW_VERSION", "kubectl-krew") else None


def helm(
    *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``helm ARGS`` with its own config, cache and data folders (never the user's repositories)."""
    binary = helm_binary()
    assert binary is not None, f"helm is {BUILT_BY}"
    home = CACHE / "scratch" / "helm-home"
    run_env = {
        **os.environ,
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_DATA_HOME": str(home / "data"),
        **(env or {}),
    }
    run = subprocess.run(
        [str(binary), *args], capture_output=True, text=True, env=run_env, timeout=300, check=False
    )
    if check and run.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({run.returncode}): {run.stderr.strip()}")
    return run
