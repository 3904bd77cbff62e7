"""The plugin's small API client against a real local HTTPS server: TLS with the cluster's own CA and
a client certificate given inline, bearer tokens, keep-alive, errors, warnings, no answer at all."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl_fluid.kube.errors import ApiError, ClientError, Unreachable
from kubectl_fluid.kube.kubeconfig import Access, Credentials
from kubectl_fluid.kube.transport import Api, warning_text
from tests.connectproxy import ConnectProxy, connect_proxy_running
from tests.unit.fake_apiserver import Server, access, cert, pem


def test_tls_with_the_clusters_ca_an_inline_client_certificate_and_keep_alive(server: Server) -> None:
    server.replies["/api/v1/namespaces/a/configmaps/x"] = (200, {"data": {"k": "v"}}, {})
    with Api(access(server, cert_data=server.client_cert, key_data=server.client_key)) as api:
        assert api.get("/api/v1/namespaces/a/configmaps/x") == {"data": {"k": "v"}}
        assert api.get("/api/v1/namespaces/a/configmaps/x") is not None
    assert [r["client"] for r in server.requests] == ["me", "me"]
    assert len(server.connections) == 1


def test_a_kept_alive_connection_the_server_dropped_is_reopened_for_a_get(server: Server) -> None:
    server.replies["/x"] = (200, {"n": 1}, {})
    server.drop_idle = True
    with Api(access(server)) as api:
        assert api.request("GET", "/x") == {"n": 1}
        assert api.request("GET", "/x") == {"n": 1}
    assert len(server.requests) == 2
    assert len(server.connections) == 2


def test_bearer_token_params_and_merge_patch_body(server: Server) -> None:
    server.replies["/apis/apps/v1/namespaces/a/deployments/x"] = (200, {"ok": True}, {})
    with Api(access(server, token="s3cret")) as api:
        api.request(
            "PATCH",
            "/apis/apps/v1/namespaces/a/deployments/x",
            params={"dryRun": "All"},
            body={"a": None},
            content_type="application/merge-patch+json",
        )
    request = server.requests[0]
    assert request["auth"] == "Bearer s3cret"
    assert request["path"].endswith("?dryRun=All")
    assert request["type"] == "application/merge-patch+json"
    assert request["body"] == {"a": None}


def test_token_file_is_read(server: Server, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    server.replies["/x/y"] = (200, {}, {})
    with Api(access(server, token_file=str(tmp_path / "token"))) as api:
        api.request("GET", "/x/y")
    assert server.requests[0]["auth"] == "Bearer from-file"
    # Beside a token, the file wins (client-go: its last read value takes precedence).
    with Api(access(server, token="inline", token_file=str(tmp_path / "token"))) as api:
        api.request("GET", "/x/y")
    assert server.requests[1]["auth"] == "Bearer from-file"


def test_a_token_that_is_not_one_line_is_said_to_be_so(server: Server, tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\nusers: []\n")
    with (
        Api(access(server, token_file=str(tmp_path / "kubeconfig"))) as api,
        pytest.raises(ClientError, match=r"the bearer token from tokenFile .*kubeconfig holds a line break"),
    ):
        api.request("GET", "/x")


def test_missing_object_is_none_but_a_missing_kind_raises(server: Server) -> None:
    server.replies["/apis/g/v1/things"] = (
        404,
        {
            "kind": "Status",
            "reason": "NotFound",
            "message": "the server could not find the requested resource",
        },
        {},
    )
    with Api(access(server)) as api:
        assert api.get("/api/v1/namespaces/a/pods/x") is None
        with pytest.raises(ApiError) as e:
            api.get("/apis/g/v1/things")
    assert e.value.code == 404
    assert not e.value.is_missing_object


def test_forbidden_carries_the_servers_message(server: Server) -> None:
    server.replies["/api/v1/pods"] = (
        403,
        {"kind": "Status", "reason": "Forbidden", "message": "pods is forbidden"},
        {},
    )
    with Api(access(server)) as api, pytest.raises(ApiError) as e:
        api.list("/api/v1/pods")
    assert (e.value.code, e.value.reason, e.value.message, e.value.method) == (
        403,
        "Forbidden",
        "pods is forbidden",
        "GET",
    )


def test_server_warnings_reach_stderr(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    server.replies["/w"] = (200, {}, {"Warning": '299 - "v1beta1 is deprecated"'})
    with Api(access(server)) as api:
        api.request("GET", "/w")
    assert capsys.readouterr().err == "Warning: v1beta1 is deprecated\n"
    assert warning_text("not a warning header") == "not a warning header"


def test_an_untrusted_server_is_refused(server: Server) -> None:
    other_ca = pem(cert("other", None, None, True)[0])
    with (
        Api(Access(server=server.url, namespace="d", context="t", ca_data=other_ca)) as api,
        pytest.raises(Unreachable) as e,
    ):
        api.request("GET", "/x")
    assert "TLS certificate not trusted" in e.value.reason


def test_insecure_skip_verify(server: Server) -> None:
    server.replies["/x"] = (200, {"a": 1}, {})
    with Api(Access(server=server.url, namespace="d", context="t", insecure=True)) as api:
        assert api.request("GET", "/x") == {"a": 1}


def test_nothing_listening_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with (
        Api(Access(server=f"https://127.0.0.1:{port}", namespace="d", context="t")) as api,
        pytest.raises(Unreachable) as e,
    ):
        api.request("GET", "/x")
    assert e.value.reason == "connection refused"


def test_a_silent_server_times_out() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with (
            Api(Access(server=f"https://127.0.0.1:{port}", namespace="d", context="t"), timeout=0.3) as api,
            pytest.raises(Unreachable) as e,
        ):
            api.request("GET", "/x")
    assert "timed out" in e.value.reason


def test_bad_server_urls_and_credentials_are_cli_errors(server: Server) -> None:
    with pytest.raises(ClientError, match="not an http"):
        Api(Access(server="ftp://x", namespace="d", context="t"))
    with (
        Api(access(server, cert_data=b"garbage", key_data=b"garbage")) as api,
        pytest.raises(ClientError, match="client certificate"),
    ):
        api.request("GET", "/x")
    with (
        Api(Access(server=server.url, namespace="d", context="t", ca_data=b"garbage")) as api,
        pytest.raises(ClientError, match="certificate authority"),
    ):
        api.request("GET", "/x")


def test_exec_credential_plugin(server: Server, tmp_path: Path) -> None:
    plugin = tmp_path / "cred"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "%s"},
    }
    plugin.write_text(f"#!/bin/sh\nprintf '{json.dumps(credential)}' \"$TOKEN\"\n")
    plugin.chmod(0o755)
    server.replies["/x"] = (200, {}, {})
    exec_config = {"command": str(plugin), "env": [{"name": "TOKEN", "value": "from-exec"}]}
    with Api(access(server, exec_config=exec_config)) as api:
        api.request("GET", "/x")
    assert server.requests[0]["auth"] == "Bearer from-exec"
    failing = tmp_path / "fail"
    failing.write_text("#!/bin/sh\necho 'please log in' >&2\nexit 3\n")
    failing.chmod(0o755)
    with (
        Api(access(server, exec_config={"command": str(failing)})) as api,
        pytest.raises(ClientError, match="please log in"),
    ):
        api.request("GET", "/x")


@pytest.fixture
def connect_proxy() -> Iterator[ConnectProxy]:
    with connect_proxy_running() as proxy:
        yield proxy


def test_proxy_url_tunnels_tls_through_connect_with_the_servers_name(
    server: Server, connect_proxy: ConnectProxy
) -> None:
    server.replies["/x"] = (200, {"via": "proxy"}, {})
    proxied = Access(
        server=server.url,
        namespace="d",
        context="t",
        ca_data=server.ca,
        proxy_url=f"http://me:pw@127.0.0.1:{connect_proxy.port}",
        credentials=Credentials(token="t0k"),
    )
    with Api(proxied, env={}) as api:
        assert api.request("GET", "/x") == {"via": "proxy"}
        assert api.request("GET", "/x") == {"via": "proxy"}
    # One tunnel (kept alive), to the API server's own host and port; TLS verified end to end.
    assert connect_proxy.tunnels == [server.url.removeprefix("https://")]
    assert connect_proxy.auth == ["Basic bWU6cHc="]
    assert [r["auth"] for r in server.requests] == ["Bearer t0k", "Bearer t0k"]


def test_environment_proxy_skips_loopback_as_client_go_does(
    server: Server, connect_proxy: ConnectProxy
) -> None:
    server.replies["/x"] = (200, {"a": 1}, {})
    env = {"HTTPS_PROXY": f"http://127.0.0.1:{connect_proxy.port}"}
    with Api(access(server), env=env) as api:
        assert api.request("GET", "/x") == {"a": 1}
    assert connect_proxy.tunnels == []


def test_a_proxy_of_an_unknown_scheme_is_refused_in_one_line(server: Server) -> None:
    socks = Access(server=server.url, namespace="d", context="t", proxy_url="socks4://127.0.0.1:1080")
    with pytest.raises(
        ClientError, match=r"socks4:// proxy, which neither kubectl nor kubectl fluid can use"
    ):
        Api(socks, env={})
