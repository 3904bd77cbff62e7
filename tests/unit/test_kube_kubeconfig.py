"""kubeconfig read as kubectl reads it: which files, merging, contexts, relative paths, inline data,
in-cluster, and errors that say what to do."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid.kube.errors import ClientError
from kubectl_fluid.kube.kubeconfig import load


def config(
    name: str = "c",
    *,
    server: str = "https://10.0.0.1:6443",
    namespace: str | None = None,
    user: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
    current: str | None = None,
) -> dict[str, Any]:
    ctx: dict[str, Any] = {"cluster": name, "user": name}
    if namespace:
        ctx["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": name, "user": user or {"token": f"token-{name}"}}],
        "contexts": [{"name": name, "context": ctx}],
        "current-context": name if current is None else current,
    }


def write(path: Path, content: dict[str, Any], as_yaml: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(content) if as_yaml else json.dumps(content))
    return path


def test_explicit_file_yaml_and_json(tmp_path: Path) -> None:
    for as_yaml in (True, False):
        path = write(tmp_path / f"k-{as_yaml}", config(namespace="team-a"), as_yaml)
        access = load(str(path), None, env={}, home=tmp_path)
        assert access.server == "https://10.0.0.1:6443"
        assert access.namespace == "team-a"
        assert access.credentials.token == "token-c"


def test_namespace_defaults_to_default(tmp_path: Path) -> None:
    assert load(str(write(tmp_path / "k", config())), None, env={}, home=tmp_path).namespace == "default"


def test_kubeconfig_env_merges_first_wins_and_skips_missing(tmp_path: Path) -> None:
    first = write(tmp_path / "a", config("a", server="https://a:1", current=""))
    second = write(tmp_path / "b", config("b", server="https://b:1"))
    # "a" is also defined in b: the first file's definition wins.
    extra = config("a", server="https://wrong:1")
    merged_b = {
        **config("b", server="https://b:1"),
        "clusters": config("b", server="https://b:1")["clusters"] + extra["clusters"],
    }
    write(second, merged_b)
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}:{first}:{second}"}
    # current-context comes from the first file that sets one (b).
    assert load(None, None, env=env, home=tmp_path).server == "https://b:1"
    assert load(None, "a", env=env, home=tmp_path).server == "https://a:1"


def test_home_default(tmp_path: Path) -> None:
    write(tmp_path / ".kube" / "config", config(server="https://home:1"))
    assert load(None, None, env={}, home=tmp_path).server == "https://home:1"


def test_relative_paths_are_relative_to_their_file(tmp_path: Path) -> None:
    path = write(
        tmp_path / "dir" / "k",
        config(
            cluster={"certificate-authority": "pki/ca.crt"},
            user={"client-certificate": "pki/me.crt", "client-key": "/abs/me.key"},
        ),
    )
    access = load(str(path), None, env={}, home=tmp_path)
    assert access.ca_file == str(tmp_path / "dir" / "pki" / "ca.crt")
    assert access.credentials.cert_file == str(tmp_path / "dir" / "pki" / "me.crt")
    assert access.credentials.key_file == "/abs/me.key"


def test_inline_data_is_decoded(tmp_path: Path) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"
    data = base64.b64encode(pem).decode()
    path = write(
        tmp_path / "k",
        config(
            cluster={
                "certificate-authority-data": data,
                "insecure-skip-tls-verify": True,
                "tls-server-name": "api",
            },
            user={"client-certificate-data": data, "client-key-data": data},
        ),
    )
    access = load(str(path), None, env={}, home=tmp_path)
    assert access.ca_data == pem
    assert access.credentials.cert_data == pem
    assert access.insecure
    assert access.tls_server_name == "api"


def test_exec_plugin_command_relative_to_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "k", config(user={"exec": {"command": "./bin/cred", "args": ["x"]}}))
    exec_config = load(str(path), None, env={}, home=tmp_path).credentials.exec_config
    assert exec_config is not None
    assert exec_config["command"] == str(tmp_path / "bin" / "cred")
    path = write(tmp_path / "k2", config(user={"exec": {"command": "aws"}}))
    exec_config = load(str(path), None, env={}, home=tmp_path).credentials.exec_config
    assert exec_config is not None
    assert exec_config["command"] == "aws"


def test_in_cluster_when_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("t")
    (sa / "namespace").write_text("apps\n")
    monkeypatch.setattr("kubectl_fluid.kube.kubeconfig.IN_CLUSTER_DIR", sa)
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    access = load(None, None, env=env, home=tmp_path)
    assert access.server == "https://[fd00::1]:443"
    assert access.namespace == "apps"
    assert access.credentials.token_file == str(sa / "token")


@pytest.mark.parametrize(
    ("content", "context", "says"),
    [
        (config(current=""), None, "no current context"),
        (config(), "other", 'context "other" not found'),
        ({**config(), "clusters": []}, None, 'cluster "c" of context "c" not found'),
        (config(user={"auth-provider": {"name": "gcp"}}), None, "auth-provider"),
        (config(server=""), None, "has no server"),
    ],
)
def test_errors_say_what_to_do(
    tmp_path: Path, content: dict[str, Any], context: str | None, says: str
) -> None:
    with pytest.raises(ClientError, match=says):
        load(str(write(tmp_path / "k", content)), context, env={}, home=tmp_path)


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ClientError, match="not found; pass an existing file"):
        load(str(tmp_path / "nope"), None, env={}, home=tmp_path)
    with pytest.raises(ClientError, match="no kubeconfig found; set KUBECONFIG or pass --kubeconfig"):
        load(None, None, env={}, home=tmp_path)


def test_unparsable_file(tmp_path: Path) -> None:
    (tmp_path / "k").write_text("clusters: [\n")
    with pytest.raises(ClientError, match="cannot be parsed"):
        load(str(tmp_path / "k"), None, env={}, home=tmp_path)
    (tmp_path / "k").write_text("- a list\n")
    with pytest.raises(ClientError, match="not a mapping"):
        load(str(tmp_path / "k"), None, env={}, home=tmp_path)


@pytest.mark.parametrize("value", ["false", "true", "False", 0, 1, "yes-please"])
def test_a_boolean_field_that_is_not_a_yaml_boolean_is_refused_naming_it(tmp_path: Path, value: Any) -> None:
    # "false" in quotes is a string; read as bool() it would turn TLS verification *off*.
    path = write(tmp_path / "k", config(cluster={"insecure-skip-tls-verify": value}))
    with pytest.raises(ClientError) as e:
        load(str(path), None, env={}, home=tmp_path)
    assert "insecure-skip-tls-verify" in str(e.value)
    assert 'cluster "c"' in str(e.value)
    assert repr(value) in str(e.value)


def test_yaml_booleans_are_read_as_kubectl_reads_them(tmp_path: Path) -> None:
    for text, insecure in (("true", True), ("false", False), ("null", False), ("yes", True), ("off", False)):
        path = tmp_path / f"k-{text}"
        path.write_text(
            yaml.safe_dump(config()).replace(
                "server: https://10.0.0.1:6443",
                f"server: https://10.0.0.1:6443\n    insecure-skip-tls-verify: {text}",
            )
        )
        assert load(str(path), None, env={}, home=tmp_path).insecure is insecure, text


@pytest.mark.parametrize(
    ("where", "key"),
    [("cluster", "disable-compression"), ("exec", "provideClusterInfo")],
)
def test_every_boolean_field_is_checked(tmp_path: Path, where: str, key: str) -> None:
    if where == "cluster":
        content = config(cluster={key: "false"})
    else:
        content = config(user={"exec": {"command": "x", "apiVersion": "v1", key: "false"}})
    with pytest.raises(ClientError, match=key):
        load(str(write(tmp_path / "k", content)), None, env={}, home=tmp_path)


def test_proxy_url_is_kept_for_the_transport(tmp_path: Path) -> None:
    path = write(tmp_path / "k", config(cluster={"proxy-url": "http://proxy:3128"}))
    assert load(str(path), None, env={}, home=tmp_path).proxy_url == "http://proxy:3128"
