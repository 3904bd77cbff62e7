"""The oidc auth-provider's refresh, beyond the tokens (tests/unit/test_cli_auth.py has those): the
kubeconfig written back private from its first byte, with the file's own mode, through a symlink as
kubectl writes it, and nothing left behind when the write fails (interrupted, or a real full
filesystem)."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid.kube.errors import ClientError
from tests.unit.fake_apiserver import Server
from tests.unit.oidc_issuer import Issuer, issuer_running, jwt
from tests.unit.test_cli_auth import get, kubeconfig, oidc_user

FRESH = jwt(time.time() + 3600, "fresh")


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with issuer_running() as state:
        state.answer = {"id_token": FRESH, "refresh_token": "r2"}
        yield state


def stale_kubeconfig(directory: Path, server: Server, issuer: Issuer, mode: int = 0o600) -> Path:
    """A kubeconfig in a directory of its own whose id-token has expired."""
    directory.mkdir(exist_ok=True)
    path = kubeconfig(
        directory, server, oidc_user(issuer, **{"id-token": jwt(time.time() - 5), "refresh-token": "r1"})
    )
    path.chmod(mode)
    return path


def written(path: Path) -> dict[str, str]:
    config: dict[str, str] = yaml.safe_load(path.read_text())["users"][0]["user"]["auth-provider"]["config"]
    return config


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


Observation = tuple[str, str, int, int]  # (the call, a file's name, its mode, its size)


def watch_directory(
    monkeypatch: pytest.MonkeyPatch,
    directory: Path,
    keep: str,
    then: Callable[[list[Observation]], None] = lambda seen: None,
) -> list[Observation]:
    """Before each chmod, fchmod, rename or replace anywhere in the process, the mode and size of
    every file in ``directory`` other than ``keep``: a temporary file is seen as it is when created
    (before any chmod can narrow it) and as it is when renamed. ``then`` runs after each look."""
    seen: list[Observation] = []

    def spied(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            for entry in os.scandir(directory):
                if entry.name != keep:
                    st = entry.stat(follow_symlinks=False)
                    seen.append((name, entry.name, stat.S_IMODE(st.st_mode), st.st_size))
            then(seen)
            return real(*args, **kwargs)

        return call

    for name in ("chmod", "fchmod", "rename", "replace"):
        monkeypatch.setattr(os, name, spied(name, getattr(os, name)))
    return seen


# --- the kubeconfig written back ------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o600, 0o640], ids=["0600", "0640"])
def test_the_rewrite_is_private_from_its_first_byte_and_keeps_the_files_mode(
    server: Server, tmp_path: Path, issuer: Issuer, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    path = stale_kubeconfig(tmp_path / "kube", server, issuer, mode)
    seen = watch_directory(monkeypatch, path.parent, path.name)
    with umask(0):  # what the process's umask would let a new file be: everything
        assert get(path, server)["auth"] == f"Bearer {FRESH}"
    monkeypatch.undo()
    assert written(path)["id-token"] == FRESH
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert seen, "the temporary file was never seen"
    # Created 0600, and never more open than the file it replaces.
    assert seen[0][2] == 0o600, seen
    assert all(m & ~mode == 0 for _, _, m, _ in seen), seen


def test_an_interrupted_rewrite_leaves_nothing_behind_and_the_file_whole(
    server: Server, tmp_path: Path, issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = stale_kubeconfig(tmp_path / "kube", server, issuer)
    before = path.read_bytes()

    def interrupt(seen: list[Observation]) -> None:
        if seen:  # the temporary file exists: ^C now
            raise KeyboardInterrupt

    watch_directory(monkeypatch, path.parent, path.name, then=interrupt)
    with pytest.raises(KeyboardInterrupt):
        get(path, server)
    monkeypatch.undo()
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert path.read_bytes() == before


@pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a tmpfs needs root (CI and the dev machine run as root)"
)
def test_a_full_filesystem_fails_in_one_line_and_leaves_the_file_whole(
    server: Server, tmp_path: Path, issuer: Issuer
) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], check=True)
    try:
        path = stale_kubeconfig(small, server, issuer)
        before = path.read_bytes()
        with open(small / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
            while True:  # until ENOSPC
                filler.write(b"\0" * 4096)
        with pytest.raises(ClientError) as failed:
            get(path, server)
        assert str(failed.value) == f"cannot write refreshed tokens to {path}: No space left on device"
        assert sorted(p.name for p in small.iterdir()) == ["filler", path.name]
        assert path.read_bytes() == before
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_a_symlinked_kubeconfig_keeps_its_link_and_its_target_is_rewritten(
    server: Server, tmp_path: Path, issuer: Issuer
) -> None:
    target = stale_kubeconfig(tmp_path / "real", server, issuer, 0o640)
    (tmp_path / "home").mkdir()
    link = tmp_path / "home" / "config"
    link.symlink_to(target)
    assert get(link, server)["auth"] == f"Bearer {FRESH}"
    assert link.is_symlink()
    assert link.readlink() == target
    assert written(target)["id-token"] == FRESH
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in link.parent.iterdir()] == [link.name]
    assert [p.name for p in target.parent.iterdir()] == [target.name]
