"""The plugin's HTTP/1.1 over a socket pair: what goes out, and every way an answer's body is framed."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from kubectl_fluid.kube import http11


@pytest.fixture
def pair() -> Iterator[tuple[http11.Connection, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(5)
    theirs.settimeout(5)
    conn = http11.Connection(ours)
    yield conn, theirs
    conn.close()
    theirs.close()


def received(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    return data


def test_the_request_as_sent(pair: tuple[http11.Connection, socket.socket]) -> None:
    conn, server = pair
    server.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    headers = [("Impersonate-Group", "a"), ("Impersonate-Group", "b")]
    response = conn.exchange("PATCH", "/x?y=1", "10.0.0.1:6443", headers, b'{"a":1}')
    head, _, body = received(server).partition(b"\r\n\r\n")
    assert head.split(b"\r\n") == [
        b"PATCH /x?y=1 HTTP/1.1",
        b"Host: 10.0.0.1:6443",
        b"Accept-Encoding: identity",
        b"Impersonate-Group: a",
        b"Impersonate-Group: b",
        b"Content-Length: 7",
    ]
    assert body == b'{"a":1}'
    assert (response.status, response.body, response.will_close) == (200, b"{}", False)


@pytest.mark.parametrize(
    ("answer", "body", "will_close"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello", False),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n",
            b"hello world",
            False,
        ),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", b"", False),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", b"ok", True),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok", True),
        (b"HTTP/1.1 200 OK\r\n\r\nto the end", b"to the end", True),
    ],
)
def test_bodies_by_their_framing(
    pair: tuple[http11.Connection, socket.socket], answer: bytes, body: bytes, will_close: bool
) -> None:
    conn, server = pair
    server.sendall(answer)
    if answer.endswith(b"to the end"):
        server.shutdown(socket.SHUT_WR)
    response = conn.exchange("GET", "/", "h", [], None)
    assert (response.body, response.will_close) == (body, will_close)


def test_repeated_headers_are_all_kept(pair: tuple[http11.Connection, socket.socket]) -> None:
    conn, server = pair
    server.sendall(
        b'HTTP/1.1 200 OK\r\nWarning: 299 - "a"\r\nwarning: 299 - "b"\r\nContent-Length: 0\r\n\r\n'
    )
    assert conn.exchange("GET", "/", "h", [], None).values("Warning") == ['299 - "a"', '299 - "b"']


def test_a_connection_closed_without_an_answer_is_disconnected(
    pair: tuple[http11.Connection, socket.socket],
) -> None:
    conn, server = pair
    server.shutdown(socket.SHUT_WR)
    with pytest.raises(http11.Disconnected):
        conn.exchange("GET", "/", "h", [], None)


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
    ],
)
def test_what_is_not_http_is_a_bad_response(
    pair: tuple[http11.Connection, socket.socket], answer: bytes
) -> None:
    conn, server = pair
    server.sendall(answer)
    server.shutdown(socket.SHUT_WR)
    with pytest.raises(http11.BadResponse):
        conn.exchange("GET", "/", "h", [], None)


def test_host_header_as_http_client_wrote_it() -> None:
    assert http11.host_header("example.com", 80) == "example.com"
    assert http11.host_header("10.0.0.1", 443) == "10.0.0.1:443"
    assert http11.host_header("::1", 6443) == "[::1]:6443"
