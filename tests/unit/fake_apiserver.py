"""A stand-in API server for the plugin's client tests: HTTPS on loopback with its own CA, a client
certificate it verifies, canned replies by path (or by path and query), and a record of each request
(method, path, Authorization, every header, body, the client certificate's name)."""

from __future__ import annotations

import contextlib
import datetime
import http.server
import json
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubectl_fluid.kube.kubeconfig import Access, Credentials
from tests.serving import serving


def cert(
    subject: str,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    san: str | None,
    ca: bool,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer[0].subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san:
        import ipaddress

        try:
            names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(san))]
        except ValueError:  # a host name
            names = [x509.DNSName(san)]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256()), key


def pem(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey | None = None) -> bytes:
    out = cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        out = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    return out


@dataclass
class Server:
    url: str
    ca: bytes
    client_cert: bytes
    client_key: bytes
    requests: list[dict[str, Any]] = field(default_factory=list)
    replies: dict[str, tuple[int, Any, dict[str, str]]] = field(default_factory=dict)
    connections: set[int] = field(default_factory=set)
    drop_idle: bool = False  # close each connection after its answer, without saying so
    # The CA's certificate and key, to issue more certificates it signs (a proxy's).
    ca_pair: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None = None


@contextlib.contextmanager
def running_server(tmp_path: Path) -> Iterator[Server]:
    ca = cert("ca", None, None, True)
    srv_cert, srv_key = cert("server", ca, "127.0.0.1", False)
    client_cert, client_key = cert("me", ca, None, False)
    (tmp_path / "srv.pem").write_bytes(pem(srv_cert) + pem(srv_cert, srv_key))
    (tmp_path / "ca.pem").write_bytes(pem(ca[0]))
    state = Server("", pem(ca[0]), pem(client_cert), pem(client_cert, client_key), ca_pair=ca)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def handle_any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            peer = self.connection.getpeercert()
            state.connections.add(self.client_address[1])
            state.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "auth": self.headers.get("Authorization"),
                    "type": self.headers.get("Content-Type"),
                    "body": json.loads(body) if body else None,
                    "client": dict(x[0] for x in peer["subject"])["commonName"] if peer else None,
                    "headers": list(self.headers.items()),
                }
            )
            # A reply for the path with its query (a list's pages) before one for the path alone.
            status, reply, headers = state.replies.get(self.path) or state.replies.get(
                self.path.split("?")[0],
                (
                    404,
                    {"kind": "Status", "reason": "NotFound", "message": "nope", "details": {"name": "x"}},
                    {},
                ),
            )
            # Bytes are sent as they are: a protobuf answer.
            raw = isinstance(reply, bytes)
            data = reply if raw else json.dumps(reply).encode()
            self.send_response(status)
            self.send_header(
                "Content-Type", "application/vnd.kubernetes.protobuf" if raw else "application/json"
            )
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            if state.drop_idle:
                self.close_connection = True

        do_GET = do_PATCH = handle_any

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "srv.pem")
    ctx.load_verify_locations(tmp_path / "ca.pem")
    ctx.verify_mode = ssl.CERT_OPTIONAL
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    state.url = f"https://127.0.0.1:{httpd.server_address[1]}"
    with serving(httpd):
        yield state


def access(server: Server, **creds: Any) -> Access:
    return Access(
        server=server.url,
        namespace="default",
        context="test",
        ca_data=server.ca,
        credentials=Credentials(**creds),
    )
