"""The ``master-addrs`` parameter: ``host:port[,host:port...]``.

Normalised so that spellings of one cluster share one FUSE process and one cluster-id: blanks around
entries dropped, DNS names lower-cased (DNS is case-insensitive), ports without leading zeros, IPv6
addresses in compressed form inside brackets. Order is kept: it is what the FUSE client is given,
and a reordered list is a different, deliberate choice of the operator.

Refused: empty entries (``a:1,,b:2``), a missing or out-of-range port, hosts that are neither an
RFC 1123 DNS name nor an IPv4 address nor a bracketed IPv6 address, IPv6 zone indices (``%eth0``:
meaningless across nodes), and an address listed twice.
"""

from __future__ import annotations

import ipaddress
import re

from csi.model.errors import InvalidParameter
from kubectl_fluid.api import names

_KEY = names.PARAM_MASTER_ADDRS
_DNS_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_DNS_NAME_MAX = 253
_NUMERIC_NAME = re.compile(r"[0-9.]+")
_PORT = re.compile(r"[0-9]{1,5}")
_PORT_MAX = 65535
EXPECTED = "host:port[,host:port...]"


def normalize_master_addrs(value: str) -> str:
    """The canonical form of a ``master-addrs`` value, or InvalidParameter saying what is wrong."""
    if not value.strip():
        raise InvalidParameter(_KEY, f"must not be empty; expected {EXPECTED}")
    seen: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            raise InvalidParameter(_KEY, f"has an empty entry in {value!r}; expected {EXPECTED}")
        address = _normalize_entry(entry)
        if address in seen:
            raise InvalidParameter(_KEY, f"lists {address} twice")
        seen.append(address)
    return ",".join(seen)


def _normalize_entry(entry: str) -> str:
    host, port = _split_entry(entry)
    if not host or port is None:
        raise InvalidParameter(_KEY, f"entry {entry!r} has no port; expected {EXPECTED}")
    return f"{_normalize_host(host, entry)}:{_normalize_port(port, entry)}"


def _split_entry(entry: str) -> tuple[str, str | None]:
    if entry.startswith("[") and "]" in entry:
        # A bracketed IPv6 host holds colons itself: the port follows the closing bracket.
        close = entry.index("]") + 1
        rest = entry[close:]
        return entry[:close], rest[1:] if rest.startswith(":") else None
    host, colon, port = entry.rpartition(":")
    return (host, port) if colon else (entry, None)


def _normalize_port(port: str, entry: str) -> str:
    # A regex, not int(): int() accepts "+1", " 1" and non-ASCII digits.
    if not _PORT.fullmatch(port) or not 1 <= int(port) <= _PORT_MAX:
        raise InvalidParameter(_KEY, f"entry {entry!r} has port {port!r}; a port is 1-{_PORT_MAX}")
    return str(int(port))


def _normalize_host(host: str, entry: str) -> str:
    if host.startswith("[") and host.endswith("]"):
        return f"[{_ipv6(host[1:-1], entry)}]"
    if ":" in host or "[" in host or "]" in host:
        raise InvalidParameter(
            _KEY, f"entry {entry!r}: an IPv6 address is written in brackets, e.g. [fd00::1]:8995"
        )
    return normalize_hostname(host, _KEY, f"entry {entry!r}: ")


def normalize_hostname(host: str, key: str, where: str = "") -> str:
    """A DNS name (lower-cased) or an IPv4 address, or InvalidParameter of ``key``; ``where`` says
    which part of the value is meant."""
    lowered = host.lower()
    # "999.1.1.1" matches the DNS label syntax but is a mistyped address, not a name: a top-level
    # domain is never all-numeric (RFC 3696 §2), so an all-numeric name must be a valid IPv4.
    if _NUMERIC_NAME.fullmatch(lowered):
        try:
            return str(ipaddress.IPv4Address(lowered))
        except ValueError:
            raise InvalidParameter(key, f"{where}{host!r} is not a valid IPv4 address") from None
    labels = lowered.split(".")
    if len(lowered) > _DNS_NAME_MAX or not all(_DNS_LABEL.fullmatch(label) for label in labels):
        raise InvalidParameter(key, f"{where}{host!r} is neither a DNS name nor an IP address")
    return lowered


def master_list(master_addrs: str) -> list[tuple[str, int]]:
    """A canonical ``master-addrs`` value as (host, port) pairs, an IPv6 host without its brackets:
    how Curvine's configuration names its masters."""
    pairs = []
    for entry in master_addrs.split(","):
        host, port = _split_entry(entry)
        pairs.append((host.removeprefix("[").removesuffix("]"), int(port or 0)))
    return pairs


def has_ipv6(master_addrs: str) -> bool:
    """Whether a canonical ``master-addrs`` value names an IPv6 host: curvine-fuse's
    ``--master-addrs`` splits each entry at its first colon and cannot take one."""
    return any(entry.startswith("[") for entry in master_addrs.split(","))


def _ipv6(text: str, entry: str) -> str:
    if "%" in text:
        raise InvalidParameter(_KEY, f"entry {entry!r}: IPv6 zone indices are not supported")
    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        raise InvalidParameter(_KEY, f"entry {entry!r}: {text!r} is not a valid IPv6 address") from None
