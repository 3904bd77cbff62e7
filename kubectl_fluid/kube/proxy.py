"""Which HTTP proxy, if any, carries the plugin's requests: a cluster's ``proxy-url``, else the
environment's ``HTTPS_PROXY``/``HTTP_PROXY`` minus ``NO_PROXY``, decided as client-go decides it.

client-go takes ``proxy-url`` for every request of that cluster, loopback included; without it,
``http.ProxyFromEnvironment`` picks the variable by the server's scheme, never proxies ``localhost``
or a loopback address, and skips hosts ``NO_PROXY`` lists (``*``, IPs, CIDRs, domains with or
without a leading dot, each optionally with a port). The schemes Go's transport serves are served
(``http``, ``https``, ``socks5``, ``socks5h``; ``kubectl_fluid.kube.dial`` connects through them);
any other is refused in one line rather than silently bypassed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from kubectl_fluid.kube.errors import ClientError

# Each scheme Go's net/http transport dials, and its default port.
SCHEMES = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}


@dataclass(frozen=True)
class Proxy:
    host: str
    port: int
    # ``user:password`` of the proxy URL, for ``Proxy-Authorization: Basic`` or SOCKS5's login.
    userinfo: str | None = None
    scheme: str = "http"


def _env(env: Mapping[str, str], name: str) -> str:
    return env.get(name) or env.get(name.lower()) or ""


def parse_proxy(url: str, source: str) -> Proxy:
    # Go's httpproxy reads a scheme-less value (``proxy:3128``) as http.
    split = urlsplit(url if "://" in url else f"http://{url}")
    if split.scheme not in SCHEMES:
        raise ClientError(
            f"proxy {url!r} ({source}) is a {split.scheme}:// proxy, which neither kubectl nor kubectl "
            f"fluid can use: use one of {', '.join(f'{s}://' for s in SCHEMES)}, or unset it for this command"
        )
    try:
        port = split.port or SCHEMES[split.scheme]
    except ValueError:
        raise ClientError(f"proxy {url!r} ({source}) has an invalid port") from None
    if not split.hostname:
        raise ClientError(f"proxy {url!r} ({source}) names no host")
    userinfo = None
    if split.username is not None:
        userinfo = f"{unquote(split.username)}:{unquote(split.password or '')}"
    return Proxy(split.hostname, port, userinfo, split.scheme)


def _no_proxy_matches(entry: str, host: str, port: int) -> bool:
    entry = entry.strip().lower()
    if not entry:
        return False
    if entry == "*":
        return True
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        pass
    entry_port = None
    if entry.count(":") == 1:  # host:port (an IPv6 entry has several colons and no port)
        entry, _, p = entry.partition(":")
        entry_port = int(p) if p.isdigit() else None
    if entry_port is not None and entry_port != port:
        return False
    if entry.startswith("*."):
        entry = entry[1:]
    if entry.startswith("."):
        return host.endswith(entry)
    return host == entry or host.endswith("." + entry)


def proxy_for(server: str, proxy_url: str | None, env: Mapping[str, str]) -> Proxy | None:
    """The proxy for requests to ``server`` (an http(s) URL), or None to connect directly."""
    if proxy_url:
        return parse_proxy(proxy_url, "the cluster's proxy-url")
    split = urlsplit(server)
    https = split.scheme == "https"
    name = "HTTPS_PROXY" if https else "HTTP_PROXY"
    value = _env(env, name)
    if not value:
        return None
    host = (split.hostname or "").lower()
    port = split.port or (443 if https else 80)
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    if any(_no_proxy_matches(e, host, port) for e in _env(env, "NO_PROXY").split(",")):
        return None
    return parse_proxy(value, name)
