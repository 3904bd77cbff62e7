"""Serve rotated certificate files without a restart (SPEC §4, TLS).

An ``SSLContext`` hands its certificate to each connection when the connection is set up, so loading a
new pair into the live context changes what every later handshake serves; connections already open
keep theirs. The catch is ``load_cert_chain`` itself: OpenSSL installs the certificate first and, when
the key then fails to load or does not match, the context is left with the new certificate and no
usable key, and every handshake fails. So a pair is first tried on a scratch context, and the live one
only ever loads bytes that just loaded cleanly there: a half-rotated or broken pair leaves the served
one in place.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

# What changes when a file is rewritten in place (mtime, size) or replaced by rename or by the kubelet's
# symlink swap of a mounted Secret (inode; stat follows the symlink).
Signature = tuple[tuple[int, int, int, int], ...]


class CertReloader:
    """Keeps ``ssl_context`` serving the pair in ``cert_file``/``key_file``. The constructor loads it
    once and raises when it cannot: a server without a certificate must not start."""

    def __init__(
        self, ssl_context: ssl.SSLContext, cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]
    ) -> None:
        self.ssl_context = ssl_context
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.reloads = 0  # how many times a new pair went live after the first; tests and metrics read it
        self._loaded: Signature | None = None
        self._rejected: Signature | None = None
        signature = self._signature()
        self._load(self.cert_file.read_bytes(), self.key_file.read_bytes())
        self._loaded = signature

    def maybe_reload(self) -> bool:
        """Load the files into the context if they changed since the last load; True when a new pair
        went live. A pair that does not load is logged once and skipped until the files change again.

        Call it on the thread that accepts connections (the event loop, as ``watch`` does), so no
        handshake starts while the context is between certificate and key."""
        try:
            signature = self._signature()
            if signature in (self._loaded, self._rejected):
                return False
            cert, key = self.cert_file.read_bytes(), self.key_file.read_bytes()
            # Re-stat: a rename between the stat and the reads would otherwise be remembered as seen.
            if self._signature() != signature:
                return False
        except OSError as e:
            log.warning("certificate files unreadable, still serving the previous pair: %s", e)
            return False
        try:
            self._load(cert, key)
        except (ssl.SSLError, OSError, ValueError) as e:
            self._rejected = signature
            log.warning(
                "new certificate pair does not load, still serving the previous one: %s",
                e,
                extra={"cert_file": str(self.cert_file), "key_file": str(self.key_file)},
            )
            return False
        self._loaded, self._rejected = signature, None
        self.reloads += 1
        log.info("serving a new certificate", extra={"cert_file": str(self.cert_file)})
        return True

    async def watch(self, period: float = 1.0) -> None:
        """Check every ``period`` seconds, forever. Cancel the task to stop."""
        while True:
            await asyncio.sleep(period)
            self.maybe_reload()

    def _signature(self) -> Signature:
        stats = (os.stat(self.cert_file), os.stat(self.key_file))
        return tuple((s.st_mtime_ns, s.st_size, s.st_ino, s.st_dev) for s in stats)

    def _load(self, cert: bytes, key: bytes) -> None:
        # load_cert_chain reads only paths: private copies make the scratch and the live context load
        # the very same bytes, whatever happens to the real files meanwhile.
        with _as_paths(cert, key) as (cert_path, key_path):
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_path, key_path)
            self.ssl_context.load_cert_chain(cert_path, key_path)


@contextmanager
def _as_paths(*contents: bytes) -> Iterator[list[str]]:
    """Paths that read as ``contents``. On Linux anonymous memory files: the key touches no disk and a
    read-only root filesystem is fine. Elsewhere files in a private temporary directory."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds: list[int] = []
        try:
            for content in contents:
                fds.append(os.memfd_create("fluid-tls", os.MFD_CLOEXEC))
                view = memoryview(content)
                while view:
                    view = view[os.write(fds[-1], view) :]
            yield [f"/proc/self/fd/{fd}" for fd in fds]
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="fluid-tls-") as tmp:  # mode 0700
        paths = [os.path.join(tmp, str(i)) for i in range(len(contents))]
        for path, content in zip(paths, contents, strict=True):
            Path(path).write_bytes(content)
        yield paths
