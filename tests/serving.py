"""A socketserver run in a daemon thread for the length of a ``with`` block: the loopback peers of
the plugin's tests (API server stand-in, proxies, an OpenID provider, a download server)."""

from __future__ import annotations

import contextlib
import socketserver
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[int]:
    """Serve until the block ends; yields the port it listens on."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])  # type: ignore[index]
    finally:
        server.shutdown()
        server.server_close()
