"""The oidc auth-provider's refresh, beyond the tokens (tests/unit/test_cli_auth.py has those): the
kubeconfig written back private from its first byte, with the file's own mode, through a symlink as
kubectl writes it, and nothing left behind when the write fails (interrupted, or a real full
filesystem); and the issuer reached as client-go reaches it: through the environment's proxy (an
https:// proxy's credentials only inside its TLS, watched by a relay that records every byte;
HTTP_PROXY for a plain-http issuer), NO_PROXY honoured, never through the cluster's proxy-url, and a
refused proxy login or an untrusted issuer each said in one line."""

from __future__ import annotations

import base64
import contextlib
import os
import ssl
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid.kube.errors import ClientError
from kubectl_fluid.kube.kubeconfig import load
from kubectl_fluid.kube.transport import Api
from tests.connectproxy import connect_proxy_running, relay_running
from tests.unit.fake_apiserver import Server, cert, pem
from tests.unit.oidc_issuer import DISCOVERY, MOVED, Issuer, issuer_running, jwt
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


# --- the issuer reached through the plugin's dialer -----------------------------------------------


@pytest.fixture
def issuer_tls(server: Server, tmp_path: Path) -> Callable[[str], ssl.SSLContext]:
    """Server TLS for a name, its certificate signed by the CA the kubeconfig gives the issuer (and,
    as in Go, the https:// proxy is trusted through the same roots)."""

    def make(name: str) -> ssl.SSLContext:
        issued, key = cert(name, server.ca_pair, name, False)
        chain = tmp_path / f"{name}.pem"
        chain.write_bytes(pem(issued) + pem(issued, key))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(chain)
        return ctx

    return make


IDP = "idp.test"
# Only the proxies here know where idp.test is: a request that goes around them cannot even resolve it.
RESOLVES = {IDP: "127.0.0.1"}


@pytest.fixture
def idp(issuer_tls: Callable[[str], ssl.SSLContext]) -> Iterator[Issuer]:
    """The issuer over HTTPS at idp.test."""
    with issuer_running(issuer_tls(IDP), host=IDP) as state:
        state.answer = {"id_token": FRESH}
        yield state


def basic(userinfo: str) -> str:
    return "Basic " + base64.b64encode(userinfo.encode()).decode()


def refresh_from_environment(path: Path, server: Server, monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    """One request with the kubeconfig at ``path`` and the process's environment set to ``env`` (the
    proxy variables, both spellings, cleared first): the Authorization the API server saw."""
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    server.replies["/x"] = (200, {}, {})
    with Api(load(str(path), None, env={}, home=path.parent)) as api:
        api.request("GET", "/x")
    auth: str = server.requests[-1]["auth"]
    return auth


def idp_kubeconfig(directory: Path, server: Server, issuer: Issuer) -> Path:
    path = stale_kubeconfig(directory, server, issuer)
    config = yaml.safe_load(path.read_text())
    provider = config["users"][0]["user"]["auth-provider"]["config"]
    provider["idp-certificate-authority-data"] = base64.b64encode(server.ca).decode()
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_https_proxys_credentials_reach_it_only_inside_tls(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    idp: Issuer,
    issuer_tls: Callable[[str], ssl.SSLContext],
) -> None:
    login = basic("proxy-user:pr0xy-s3cret")
    with (
        connect_proxy_running(issuer_tls("127.0.0.1"), require=login, hosts=RESOLVES) as proxy,
        relay_running(proxy.port) as relay,
    ):
        path = idp_kubeconfig(tmp_path / "kube", server, idp)
        proxy_url = f"https://proxy-user:pr0xy-s3cret@127.0.0.1:{relay.port}"
        try:
            auth = refresh_from_environment(path, server, monkeypatch, HTTPS_PROXY=proxy_url)
        except ClientError as e:  # said after what the relay saw, which matters more
            auth = f"failed: {e}"
    assert relay.seen, "nothing went through the relay"
    in_clear = [
        s for s in (b"pr0xy-s3cret", login.encode(), b"Proxy-Authorization", b"CONNECT") if s in relay.seen
    ]
    assert in_clear == []
    assert auth == f"Bearer {FRESH}"
    assert idp.tokens == [{"grant_type": "refresh_token", "refresh_token": "r1"}]
    # Discovery and the token endpoint, through tunnels the proxy opened for its login alone.
    assert set(proxy.tunnels) == {f"{IDP}:{idp.port}"}
    assert proxy.auth
    assert set(proxy.auth) == {login}


def test_no_proxy_sends_the_issuer_around_the_proxy(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idp: Issuer
) -> None:
    with connect_proxy_running(hosts=RESOLVES) as proxy:
        path = idp_kubeconfig(tmp_path / "kube", server, idp)
        with pytest.raises(
            ClientError, match=r"cannot discover the token endpoint of https://idp\.test:.* resolve"
        ):
            refresh_from_environment(path, server, monkeypatch, HTTPS_PROXY=proxy.url, NO_PROXY=".test")
    assert proxy.tunnels == []
    assert idp.tokens == []


def test_the_clusters_proxy_url_is_not_the_issuers(
    server: Server, tmp_path: Path, issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # client-go builds the refresh's transport from the issuer's CA alone, so the environment decides
    # its proxy; proxy-url is the cluster's.
    with connect_proxy_running() as proxy:
        path = stale_kubeconfig(tmp_path / "kube", server, issuer)
        config = yaml.safe_load(path.read_text())
        config["clusters"][0]["cluster"]["proxy-url"] = proxy.url
        path.write_text(yaml.safe_dump(config))
        assert refresh_from_environment(path, server, monkeypatch) == f"Bearer {FRESH}"
    assert proxy.tunnels == [server.url.removeprefix("https://")]
    assert len(issuer.tokens) == 1


def test_a_plain_http_issuer_goes_through_http_proxy_in_absolute_form_with_its_login(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    login = basic("me:pw")
    with (
        issuer_running(host=IDP) as issuer,
        connect_proxy_running(require=login, hosts=RESOLVES) as proxy,
    ):
        issuer.answer = {"id_token": FRESH}
        issuer.moved = True
        path = stale_kubeconfig(tmp_path / "kube", server, issuer)
        proxy_url = f"http://me:pw@127.0.0.1:{proxy.port}"
        # HTTPS_PROXY is for https:// URLs only: the issuer's scheme picks HTTP_PROXY.
        auth = refresh_from_environment(
            path, server, monkeypatch, HTTP_PROXY=proxy_url, HTTPS_PROXY="http://127.0.0.1:1"
        )
    assert auth == f"Bearer {FRESH}"
    assert proxy.tunnels == []
    # The discovery document's redirect followed (as urllib and Go's client follow it), then the grant.
    assert proxy.forwarded == [
        f"{issuer.url}/.well-known/openid-configuration",
        issuer.url.replace("/realm", MOVED),
        f"{issuer.url}/token",
    ]
    assert set(proxy.auth) == {login}
    assert issuer.discovery == [DISCOVERY, MOVED]


def test_a_proxy_refusing_the_login_and_an_untrusted_issuer_are_each_one_line(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idp: Issuer
) -> None:
    with connect_proxy_running(require=basic("me:pw"), hosts=RESOLVES) as proxy:
        path = idp_kubeconfig(tmp_path / "kube", server, idp)
        with pytest.raises(ClientError) as refused:
            refresh_from_environment(
                path, server, monkeypatch, HTTPS_PROXY=f"http://me:nope@127.0.0.1:{proxy.port}"
            )
        assert str(refused.value) == (
            f'the oidc auth-provider of user "u": cannot discover the token endpoint of {idp.url}: the '
            f"proxy refused the tunnel to {IDP}:{idp.port}: HTTP/1.1 407 Proxy Authentication Required"
        )
        # Without idp-certificate-authority(-data) the system's roots judge the issuer: not theirs.
        untrusted = stale_kubeconfig(tmp_path / "other", server, idp)
        with pytest.raises(
            ClientError, match=r"cannot discover the token endpoint of .*: TLS certificate not trusted"
        ):
            refresh_from_environment(
                untrusted, server, monkeypatch, HTTPS_PROXY=f"http://me:pw@127.0.0.1:{proxy.port}"
            )
    assert idp.tokens == []
