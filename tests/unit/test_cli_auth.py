"""The kubeconfig fields a kubectl user may have beyond certificates and tokens, each served (or said
to be ignored), against the local HTTPS stand-in: impersonation headers as client-go sends them, exec
plugins with the cluster's information and the terminal only where allowed, the oidc auth-provider
(a valid token sent, an expired one refreshed at the issuer and written back), the removed
auth-providers refused with their replacement, and a warning for each field no kubeconfig has."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.cli.settings import Settings
from kubectl_fluid.kube.errors import ClientError
from kubectl_fluid.kube.kubeconfig import header_key_escape, load
from kubectl_fluid.kube.transport import Api
from tests.unit.fake_apiserver import Server
from tests.unit.oidc_issuer import Issuer, issuer_running, jwt


def kubeconfig(tmp_path: Path, server: Server, user: dict[str, Any], **cluster: Any) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": server.url,
                            "certificate-authority-data": base64.b64encode(server.ca).decode(),
                            **cluster,
                        },
                    }
                ],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    path.chmod(0o600)
    return path


def get(path: Path, server: Server) -> dict[str, Any]:
    """One GET with the kubeconfig at ``path``; the request as the server saw it."""
    server.replies["/x"] = (200, {}, {})
    with Api(load(str(path), None, env={}, home=path.parent), env={}) as api:
        api.request("GET", "/x")
    request: dict[str, Any] = server.requests[-1]
    return request


def headers(request: dict[str, Any], prefix: str) -> list[tuple[str, str]]:
    return [(k, v) for k, v in request["headers"] if k.lower().startswith(prefix.lower())]


# --- impersonation --------------------------------------------------------------------------------


def test_impersonation_is_sent_as_client_go_sends_it(server: Server, tmp_path: Path) -> None:
    user = {
        "token": "admin",
        "as": "jane",
        "as-uid": "1234",
        "as-groups": ["devs", "ops"],
        "as-user-extra": {"scopes.example.com/project": ["a", "b"], "reason": ["audit"]},
    }
    request = get(kubeconfig(tmp_path, server, user), server)
    assert request["auth"] == "Bearer admin"
    assert headers(request, "Impersonate-") == [
        ("Impersonate-User", "jane"),
        ("Impersonate-Uid", "1234"),
        ("Impersonate-Group", "devs"),  # one header per group, never joined
        ("Impersonate-Group", "ops"),
        ("Impersonate-Extra-reason", "audit"),
        ("Impersonate-Extra-scopes.example.com%2Fproject", "a"),
        ("Impersonate-Extra-scopes.example.com%2Fproject", "b"),
    ]


def test_no_impersonation_sends_no_such_header(server: Server, tmp_path: Path) -> None:
    assert headers(get(kubeconfig(tmp_path, server, {"token": "t"}), server), "Impersonate-") == []


@given(st.text(min_size=1, max_size=20))
def test_an_extra_key_always_makes_a_legal_header_name(key: str) -> None:
    escaped = header_key_escape(key)
    assert escaped
    assert all(c.isascii() and (c.isalnum() or c in "!#$&'*+-.^_`|~%") for c in escaped)
    # Unescaping gives the key back: the API server reads it so.
    from urllib.parse import unquote

    assert unquote(escaped) == key


@pytest.mark.parametrize(
    ("user", "says"),
    [
        ({"as": "j", "as-groups": "devs"}, "as-groups of user"),
        ({"as": "j", "as-user-extra": {"k": "v"}}, "as-user-extra of user"),
    ],
)
def test_malformed_impersonation_is_refused(server: Server, tmp_path: Path, user: Any, says: str) -> None:
    with pytest.raises(ClientError, match=says):
        load(str(kubeconfig(tmp_path, server, user)), None, env={}, home=tmp_path)


# --- exec plugins ---------------------------------------------------------------------------------


def plugin(tmp_path: Path, token: str = "from-exec", stderr: str = "") -> Path:
    """An exec credential plugin that records its environment and whether it had a terminal."""
    script = tmp_path / "cred"
    credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                             "status": {"token": token}})  # fmt: skip
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s" "$KUBERNETES_EXEC_INFO" > "{tmp_path}/exec-info"\n'
        f'if [ -t 0 ]; then echo tty; else cat; echo no-tty; fi > "{tmp_path}/stdin"\n'
        + (f"echo '{stderr}' >&2\n" if stderr else "")
        + f"echo '{credential}'\n"
    )
    script.chmod(0o755)
    return script


def test_exec_gets_the_cluster_when_it_asks_and_no_stdin(server: Server, tmp_path: Path) -> None:
    exec_config = {
        "command": str(plugin(tmp_path)),
        "apiVersion": "client.authentication.k8s.io/v1",
        "interactiveMode": "IfAvailable",
        "provideClusterInfo": True,
    }
    extension = {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "k8s"}}
    path = kubeconfig(tmp_path, server, {"exec": exec_config}, **{"extensions": [extension]})
    assert get(path, server)["auth"] == "Bearer from-exec"
    info = json.loads((tmp_path / "exec-info").read_text())
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    cluster = info["spec"]["cluster"]
    assert cluster["server"] == server.url
    assert base64.b64decode(cluster["certificate-authority-data"]) == server.ca
    assert cluster["config"] == {"audience": "k8s"}
    # Not interactive: stdin is /dev/null (empty), not the plugin's caller's.
    assert (tmp_path / "stdin").read_text() == "no-tty\n"


def test_exec_without_provide_cluster_info_gets_no_cluster(server: Server, tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path, server, {"exec": {"command": str(plugin(tmp_path)), "interactiveMode": "Never"}}
    )
    get(path, server)
    assert "cluster" not in json.loads((tmp_path / "exec-info").read_text())["spec"]


def test_exec_that_always_needs_a_terminal_says_so_without_one(server: Server, tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path, server, {"exec": {"command": str(plugin(tmp_path)), "interactiveMode": "Always"}}
    )
    with pytest.raises(ClientError, match=r"needs a terminal \(interactiveMode: Always\)"):
        get(path, server)
    with pytest.raises(
        ClientError, match=r"interactiveMode .* is 'Sometimes'; use one of Never, IfAvailable, Always"
    ):
        load(
            str(kubeconfig(tmp_path, server, {"exec": {"command": "x", "interactiveMode": "Sometimes"}})),
            None,
            env={},
            home=tmp_path,
        )


def test_what_an_exec_plugin_says_on_stderr_reaches_the_operator(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = kubeconfig(
        tmp_path, server, {"exec": {"command": str(plugin(tmp_path, stderr="token expires soon"))}}
    )
    get(path, server)
    assert capsys.readouterr().err == "token expires soon\n"


# --- the oidc auth-provider -----------------------------------------------------------------------


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with issuer_running() as state:
        yield state


def oidc_user(issuer: Issuer, **config: str) -> dict[str, Any]:
    return {
        "auth-provider": {
            "name": "oidc",
            "config": {
                "client-id": "kubectl",
                "client-secret": "s3cret",
                "idp-issuer-url": issuer.url,
                **config,
            },
        }
    }


def test_a_valid_id_token_is_sent_without_asking_the_issuer(
    server: Server, tmp_path: Path, issuer: Issuer
) -> None:
    token = jwt(time.time() + 3600)
    assert get(kubeconfig(tmp_path, server, oidc_user(issuer, **{"id-token": token})), server)["auth"] == (
        f"Bearer {token}"
    )
    assert issuer.tokens == []


def test_an_expired_id_token_is_refreshed_and_written_back(
    server: Server, tmp_path: Path, issuer: Issuer
) -> None:
    fresh = jwt(time.time() + 3600, "fresh")
    issuer.answer = {"id_token": fresh, "refresh_token": "r2", "access_token": "a", "token_type": "Bearer"}
    path = kubeconfig(
        tmp_path, server, oidc_user(issuer, **{"id-token": jwt(time.time() - 5), "refresh-token": "r1"})
    )
    assert get(path, server)["auth"] == f"Bearer {fresh}"
    assert issuer.tokens == [{"grant_type": "refresh_token", "refresh_token": "r1"}]
    assert issuer.auth == ["Basic " + base64.b64encode(b"kubectl:s3cret").decode()]
    config = yaml.safe_load(path.read_text())["users"][0]["user"]["auth-provider"]["config"]
    assert config["id-token"] == fresh
    assert config["refresh-token"] == "r2"
    assert config["client-id"] == "kubectl"
    assert path.stat().st_mode & 0o777 == 0o600
    # Next time the written token is valid: no refresh.
    get(path, server)
    assert len(issuer.tokens) == 1


def test_a_token_about_to_expire_is_refreshed_and_an_issuer_refusing_basic_gets_the_form(
    server: Server, tmp_path: Path, issuer: Issuer
) -> None:
    issuer.answer = {"id_token": jwt(time.time() + 3600)}
    issuer.refuse_basic = True
    soon = jwt(time.time() + 5)  # within client-go's 10 s
    path = kubeconfig(tmp_path, server, oidc_user(issuer, **{"id-token": soon, "refresh-token": "r1"}))
    get(path, server)
    assert [t.get("client_id") for t in issuer.tokens] == [None, "kubectl"]
    # No new refresh token in the answer: the old one stays.
    config = yaml.safe_load(path.read_text())["users"][0]["user"]["auth-provider"]["config"]
    assert config["refresh-token"] == "r1"


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"id-token": "expired"}, "not a JWT"),
        ({"refresh-token": ""}, "has no id-token and no refresh-token: log in again"),
        ({"idp-issuer-url": ""}, "has no idp-issuer-url"),
    ],
)
def test_oidc_problems_say_what_to_do(
    server: Server, tmp_path: Path, issuer: Issuer, config: dict[str, str], says: str
) -> None:
    with pytest.raises(ClientError, match=says):
        get(kubeconfig(tmp_path, server, oidc_user(issuer, **config)), server)


def test_a_token_response_without_id_token_is_an_error(
    server: Server, tmp_path: Path, issuer: Issuer
) -> None:
    issuer.answer = {"access_token": "a"}
    path = kubeconfig(tmp_path, server, oidc_user(issuer, **{"refresh-token": "r1"}))
    with pytest.raises(ClientError, match="did not contain an id_token"):
        get(path, server)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("gcp", "gcp auth-provider, which kubectl removed in v1.26 .* gke-gcloud-auth-plugin"),
        ("azure", "azure auth-provider, which kubectl removed in v1.26 .* kubelogin"),
        ("openstack", "auth-provider 'openstack', which neither kubectl nor kubectl fluid knows"),
    ],
)
def test_auth_providers_kubectl_lost_are_refused_with_their_replacement(
    server: Server, tmp_path: Path, name: str, says: str
) -> None:
    path = kubeconfig(tmp_path, server, {"auth-provider": {"name": name, "config": {}}})
    with pytest.raises(ClientError, match=says):
        load(str(path), None, env={}, home=tmp_path)


# --- fields nobody knows --------------------------------------------------------------------------


def test_an_unknown_field_is_warned_about_with_what_was_meant(
    server: Server, tmp_path: Path, issuer: Issuer, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "token").write_text("t")
    user = {
        "tokenfile": str(tmp_path / "token"),
        **oidc_user(issuer, **{"id-token": jwt(time.time() + 60), "scope": "x"}),
    }
    path = kubeconfig(tmp_path, server, user, **{"proxy_url": "http://p:1"})
    Settings(kubeconfig=str(path)).open()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f'Warning: field "proxy_url" of cluster "c" in {path} is not a kubeconfig field; ignored '
        '(did you mean "proxy-url"?)',
        f'Warning: field "tokenfile" of user "u" in {path} is not a kubeconfig field; ignored '
        '(did you mean "tokenFile"?)',
        f'Warning: key "scope" of the oidc auth-provider of user "u" in {path} is not an oidc setting; '
        "ignored",
    ]


def test_every_field_of_the_format_is_known(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = {"tls-server-name": "n", "insecure-skip-tls-verify": False, "disable-compression": True,
               "proxy-url": "http://p:1", "extensions": []}  # fmt: skip
    exec_config = {"command": "c", "args": [], "env": [], "apiVersion": "client.authentication.k8s.io/v1",
                   "installHint": "h", "provideClusterInfo": False, "interactiveMode": "Never"}  # fmt: skip
    user = {"token": "t", "tokenFile": "f", "username": "a", "password": "b", "as": "x", "as-uid": "1",
            "as-groups": [], "as-user-extra": {}, "extensions": [], "exec": exec_config,
            "client-certificate": "c.crt", "client-key": "c.key", "client-certificate-data": "eA==",
            "client-key-data": "eA=="}  # fmt: skip
    cluster["certificate-authority"] = "ca.crt"
    access = load(str(kubeconfig(tmp_path, server, user, **cluster)), None, env={}, home=tmp_path)
    assert access.warnings == ()
