"""The proxy the plugin's requests take, decided as client-go's ``proxy-url`` and
``http.ProxyFromEnvironment`` decide it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.kube.errors import ClientError
from kubectl_fluid.kube.proxy import Proxy, proxy_for


def test_proxy_url_wins_and_applies_to_loopback_too() -> None:
    env = {"HTTPS_PROXY": "http://env:1"}
    assert proxy_for("https://127.0.0.1:6443", "http://p:3128", env) == Proxy("p", 3128)


def test_environment_proxy_by_the_servers_scheme() -> None:
    env = {"HTTPS_PROXY": "http://s:1", "HTTP_PROXY": "http://plain:2"}
    assert proxy_for("https://api.example:6443", None, env) == Proxy("s", 1)
    assert proxy_for("http://api.example:8080", None, env) == Proxy("plain", 2)
    assert proxy_for("https://api.example", None, {"https_proxy": "s:3"}) == Proxy("s", 3)
    assert proxy_for("https://api.example", None, {}) is None


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.3.4.5", "[::1]"])
def test_loopback_is_never_proxied_from_the_environment(host: str) -> None:
    assert proxy_for(f"https://{host}:6443", None, {"HTTPS_PROXY": "http://p:1"}) is None


@pytest.mark.parametrize(
    ("no_proxy", "bypassed"),
    [
        ("*", True),
        ("api.example", True),
        (".example", True),
        ("example", True),
        ("other.example", False),
        ("10.0.0.0/8", False),
        ("api.example:6443", True),
        ("api.example:443", False),
        (" , api.example ", True),
    ],
)
def test_no_proxy(no_proxy: str, bypassed: bool) -> None:
    env = {"HTTPS_PROXY": "http://p:1", "NO_PROXY": no_proxy}
    assert (proxy_for("https://api.example:6443", None, env) is None) is bypassed


def test_no_proxy_ip_and_cidr() -> None:
    env = {"HTTPS_PROXY": "http://p:1", "no_proxy": "10.0.0.0/8,192.168.1.7"}
    assert proxy_for("https://10.1.2.3:6443", None, env) is None
    assert proxy_for("https://192.168.1.7:6443", None, env) is None
    assert proxy_for("https://192.168.1.8:6443", None, env) == Proxy("p", 1)


def test_credentials_in_the_proxy_url() -> None:
    assert proxy_for("https://a", "http://me:s%3Acret@p:8", {}) == Proxy("p", 8, "me:s:cret")


@pytest.mark.parametrize(
    ("url", "proxy"),
    [
        ("socks5://p", Proxy("p", 1080, None, "socks5")),
        ("socks5h://u:pw@p:9", Proxy("p", 9, "u:pw", "socks5h")),
        ("https://p", Proxy("p", 443, None, "https")),
        ("http://p", Proxy("p", 80, None, "http")),
    ],
)
def test_the_schemes_go_dials_with_their_default_ports(url: str, proxy: Proxy) -> None:
    assert proxy_for("https://a", url, {}) == proxy
    assert proxy_for("https://a", None, {"HTTPS_PROXY": url}) == proxy


@pytest.mark.parametrize("url", ["socks4://p:1080", "ftp://p"])
def test_other_proxy_schemes_are_one_clear_error(url: str) -> None:
    with pytest.raises(ClientError, match="neither kubectl nor kubectl fluid can use: use one of http://"):
        proxy_for("https://a", url, {})
    with pytest.raises(ClientError, match="HTTPS_PROXY"):
        proxy_for("https://a", None, {"HTTPS_PROXY": url})


@given(st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8}){0,3}", fullmatch=True))
def test_a_host_is_bypassed_by_its_own_name_and_any_parent_domain(host: str) -> None:
    env = {"HTTPS_PROXY": "http://p:1"}
    labels = host.split(".")
    for i in range(len(labels)):
        parent = ".".join(labels[i:])
        assert proxy_for(f"https://{host}", None, {**env, "NO_PROXY": parent}) is None
        # A leading dot matches sub-domains only, as client-go's httpproxy has it.
        dotted = proxy_for(f"https://{host}", None, {**env, "NO_PROXY": "." + parent})
        assert (dotted is None) is (i > 0)
