"""An OpenID provider on loopback for the plugin's oidc tests: discovery, and a token endpoint for
refresh_token grants, each request recorded. Over HTTP, or over HTTPS under a host name of the test's
choosing (which only a proxy told where it is can reach: the client cannot resolve it)."""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from tests.serving import serving

DISCOVERY = "/realm/.well-known/openid-configuration"
MOVED = "/moved/openid-configuration"


def jwt(exp: float, sub: str = "jane") -> str:
    def part(d: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'sub': sub, 'exp': int(exp)})}.sig"


@dataclass
class Issuer:
    url: str
    port: int = 0
    tokens: list[dict[str, str]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    refuse_basic: bool = False
    moved: bool = False  # the discovery document answers with a redirect to MOVED
    discovery: list[str] = field(default_factory=list)  # the paths GET asked for
    answer: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def issuer_running(tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> Iterator[Issuer]:
    """The provider until the block ends, its URL ``{http|https}://{host}:{port}/realm`` (it listens
    on 127.0.0.1 whatever ``host`` says)."""
    state = Issuer("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def reply(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            state.discovery.append(self.path)
            if state.moved and self.path == DISCOVERY:
                self.send_response(302)
                self.send_header("Location", MOVED)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            assert self.path in (DISCOVERY, MOVED)
            self.reply(200, {"issuer": state.url, "token_endpoint": f"{state.url}/token"})

        def do_POST(self) -> None:
            form = dict(parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
            state.tokens.append(form)
            state.auth.append(self.headers.get("Authorization"))
            if state.refuse_basic and self.headers.get("Authorization"):
                self.reply(401, {"error": "invalid_client"})
                return
            self.reply(200, state.answer)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    state.port = httpd.server_address[1]
    state.url = f"{'https' if tls else 'http'}://{host}:{state.port}/realm"
    with serving(httpd):
        yield state
