"""Where a cluster's masters are now: the addresses their names resolve to.

The controller's mount of a cluster (csi/backends/curvinebackend.py) connected to the masters where
they were when it started. When a master's pod is replaced it comes back at another address under the
same name, and curvine-fuse keeps its connection to the old one, answering nothing until its
``rpc-timeout-ms`` (120 s by default) has passed. So a mount whose masters now resolve elsewhere is
replaced before it is used. A name that does not resolve tells nothing (DNS away for a moment, a
master not back yet): the mount is kept, and the backend's deadline catches one that stopped answering.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

# A lookup slower than this tells nothing; the mount is used as it is.
RESOLVE_TIMEOUT = 2.0

# ``host=address`` for every address of every master; empty when one of them did not resolve.
Resolved = frozenset[str]
Resolver = Callable[[str], Awaitable[Resolved]]


def masters(master_addrs: str) -> list[tuple[str, int]]:
    """(host, port) of each entry of a canonical ``master-addrs`` (csi/model/addresses.py), an IPv6
    host without its brackets."""
    found = []
    for entry in master_addrs.split(","):
        host, _, port = entry.rpartition(":")
        found.append((host.removeprefix("[").removesuffix("]"), int(port)))
    return found


def resolve_now(master_addrs: str) -> Resolved:
    """The masters' addresses (blocking: the resolver's own timeouts)."""
    found: set[str] = set()
    for host, port in masters(master_addrs):
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return frozenset()
        found.update(f"{host}={info[4][0]}" for info in infos)
    return frozenset(found)


async def resolve(master_addrs: str) -> Resolved:
    """``resolve_now`` in a thread, empty after ``RESOLVE_TIMEOUT`` (the lookup ends on its own)."""
    lookup = asyncio.ensure_future(asyncio.to_thread(resolve_now, master_addrs))
    done, _ = await asyncio.wait([lookup], timeout=RESOLVE_TIMEOUT)
    if not done:
        lookup.add_done_callback(lambda f: f.cancelled() or f.exception())
        return frozenset()
    return lookup.result()


def moved(at_mount: Resolved, now: Resolved) -> bool:
    """Whether the masters resolve elsewhere than when the mount started: only when both lookups
    answered (an empty one tells nothing)."""
    return bool(at_mount) and bool(now) and at_mount != now
