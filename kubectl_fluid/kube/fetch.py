"""One request to a URL outside the cluster (the oidc issuer's discovery document and token endpoint)
on the plugin's own HTTP stack, so it leaves the machine the way API requests do: the proxy chosen
from the environment as Go's ``http.ProxyFromEnvironment`` chooses it (``kubectl_fluid.kube.proxy``:
``HTTPS_PROXY``/``HTTP_PROXY`` by the URL's scheme, ``NO_PROXY``, loopback never proxied), dialled by
``kubectl_fluid.kube.dial`` (an ``https://`` proxy gets TLS first and its CONNECT and credentials
inside it), HTTP/1.1 by ``kubectl_fluid.kube.http11``. A GET follows redirects, as Go's client does;
nothing else does. One connection per request, closed after its answer."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from kubectl_fluid.kube import dial, http11
from kubectl_fluid.kube.proxy import proxy_for

if TYPE_CHECKING:
    import ssl

REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 10  # Go's http.Client stops after 10


def fetch(
    url: str,
    *,
    context: ssl.SSLContext,
    env: Mapping[str, str],
    timeout: float,
    method: str = "GET",
    body: bytes | None = None,
    headers: Sequence[tuple[str, str]] = (),
) -> http11.Response:
    """The answer to ``method url``. ``context`` verifies the server, and an ``https://`` proxy too
    (Go's transport uses one TLS configuration for both). Raises OSError when there is no answer."""
    for _ in range(MAX_REDIRECTS + 1):
        response = _once(url, method, body, headers, context=context, env=env, timeout=timeout)
        location = response.values("location")
        if method != "GET" or response.status not in REDIRECTS or not location:
            return response
        url = urljoin(url, location[0])
    raise OSError(f"stopped after {MAX_REDIRECTS} redirects, at {url}")


def _once(
    url: str,
    method: str,
    body: bytes | None,
    headers: Sequence[tuple[str, str]],
    *,
    context: ssl.SSLContext,
    env: Mapping[str, str],
    timeout: float,
) -> http11.Response:
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.hostname:
        raise OSError(f"{url!r} is not an http(s) URL")
    https = split.scheme == "https"
    default = 443 if https else 80
    try:
        port = split.port or default
    except ValueError:
        raise OSError(f"{url!r} has an invalid port") from None
    host = split.hostname
    authority = f"[{host}]" if ":" in host else host
    if port != default:
        authority += f":{port}"
    target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    proxy = proxy_for(url, None, env)
    extra = [("Connection", "close")]
    if dial.absolute_form(proxy, https):
        # Plain HTTP through an HTTP(S) proxy names the whole URL, and carries the proxy's login.
        target = f"http://{authority}{target}"
        if proxy is not None and proxy.userinfo:
            extra.append(
                ("Proxy-Authorization", "Basic " + base64.b64encode(proxy.userinfo.encode()).decode())
            )
    sock = dial.connect(
        host, port, https=https, proxy=proxy, context=context, server_name=host, timeout=timeout
    )
    conn = http11.Connection(sock)
    try:
        conn.send(method, target, authority, [*headers, *extra], body)
        return conn.receive(method)
    finally:
        conn.close()


def reason(e: BaseException) -> str:
    """Why a request got no answer, in a few words."""
    import socket
    import ssl

    if isinstance(e, socket.gaierror):
        return f"cannot resolve the host name: {e.strerror}"
    if isinstance(e, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {e.verify_message}"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__
