"""The real curvine-fuse (hack/localcluster/peers/curvinebins.py unpacks it from ../shared/peers/curvine into
the cache), for the unit tests that check the driver's command lines against the binary itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from localcluster.peers import curvinebins

_DIR = curvinebins.find()
FUSE_BINARY: Path | None = _DIR / curvinebins.FUSE if _DIR else None

requires_real_fuse = pytest.mark.skipif(
    FUSE_BINARY is None,
    reason=f"the real curvine-fuse is unpacked from {curvinebins.peer_dir()} (CURVINE_PEER_DIR): not there",
)


def fuse_binary() -> Path:
    assert FUSE_BINARY is not None
    return FUSE_BINARY


def list_config_flags() -> list[dict[str, Any]]:
    """``curvine-fuse list-config-flags``: the mount flags the binary itself declares."""
    out = subprocess.run(
        [str(fuse_binary()), "list-config-flags"], capture_output=True, text=True, check=True, timeout=30
    )
    flags: list[dict[str, Any]] = json.loads(out.stdout)["flags"]
    return flags


def validate_config(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``curvine-fuse validate-config ARGS``: loads the configuration and the flags, mounts nothing."""
    return subprocess.run(
        [str(fuse_binary()), "validate-config", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
