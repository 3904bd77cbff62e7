"""The plugin's small API client against a real local HTTPS server: TLS with the cluster's own CA and
a client certificate given inline, bearer tokens, keep-alive, errors, warnings, no answer at all."""

from __future__ import annotations

import gc
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.kube.errors import ApiError, BadAnswer, ClientError, Unreachable
from kubectl_fluid.kube.kubeconfig import Access, Credentials
from kubectl_fluid.kube.transport import POD_NAMES_AND_VOLUMES, Api, continue_token, decode, warning_text
from tests.connectproxy import ConnectProxy, connect_proxy_running
from tests.e2e.wait import eventually
from tests.unit.fake_apiserver import Server, access, cert, pem
from tests.unit.protobuf_writer import envelope, field, pod_list_bytes


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


@pytest.fixture
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
def test_a_list_is_decoded_with_the_collector_paused_and_left_frozen(server: Server) -> None:
    pods = [{"metadata": {"name": f"p{i}", "labels": {"a": "b"}}, "spec": {"volumes": [{"name": "v"}]}}
            for i in range(2000)]  # fmt: skip
    server.replies["/api/v1/pods"] = (200, {"kind": "PodList", "items": pods}, {})
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.unfreeze()
    gc.callbacks.append(count)
    try:
        with Api(access(server)) as api:
            frozen_before = gc.get_freeze_count()
            assert api.list("/api/v1/pods") == pods
            frozen = gc.get_freeze_count() - frozen_before
    finally:
        gc.callbacks.remove(count)
    assert gc.isenabled()
    # 2,000 pods are 12,000 containers: with the collector running, dozens of collections.
    assert collections == [], collections
    assert frozen >= 6 * len(pods), frozen


@pytest.mark.usefixtures("unfrozen")
def test_decoding_leaves_a_paused_collector_paused() -> None:
    gc.disable()
    try:
        assert decode(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.usefixtures("unfrozen")
def test_an_answer_that_is_not_json_still_raises_and_the_collector_runs_again() -> None:
    with pytest.raises(ValueError, match="property name"):
        decode(b"{not json")
    assert gc.isenabled()


def page_replies(server: Server, pages: list[list[dict[str, Any]]], *, items_first: bool = False) -> None:
    """The pods' list in pages of 2 (the API server's shape: metadata before items, unless told)."""
    for n, items in enumerate(pages):
        query = {"labelSelector": "a=b", "limit": "2", **({"continue": f"t{n}"} if n else {})}
        meta = {"resourceVersion": "7", **({"continue": f"t{n + 1}"} if n + 1 < len(pages) else {})}
        body = (
            {"items": items, "metadata": meta}
            if items_first
            else {"kind": "PodList", "metadata": meta, "items": items}
        )
        server.replies[f"/api/v1/pods?{urlencode(query)}"] = (200, body, {})


def pod_named(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


@pytest.mark.usefixtures("unfrozen")
@pytest.mark.parametrize("items_first", [False, True])
def test_pages_follow_continue_tokens_to_the_end(server: Server, items_first: bool) -> None:
    pages = [[pod_named("a"), pod_named("b")], [pod_named("c"), pod_named("d")], [pod_named("e")]]
    page_replies(server, pages, items_first=items_first)
    with Api(access(server)) as api:
        assert list(api.pages("/api/v1/pods", {"labelSelector": "a=b"}, limit=2)) == pages
        # The same connection goes on serving requests afterwards.
        assert list(api.pages("/api/v1/pods", {"labelSelector": "a=b"}, limit=2)) == pages
    assert [r["path"].partition("continue=")[2] for r in server.requests] == ["", "t1", "t2"] * 2
    assert len(server.connections) == 1


@pytest.mark.usefixtures("unfrozen")
def test_the_next_page_is_asked_for_before_this_one_is_used(server: Server) -> None:
    page_replies(server, [[pod_named("a"), pod_named("b")], [pod_named("c")]])
    with Api(access(server)) as api:
        pages = api.pages("/api/v1/pods", {"labelSelector": "a=b"}, limit=2)
        assert next(pages) == [pod_named("a"), pod_named("b")]
        eventually(
            lambda: len(server.requests) == 2, "the second page's request, sent before it is wanted", 5
        )
        assert next(pages) == [pod_named("c")]
        assert next(pages, None) is None


@pytest.mark.usefixtures("unfrozen")
def test_pages_left_unread_close_the_connection_and_the_next_request_opens_one(server: Server) -> None:
    page_replies(server, [[pod_named("a"), pod_named("b")], [pod_named("c")]])
    server.replies["/x"] = (200, {"n": 1}, {})
    with Api(access(server)) as api:
        pages = api.pages("/api/v1/pods", {"labelSelector": "a=b"}, limit=2)
        next(pages)
        pages.close()  # the second page's answer is never read
        assert api.request("GET", "/x") == {"n": 1}
    assert len(server.connections) == 2


@pytest.mark.usefixtures("unfrozen")
def test_an_expired_continue_token_raises_as_kubectls_does(server: Server) -> None:
    page_replies(server, [[pod_named("a"), pod_named("b")], [pod_named("c")]])
    expired = {"kind": "Status", "reason": "Expired", "message": "The provided continue parameter is too old"}
    server.replies["/api/v1/pods?" + urlencode({"labelSelector": "a=b", "limit": "2", "continue": "t1"})] = (
        410, expired, {},
    )  # fmt: skip
    with Api(access(server)) as api:
        pages = api.pages("/api/v1/pods", {"labelSelector": "a=b"}, limit=2)
        assert next(pages) == [pod_named("a"), pod_named("b")]
        with pytest.raises(ApiError) as raised:
            next(pages)
    assert raised.value.code == 410
    assert "too old" in str(raised.value)


tokens = st.text(st.characters(codec="utf-8"), max_size=40)


@given(token=tokens, rv=tokens, items=st.lists(st.dictionaries(tokens, tokens, max_size=3), max_size=3))
def test_the_continue_token_is_read_from_the_head_as_the_whole_answer_says(
    token: str, rv: str, items: list[dict[str, str]]
) -> None:
    meta = {"resourceVersion": rv, **({"continue": token} if token else {})}
    body = json.dumps({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items}).encode()
    assert continue_token(body) == (token or None)
    # Another shape reads as "not known from the head"; the decoded page then says.
    assert continue_token(json.dumps({"items": items, "metadata": meta}).encode()) is None


def pod_with_config(name: str, dataset: str) -> dict[str, Any]:
    config = f"fluid-runtime-config-{dataset}"
    volumes = [{"name": config, "configMap": {"name": config}}, {"name": "kube-api-access"}]
    return {"metadata": {"name": name, "namespace": "apps"}, "spec": {"volumes": volumes}}


@pytest.mark.usefixtures("unfrozen")
def test_pod_pages_in_protobuf_are_asked_for_so_and_read_back_reduced(server: Server) -> None:
    pages = [[pod_with_config("a", "ds1"), pod_with_config("b", "ds2")], [pod_with_config("c", "ds1")]]
    for n, items in enumerate(pages):
        query = {"limit": "2", **({"continue": f"t{n}"} if n else {})}
        token = f"t{n + 1}" if n + 1 < len(pages) else None
        server.replies[f"/api/v1/pods?{urlencode(query)}"] = (200, pod_list_bytes(items, token), {})
    with Api(access(server)) as api:
        assert list(api.pages("/api/v1/pods", limit=2, codec=POD_NAMES_AND_VOLUMES)) == pages
    assert [r["path"].partition("continue=")[2] for r in server.requests] == ["", "t1"]
    accepts = {dict(r["headers"])["Accept"] for r in server.requests}
    assert accepts == {"application/vnd.kubernetes.protobuf, application/json"}


@pytest.mark.usefixtures("unfrozen")
def test_pod_pages_from_a_server_answering_json_read_as_json(server: Server) -> None:
    pages = [[pod_named("a"), pod_named("b")], [pod_named("c")]]
    page_replies(server, pages)
    with Api(access(server)) as api:
        got = list(api.pages("/api/v1/pods", {"labelSelector": "a=b"}, limit=2, codec=POD_NAMES_AND_VOLUMES))
    assert got == pages


def test_a_protobuf_error_reads_as_its_status(server: Server) -> None:
    status = (
        field(2, "Failure")
        + field(3, 'pods is forbidden: User "me" cannot list resource "pods"')
        + field(4, "Forbidden")
        + field(5, field(3, "pods"))
        + field(6, 403)
    )
    server.replies["/api/v1/pods"] = (403, envelope(status), {})
    with Api(access(server)) as api, pytest.raises(ApiError) as caught:
        list(api.pages("/api/v1/pods", codec=POD_NAMES_AND_VOLUMES))
    assert (caught.value.code, caught.value.reason) == (403, "Forbidden")
    assert 'cannot list resource "pods"' in str(caught.value)


@pytest.mark.usefixtures("unfrozen")
def test_a_page_that_does_not_decode_names_the_request_after_the_pages_before_it(server: Server) -> None:
    first = pod_list_bytes([pod_with_config("a", "ds1")], "t1")
    server.replies["/api/v1/pods?limit=1"] = (200, first, {})
    # The second page's pod is cut inside its metadata: a reader must never make it a shorter page.
    cut = pod_list_bytes([pod_with_config("b", "ds1")], None)
    server.replies["/api/v1/pods?limit=1&continue=t1"] = (200, cut[:-9], {})
    with Api(access(server)) as api:
        pages = api.pages("/api/v1/pods", limit=1, codec=POD_NAMES_AND_VOLUMES)
        assert next(pages) == [pod_with_config("a", "ds1")]
        with pytest.raises(BadAnswer) as caught:
            next(pages)
    assert (caught.value.method, caught.value.path) == ("GET", "/api/v1/pods")
    assert str(caught.value).startswith("the API server's answer to GET /api/v1/pods could not be read: ")


@pytest.mark.parametrize("body", [b'{"items": [', b"\xff\xfe", b"<html>proxy error</html>"])
def test_a_json_answer_that_does_not_decode_names_the_request(server: Server, body: bytes) -> None:
    server.replies["/api/v1/namespaces/a/configmaps/x"] = (200, body, {})
    with Api(access(server)) as api, pytest.raises(BadAnswer) as caught:
        api.get("/api/v1/namespaces/a/configmaps/x")
    assert caught.value.path == "/api/v1/namespaces/a/configmaps/x"
    assert "GET /api/v1/namespaces/a/configmaps/x could not be read" in str(caught.value)
