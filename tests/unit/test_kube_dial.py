"""The plugin's client through each kind of proxy Go's transport dials, against a real local HTTPS
server: SOCKS5 (the host name resolved by the proxy, a login), HTTPS (TLS to the proxy, the API
server's TLS inside it, trusted as Go trusts it: through the cluster's CA), and the failures each
can have, as one line that says where it broke."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl_fluid.kube.errors import Unreachable
from kubectl_fluid.kube.kubeconfig import Access, Credentials
from kubectl_fluid.kube.transport import Api
from tests.connectproxy import ConnectProxy, connect_proxy_running
from tests.socksproxy import socks_proxy_running
from tests.unit.fake_apiserver import Server, cert, pem


def via(server: Server, proxy_url: str, host: str = "127.0.0.1") -> Access:
    port = server.url.rsplit(":", 1)[1]
    return Access(
        server=f"https://{host}:{port}",
        namespace="d",
        context="t",
        ca_data=server.ca,
        # The certificate names 127.0.0.1: a server reached by name checks against that.
        tls_server_name="127.0.0.1",
        proxy_url=proxy_url,
        credentials=Credentials(token="t0k"),
    )


def test_socks5_with_a_login_and_the_name_resolved_by_the_proxy(server: Server) -> None:
    server.replies["/x"] = (200, {"via": "socks"}, {})
    with socks_proxy_running(login=("me", "pw")) as proxy:
        with Api(via(server, proxy.url, host="localhost"), env={}) as api:
            assert api.request("GET", "/x") == {"via": "socks"}
            assert api.request("GET", "/x") == {"via": "socks"}
        port = server.url.rsplit(":", 1)[1]
        assert proxy.destinations == [f"localhost:{port}"]  # one kept-alive tunnel, by name
        assert proxy.logins == [("me", "pw")]
    assert [r["auth"] for r in server.requests] == ["Bearer t0k", "Bearer t0k"]


def test_socks5_failures_say_what_the_proxy_answered(server: Server, tmp_path: Path) -> None:
    with socks_proxy_running(login=("me", "pw")) as proxy:
        wrong = proxy.url.replace("me:pw", "me:nope")
        with (
            Api(via(server, wrong), env={}) as api,
            pytest.raises(Unreachable, match="refused the user name"),
        ):
            api.request("GET", "/x")
    with socks_proxy_running() as proxy:
        closed = via(server, proxy.url, host="127.0.0.1")
        closed = Access(**{**closed.__dict__, "server": "https://127.0.0.1:1"})
        with (
            Api(closed, env={}) as api,
            pytest.raises(Unreachable, match=r"could not reach 127\.0\.0\.1:1: connection refused"),
        ):
            api.request("GET", "/x")


@pytest.fixture
def proxy_tls(server: Server, tmp_path: Path) -> ssl.SSLContext:
    """The proxy's own TLS, with a certificate the cluster's CA signed (Go verifies an https://
    proxy with the same roots as the API server)."""
    issued, key = cert("proxy", server.ca_pair, "127.0.0.1", False)
    (tmp_path / "proxy.pem").write_bytes(pem(issued) + pem(issued, key))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "proxy.pem")
    return ctx


@pytest.fixture
def https_proxy(proxy_tls: ssl.SSLContext) -> Iterator[ConnectProxy]:
    with connect_proxy_running(tls=proxy_tls) as proxy:
        yield proxy


def test_an_https_proxy_carries_the_servers_tls_inside_its_own(
    server: Server, https_proxy: ConnectProxy
) -> None:
    server.replies["/x"] = (200, {"via": "https-proxy"}, {})
    creds = Credentials(token="t0k", cert_data=server.client_cert, key_data=server.client_key)
    access = Access(
        **{**via(server, f"https://u:p@127.0.0.1:{https_proxy.port}").__dict__, "credentials": creds}
    )
    with Api(access, env={}) as api:
        assert api.request("GET", "/x") == {"via": "https-proxy"}
        assert api.request("GET", "/x") == {"via": "https-proxy"}
        body = {"k": "v" * 100_000}  # more than one TLS record each way, inside the tunnel
        server.replies["/big"] = (200, body, {})
        assert api.request("GET", "/big") == body
    assert https_proxy.tunnels == [server.url.removeprefix("https://")]
    assert https_proxy.auth == ["Basic dTpw"]
    assert [r["client"] for r in server.requests] == ["me", "me", "me"]  # the client cert, end to end


def test_an_https_proxy_the_clusters_ca_does_not_trust_is_refused(server: Server, tmp_path: Path) -> None:
    stranger = cert("other-ca", None, None, True)
    issued, key = cert("proxy", stranger, "127.0.0.1", False)
    (tmp_path / "p.pem").write_bytes(pem(issued) + pem(issued, key))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "p.pem")
    with connect_proxy_running(tls=ctx) as proxy:
        with (
            Api(via(server, proxy.url), env={}) as api,
            pytest.raises(Unreachable, match="TLS certificate not trusted"),
        ):
            api.request("GET", "/x")
        assert proxy.tunnels == []


def test_a_proxy_that_refuses_the_tunnel_is_named(server: Server) -> None:
    with (
        connect_proxy_running(refuse="407 Proxy Authentication Required") as proxy,
        Api(via(server, proxy.url), env={}) as api,
        pytest.raises(Unreachable) as e,
    ):
        api.request("GET", "/x")
    port = server.url.rsplit(":", 1)[1]
    assert (
        f"the proxy refused the tunnel to 127.0.0.1:{port}: HTTP/1.1 407 Proxy Authentication Required"
        in str(e.value.reason)
    )
