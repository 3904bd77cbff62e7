"""A small, synchronous API client on the standard library: one kept-alive HTTPS connection, JSON in
and out, errors as ``ApiError`` / ``Unreachable``.

Why not kr8s here: a plugin command is a whole process, and kr8s (httpx, anyio, discovery) costs
more to import than the request itself; ``config show`` would then be several times slower than
``kubectl get cm``. The servers keep using kr8s. This module is imported only by commands that talk to
the cluster, never on the ``--help`` path; TLS (``ssl``) is loaded when the first connection is opened,
with the kubeconfig's certificate authority alone when it names one, and HTTP is
``kubectl_fluid.kube.http11`` rather than ``http.client`` (whose import costs more than a request).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode, urlsplit

from kubectl_fluid import __version__
from kubectl_fluid.kube import dial, http11, protobuf
from kubectl_fluid.kube.errors import ApiError, BadAnswer, ClientError, Unreachable
from kubectl_fluid.kube.kubeconfig import Access, Credentials
from kubectl_fluid.kube.proxy import proxy_for

if TYPE_CHECKING:
    import ssl

JSON = "application/json"
CHUNK_SIZE = 500  # kubectl's --chunk-size
# A list's metadata (resourceVersion, a continue token of a few hundred bytes) comes first.
HEAD_BYTES = 4096
MERGE_PATCH = "application/merge-patch+json"
USER_AGENT = f"kubectl-fluid/{__version__}"
T = TypeVar("T")


@dataclass(frozen=True)
class ListCodec:
    """How pages of a list are asked for and read: ``head_token`` finds a page's continue token
    without reading its items (so the next page is asked for first), ``page`` reads the page's items
    and token."""

    accept: str
    head_token: Callable[[bytes], str | None]
    page: Callable[[bytes], tuple[list[dict[str, Any]], str | None]]


class Api:
    """Requests by path (paths come from ``kubectl_fluid.kube.resources``)."""

    def __init__(
        self, access: Access, timeout: float | None = 30.0, env: Mapping[str, str] | None = None
    ) -> None:
        self.access = access
        self.timeout = timeout or None
        url = urlsplit(access.server)
        if url.scheme not in ("https", "http") or not url.hostname:
            raise ClientError(f"server {access.server!r} of context {access.context!r} is not an http(s) URL")
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path.rstrip("/")
        self._env = os.environ if env is None else env
        self._proxy = proxy_for(access.server, access.proxy_url, self._env)
        self._conn: http11.Connection | None = None
        self._auth: str | None = None
        self._exec_cache: Credentials | None = None

    # -- requests ----------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> Any:
        """The decoded JSON answer; raises ApiError on a non-2xx status, Unreachable without one."""
        payload = None if body is None else json.dumps(body).encode()
        data = self._call(method, path, params, payload, content_type)
        return _read(decode, data, method, path) if data else None

    def _call(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        payload: bytes | None,
        content_type: str,
        *,
        accept: str = JSON,
    ) -> bytes:
        target, headers = self._head(method, path, params, payload is not None, content_type, accept=accept)
        # A kept-alive connection the server closed meanwhile fails on first use; a GET is safe to send
        # again, anything else is not (it may have been applied).
        attempts = 2 if method == "GET" and self._conn is not None else 1
        for attempt in range(attempts):
            try:
                self._send(method, target, payload, headers)
                status, data = self._receive(method)
                break
            except (BrokenPipeError, ConnectionResetError) as e:  # http11.Disconnected among them
                self.close()
                if attempt + 1 == attempts:
                    raise Unreachable(self.access.server, _reason(e)) from None
            except OSError as e:  # http11.BadResponse and ssl's errors among them
                self.close()
                raise Unreachable(self.access.server, _reason(e)) from None
        if status >= 400:
            raise _api_error(status, data, method, path)
        return data

    def _head(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        has_body: bool,
        content_type: str = JSON,
        *,
        accept: str = JSON,
    ) -> tuple[str, list[tuple[str, str]]]:
        """The request target and headers."""
        target = self._prefix + path + (f"?{urlencode(params)}" if params else "")
        absolute = dial.absolute_form(self._proxy, self._https)
        if absolute:
            # A plain-HTTP request through a proxy names the whole URL (RFC 9112 absolute-form).
            target = f"http://{self._host}:{self._port}{target}"
        headers = [("Accept", accept), ("User-Agent", USER_AGENT)]
        if has_body:
            headers.append(("Content-Type", content_type))
        if absolute and self._proxy is not None and self._proxy.userinfo:
            headers.append(("Proxy-Authorization", _basic(self._proxy.userinfo)))
        auth = self._authorization()
        if auth:
            headers.append(("Authorization", auth))
        headers += self.access.credentials.impersonate.headers()
        return target, headers

    def raw(self, path: str, params: dict[str, str] | None = None) -> bytes:
        """The bytes of a GET whose answer is not JSON (a pod's log); errors as ``request()``'s."""
        return self._call("GET", path, params, None, JSON, accept="*/*")

    def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any] | None:
        """The object at ``path``, or None when it does not exist (a missing *kind* still raises)."""
        try:
            found: dict[str, Any] = self.request("GET", path, params=params)
        except ApiError as e:
            if e.is_missing_object:
                return None
            raise
        return found

    def text(self, path: str, params: dict[str, str] | None = None) -> str:
        """A plain-text answer (a pod's ``/log``, which the server serves as text/plain but answers only
        to an Accept of ``*/*`` or one of its serializers'), decoded as UTF-8, bad bytes replaced."""
        return self._call("GET", path, params, None, JSON, accept="*/*").decode("utf-8", "replace")

    def pages(
        self,
        path: str,
        params: dict[str, str] | None = None,
        *,
        limit: int = CHUNK_SIZE,
        codec: ListCodec | None = None,
    ) -> Generator[list[dict[str, Any]], None, None]:
        """A list's items, ``limit`` at a time, as kubectl reads lists (``--chunk-size``, 500), for
        collections of thousands: each page's request for the next goes out before the page is
        decoded, so the server prepares page N+1 while this process decodes and uses page N (the
        continue token is read from the answer's head, before its items). An expired continue token
        (410) raises as kubectl's does: the pages already given cannot be taken back. ``codec``
        (JSON_LIST by default) says how pages are asked for and read."""
        codec = codec or JSON_LIST
        query = {**(params or {}), "limit": str(limit)}
        data = self._call("GET", path, query, None, JSON, accept=codec.accept)
        pending = False
        try:
            while True:
                token = _read(codec.head_token, data, "GET", path) if data else None
                if token:
                    target, headers = self._head(
                        "GET", path, {**query, "continue": token}, False, accept=codec.accept
                    )
                    try:
                        self._send("GET", target, None, headers)
                    except OSError as e:
                        self.close()
                        raise Unreachable(self.access.server, _reason(e)) from None
                    pending = True
                items, later = _read(codec.page, data, "GET", path) if data else ([], None)
                yield items
                if not pending:
                    # A head of another shape: the token, if any, is in the decoded page.
                    if not later:
                        return
                    data = self._call(
                        "GET", path, {**query, "continue": later}, None, JSON, accept=codec.accept
                    )
                    continue
                try:
                    status, data = self._receive("GET")
                except OSError as e:
                    self.close()
                    raise Unreachable(self.access.server, _reason(e)) from None
                pending = False
                if status >= 400:
                    raise _api_error(status, data, "GET", path)
        finally:
            if pending:
                # Its answer unread, the connection cannot carry another request.
                self.close()

    def list(self, path: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        listed = self.request("GET", path, params=params) or {}
        items: list[dict[str, Any]] = listed.get("items") or []
        return items

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connection --------------------------------------------------------------------------------
    def _send(
        self, method: str, target: str, payload: bytes | None, headers: Sequence[tuple[str, str]]
    ) -> None:
        # A request in absolute form names its host in the URL, and Host repeats it.
        absolute = target.startswith("http://")
        host = urlsplit(target).netloc if absolute else http11.host_header(self._host, self._port)
        self._connection().send(method, target, host, headers, payload)

    def _receive(self, method: str) -> tuple[int, bytes]:
        assert self._conn is not None, "a request is sent before its answer is read"
        response = self._conn.receive(method)
        for warning in response.values("Warning"):
            # The API server's warnings (deprecations, admission warnings) reach the operator as kubectl
            # relays them: ``Warning: <text>`` on stderr.
            sys.stderr.write(f"Warning: {warning_text(warning)}\n")
        if response.will_close:
            self.close()
        return response.status, response.body

    def _connection(self) -> http11.Connection:
        if self._conn is None:
            proxy = self._proxy
            https_hop = self._https or (proxy is not None and proxy.scheme == "https")
            sock = dial.connect(
                self._host,
                self._port,
                https=self._https,
                proxy=proxy,
                context=self._ssl_context() if https_hop else None,
                server_name=self.access.tls_server_name or self._host,
                timeout=self.timeout,
            )
            self._conn = http11.Connection(sock)
        return self._conn

    def _ssl_context(self) -> ssl.SSLContext:
        import ssl

        access = self.access
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if access.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif access.ca_file or access.ca_data:
            # Like kubectl: a cluster's own CA replaces the system roots, it does not add to them.
            try:
                if access.ca_file:
                    ctx.load_verify_locations(cafile=access.ca_file)
                if access.ca_data:
                    ctx.load_verify_locations(cadata=access.ca_data.decode())
            except (OSError, ssl.SSLError, UnicodeDecodeError) as e:
                raise ClientError(
                    f"cannot load the certificate authority of context {access.context!r}: {_reason(e)}"
                ) from None
        else:
            ctx.load_default_certs()
        creds = self._exec_credentials() if access.credentials.exec_config else access.credentials
        if creds.cert_file or creds.cert_data:
            _load_client_cert(ctx, creds, access.context)
        return ctx

    def _authorization(self) -> str | None:
        if self._auth is None:
            creds = self.access.credentials
            if creds.exec_config:
                creds = self._exec_credentials()
            # client-go: a tokenFile's content wins over a token beside it.
            token, where = creds.token, "the kubeconfig's token"
            if creds.token_file:
                try:
                    with open(creds.token_file) as f:
                        token, where = f.read().strip() or token, f"tokenFile {creds.token_file}"
                except OSError as e:
                    raise ClientError(f"cannot read tokenFile {creds.token_file}: {e.strerror}") from None
            if not token and creds.auth_provider is not None:
                from kubectl_fluid.kube import oidc

                token, where = oidc.token(creds.auth_provider, env=self._env), "the oidc auth-provider"
            if token:
                if any(ord(c) < 0x20 or ord(c) == 0x7F for c in token):
                    raise ClientError(
                        f"the bearer token from {where} holds a line break or control character: "
                        "it must be the token alone"
                    )
                self._auth = f"Bearer {token}"
            elif creds.username and creds.password:
                self._auth = _basic(f"{creds.username}:{creds.password}")
            else:
                self._auth = ""
        return self._auth or None

    def _exec_credentials(self) -> Credentials:
        if self._exec_cache is None:
            creds = self.access.credentials
            self._exec_cache = run_exec_plugin(
                creds.exec_config or {}, self.access.context, creds.exec_cluster
            )
        return self._exec_cache


def run_exec_plugin(
    config: Mapping[str, Any], context: str, cluster: Mapping[str, Any] | None = None
) -> Credentials:
    """Credentials from a client-go exec plugin (``ExecCredential`` on stdout). As client-go runs it:
    ``KUBERNETES_EXEC_INFO`` with the cluster when ``provideClusterInfo`` asked for it; the terminal
    (stdin) only when ``interactiveMode`` allows and there is one; the plugin's stderr reaches the
    operator (a prompt, a warning), and its last line names a failure."""
    import subprocess

    api_version = str(config.get("apiVersion") or "client.authentication.k8s.io/v1")
    mode = str(config.get("interactiveMode") or "IfAvailable")
    interactive = mode != "Never" and sys.stdin is not None and sys.stdin.isatty()
    argv = [str(config["command"]), *(str(a) for a in config.get("args") or ())]
    if mode == "Always" and not interactive:
        raise ClientError(
            f"credential plugin {argv[0]} of context {context!r} needs a terminal (interactiveMode: Always) "
            "and standard input is not one"
        )
    env = dict(os.environ)
    for item in config.get("env") or ():
        env[str(item.get("name"))] = str(item.get("value", ""))
    spec: dict[str, Any] = {"interactive": interactive}
    if cluster is not None:
        spec["cluster"] = dict(cluster)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": spec}
    )
    try:
        run = subprocess.run(
            argv,
            env=env,
            stdin=None if interactive else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=None if interactive else subprocess.PIPE,
            text=True,
            timeout=None if interactive else 60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        hint = config.get("installHint") or ""
        raise ClientError(
            f"credential plugin {argv[0]} of context {context!r} failed: {e} {hint}".strip()
        ) from None
    stderr = run.stderr or ""
    if run.returncode != 0:
        detail = (stderr.strip().splitlines() or [f"exit {run.returncode}"])[-1]
        raise ClientError(f"credential plugin {argv[0]} of context {context!r} failed: {detail}")
    if stderr:
        sys.stderr.write(stderr)
    try:
        status = json.loads(run.stdout).get("status") or {}
    except (ValueError, AttributeError):
        raise ClientError(
            f"credential plugin {argv[0]} of context {context!r} printed no ExecCredential"
        ) from None
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    return Credentials(
        token=status.get("token"),
        cert_data=cert.encode() if cert else None,
        key_data=key.encode() if key else None,
    )


def continue_token(data: bytes) -> str | None:
    """``metadata.continue`` of a list's answer, read from its head without decoding its items: the
    API server writes kind, apiVersion and metadata before items. None when there is none or the head
    is of another shape (the decoded page then says)."""
    at = data.find(b'"items":', 0, HEAD_BYTES)
    if at < 0:
        return None
    try:
        head = json.loads(data[:at] + b'"items":[]}')
    except ValueError:
        return None
    token = (head.get("metadata") or {}).get("continue") if isinstance(head, dict) else None
    return token if isinstance(token, str) and token else None


def json_page(data: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """A JSON list answer's items and continue token."""
    page = decode(data) or {}
    token = (page.get("metadata") or {}).get("continue")
    return page.get("items") or [], str(token) if token else None


def pod_page(data: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """A PodList answer in protobuf (pods reduced as ``protobuf.pod_list`` says) or, from a server
    that answered JSON, in JSON."""
    return protobuf.pod_list(data) if protobuf.is_protobuf(data) else json_page(data)


def pod_head_token(data: bytes) -> str | None:
    return protobuf.list_continue(data) if protobuf.is_protobuf(data) else continue_token(data)


JSON_LIST = ListCodec(JSON, continue_token, json_page)
# Pods reduced to names and volumes: for counting thousands of them (see kubectl_fluid.kube.protobuf).
POD_NAMES_AND_VOLUMES = ListCodec(protobuf.ACCEPT, pod_head_token, pod_page)


def decode(data: bytes) -> Any:
    """An answer's JSON, with CPython's cycle collector paused. A list of thousands of objects is
    millions of dicts and lists, and the collector, triggered by allocation counts, rescans all of them
    each time it reaches an older generation: 10,000 injected pods (47 MB) decoded in 1.5-2.0 s with it,
    0.5 s without. Decoded JSON holds no cycles; what was decoded is then frozen (moved out of the
    collector's generations, freed by reference counting as always), else the first collections after
    it pay the same scans (1.2 s measured). This client serves the plugin, a short-lived process."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        decoded = json.loads(data)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    return decoded


def _read(reader: Callable[[bytes], T], data: bytes, method: str, path: str) -> T:
    """``reader``'s reading of a 2xx answer; one that does not decode names the request."""
    try:
        return reader(data)
    except ValueError as e:  # json's, UnicodeDecodeError, protobuf.ProtobufError
        raise BadAnswer(method, path, str(e)) from None


def _basic(userinfo: str) -> str:
    return "Basic " + base64.b64encode(userinfo.encode()).decode()


def warning_text(header: str) -> str:
    """The text of an RFC 7234 ``Warning`` header as the API server sends it: ``299 - "text"``."""
    code, _, rest = header.partition(" ")
    agent, _, text = rest.partition(" ")
    if code.isdigit() and agent and len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    return header


def _load_client_cert(ctx: ssl.SSLContext, creds: Credentials, context: str) -> None:
    """``load_cert_chain`` reads only files; inline ``*-data`` goes through anonymous memory files
    (memfd) where the OS has them, so a private key never touches the disk."""
    import ssl

    try:
        if creds.cert_data or creds.key_data:
            with _memory_file(creds.cert_data or b"") as cert, _memory_file(creds.key_data or b"") as key:
                ctx.load_cert_chain(cert, key if creds.key_data else None)
        else:
            ctx.load_cert_chain(str(creds.cert_file), creds.key_file)
    except (OSError, ssl.SSLError) as e:
        raise ClientError(
            f"cannot load the client certificate of context {context!r}: {_reason(e)}"
        ) from None


@contextlib.contextmanager
def _memory_file(data: bytes) -> Iterator[str]:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kubectl-fluid-credential")
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    import tempfile

    fd, tmp = tempfile.mkstemp()
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield tmp
    finally:
        os.unlink(tmp)


def _api_error(status: int, data: bytes, method: str, path: str) -> ApiError:
    body: Any
    try:
        body = protobuf.status(data) if protobuf.is_protobuf(data) else json.loads(data)
    except ValueError:  # protobuf.ProtobufError among them
        body = None
    if not isinstance(body, dict):
        text = data.decode(errors="replace").strip()[:300] or _phrase(status)
        return ApiError(status, "", text, method=method, path=path)
    return ApiError(
        status,
        str(body.get("reason") or ""),
        str(body.get("message") or ""),
        method=method,
        path=path,
        details=body.get("details"),
    )


def _phrase(status: int) -> str:
    """The standard reason phrase of ``status`` ("Not Found"), "" for a code without one."""
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _reason(e: BaseException) -> str:
    # Only a failure pays for these, and ssl is loaded already if it was TLS that failed.
    import socket
    import ssl

    if isinstance(e, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {e.verify_message}"
    if isinstance(e, TimeoutError):
        return "timed out; see --request-timeout"
    if isinstance(e, socket.gaierror):
        return f"cannot resolve the host name: {e.strerror}"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower() if e.strerror[:1].isupper() else e.strerror
    return str(e) or type(e).__name__
