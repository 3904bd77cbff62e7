"""How a connection reaches the API server: directly, or through the proxy ``kubectl_fluid.kube.proxy``
chose, as Go's net/http dials one.

- ``http://`` proxy: a CONNECT tunnel for an HTTPS server (TLS end to end); for a plain-HTTP server,
  requests in absolute form to the proxy.
- ``https://`` proxy: the same, over TLS to the proxy. As in Go, that TLS uses the API server's own TLS
  configuration (its certificate authority, or the system's roots, and the client certificate) with
  the proxy's host name; the API server's TLS then runs inside it.
- ``socks5://`` / ``socks5h://``: a SOCKS5 CONNECT (RFC 1928; user and password from the URL, RFC
  1929), the host name resolved by the proxy, then TLS end to end.

Only the standard library: TLS inside TLS goes through ``ssl.SSLObject`` over memory buffers
(``kubectl_fluid.kube.tlsintls``). The TLS context comes from the caller, so this module imports no
``ssl`` itself."""

from __future__ import annotations

import base64
import ipaddress
import socket
import struct
from typing import TYPE_CHECKING, Any

from kubectl_fluid.kube.errors import ClientError
from kubectl_fluid.kube.proxy import Proxy

if TYPE_CHECKING:
    import ssl

SOCKS_REPLIES = {
    1: "general SOCKS server failure",
    2: "connection not allowed by ruleset",
    3: "network unreachable",
    4: "host unreachable",
    5: "connection refused",
    6: "TTL expired",
    7: "command not supported",
    8: "address type not supported",
}


class ProxyError(OSError):
    """The proxy refused or broke the tunnel (reported as the cluster being unreachable)."""


def absolute_form(proxy: Proxy | None, https: bool) -> bool:
    """Whether requests name the whole URL: plain HTTP through an HTTP(S) proxy (no tunnel)."""
    return proxy is not None and not https and proxy.scheme in ("http", "https")


def connect(
    host: str,
    port: int,
    *,
    https: bool,
    proxy: Proxy | None,
    context: ssl.SSLContext | None,
    server_name: str,
    timeout: float | None,
) -> Any:
    """A connected socket-like object to ``host:port`` (TLS when ``https``), through ``proxy``."""
    if proxy is None:
        sock: Any = socket.create_connection((host, port), timeout=timeout)
    elif proxy.scheme in ("socks5", "socks5h"):
        sock = _socks5(proxy, host, port, timeout)
    else:
        sock = socket.create_connection((proxy.host, proxy.port), timeout=timeout)
        if proxy.scheme == "https":
            if context is None:
                raise ClientError("an https:// proxy needs TLS settings; this is a bug")
            sock = context.wrap_socket(sock, server_hostname=proxy.host)
        if not https:
            return sock
        _http_connect(sock, host, port, proxy)
        if proxy.scheme == "https":
            from kubectl_fluid.kube.tlsintls import TlsInTls

            assert context is not None
            return TlsInTls(sock, context, server_name)
    if not https:
        return sock
    assert context is not None
    return context.wrap_socket(sock, server_hostname=server_name)


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _recv_exact(sock: Any, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ProxyError("the proxy closed the connection")
        data += chunk
    return data


def _http_connect(sock: Any, host: str, port: int, proxy: Proxy) -> None:
    target = _hostport(host, port)
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
    if proxy.userinfo:
        lines.append(f"Proxy-Authorization: Basic {base64.b64encode(proxy.userinfo.encode()).decode()}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)  # byte by byte: nothing past the answer's head may be consumed here
        if not chunk:
            raise ProxyError("the proxy closed the connection during CONNECT")
        head += chunk
        if len(head) > 65536:
            raise ProxyError("the proxy's answer to CONNECT is too long")
    status = head.split(b"\r\n", 1)[0].decode(errors="replace")
    parts = status.split(" ", 2)
    if len(parts) < 2 or parts[1] != "200":
        raise ProxyError(f"the proxy refused the tunnel to {target}: {status}")


def _socks5(proxy: Proxy, host: str, port: int, timeout: float | None) -> socket.socket:
    sock = socket.create_connection((proxy.host, proxy.port), timeout=timeout)
    try:
        methods = b"\x00\x02" if proxy.userinfo else b"\x00"
        sock.sendall(b"\x05" + bytes([len(methods)]) + methods)
        version, method = _recv_exact(sock, 2)
        if version != 5:
            raise ProxyError("the proxy does not speak SOCKS5")
        if method == 2:
            user, _, password = (proxy.userinfo or "").partition(":")
            u, p = user.encode(), password.encode()
            sock.sendall(b"\x01" + bytes([len(u)]) + u + bytes([len(p)]) + p)
            if _recv_exact(sock, 2)[1] != 0:
                raise ProxyError("the SOCKS5 proxy refused the user name and password")
        elif method != 0:
            raise ProxyError("the SOCKS5 proxy accepts none of our authentication methods")
        try:
            address = ipaddress.ip_address(host)
            destination = (b"\x01" if address.version == 4 else b"\x04") + address.packed
        except ValueError:
            name = host.encode("idna")
            destination = b"\x03" + bytes([len(name)]) + name
        sock.sendall(b"\x05\x01\x00" + destination + struct.pack("!H", port))
        _, reply, _, kind = _recv_exact(sock, 4)
        if reply != 0:
            raise ProxyError(
                f"the SOCKS5 proxy could not reach {_hostport(host, port)}: "
                f"{SOCKS_REPLIES.get(reply, f'reply {reply}')}"
            )
        length = {1: 4, 4: 16}.get(kind) or _recv_exact(sock, 1)[0]
        _recv_exact(sock, length + 2)  # the proxy's bound address and port
    except BaseException:
        sock.close()
        raise
    return sock
