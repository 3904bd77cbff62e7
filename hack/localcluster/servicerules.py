"""What a cluster's ClusterIP Services are on this host (pure): from its Services and EndpointSlices, the
``iptables-restore --noflush`` input that gives every ClusterIP port a DNAT to its ready endpoints, and
the input that takes it all away again. serviceproxy.py watches the API and applies it.

Why not kube-proxy: two clusters share this host's network namespace with the same Service range
(a test run beside ``make demo``). kube-proxy's iptables mode rewrites the host-wide ``KUBE-SERVICES``
chain whole at every sync and deletes every ``KUBE-SVC-``/``KUBE-SEP-`` chain it did not write, so two
of them erase each other's Services; its nftables mode owns one table, ``kube-proxy``, by a constant
name. Neither name is a setting, so not even per-cluster Service ranges would keep them apart.

Everything here is the cluster's own, named from its tag (the 6 hex digits of its bridges'
``kf{tag}{index}``, realnodes.plan):

- nat ``KF-SVC-{tag}``, jumped to from PREROUTING by packets that come in on the cluster's bridges only
  (``-i kf{tag}+``): one rule per ClusterIP port with ready endpoints, to that port's chain
  ``KF-SVC-{tag}-{hash}``, which spreads new connections over the endpoints (``statistic --mode
  random``, 1/n, 1/(n-1) … 1, as kube-proxy does) and DNATs to them. No masquerade: the pod behind the
  Service sees the client's own address.
- filter ``KF-SVC-{tag}``, in FORWARD for the same bridges, ahead of their nodes' own chains: a
  ClusterIP port without ready endpoints is refused at once (REJECT, icmp-port-unreachable, as
  kube-proxy does) rather than dropped by the node's own FORWARD chain (podnetwork.py) after the
  client's connect timeout.

Not answered: ``default/kubernetes`` (each node's own DNAT to the API server on loopback,
realnodes.service_rules), headless and ExternalName Services, SCTP, NodePort, LoadBalancer and
external IPs, sessionAffinity, traffic policies, terminating endpoints, IPv6.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# iptables refuses a chain name of 29 characters or more.
MAX_CHAIN = 28
TAG = re.compile(r"[0-9a-f]{6}")
PROTOCOLS = ("TCP", "UDP")
# Answered by each node's own rule (realnodes.service_rules), never here.
SKIPPED = frozenset({("default", "kubernetes")})
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# (table, the hook chain our jump sits in, whether it must come before the cluster's nodes' own jumps).
NAT = ("nat", "PREROUTING", False)
# Ahead: a node's own FORWARD chain (podnetwork.py) drops what is not for a pod. Only the cluster's own
# nodes: another cluster's rules match other bridges, so where they stand makes no difference (and two
# proxies that each wanted to be first would take turns moving).
FILTER = ("filter", "FORWARD", True)


@dataclass(frozen=True)
class ServicePort:
    """One port of one ClusterIP Service, and the ready endpoints behind it (``ip:port``, sorted)."""

    namespace: str
    name: str
    port_name: str
    protocol: str  # TCP or UDP
    cluster_ip: str
    port: int
    endpoints: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.name}:{self.port_name or self.port}"


@dataclass(frozen=True)
class Saved:
    """What ``iptables-save -t TABLE`` shows of ours: the cluster's chains in the table, and the hook
    chain's rules in order (as iptables-save prints them), to find our jump among them."""

    chains: frozenset[str] = frozenset()
    hook_rules: tuple[str, ...] = ()


# ---------------------------------------------------------------- names


def entry_chain(tag: str) -> str:
    if not TAG.fullmatch(tag):
        # A shorter tag's ``kf{tag}+`` would match another cluster's bridges.
        raise ValueError(f"a cluster's tag is 6 hex digits, not {tag!r}")
    return f"KF-SVC-{tag}"


def port_chain(tag: str, port: ServicePort) -> str:
    """``KF-SVC-{tag}-`` and 14 base32 characters of the port's identity: 28 characters."""
    identity = f"{port.namespace}/{port.name}:{port.port_name}/{port.protocol}".encode()
    digest = base64.b32encode(hashlib.sha256(identity).digest()).decode()
    return f"{entry_chain(tag)}-{digest[: MAX_CHAIN - len(entry_chain(tag)) - 1]}"


def bridges(tag: str) -> str:
    """The cluster's bridges as ``-i`` matches them: every ``kf{tag}{index}`` and nothing else."""
    return f"kf{tag}+"


def ours(tag: str, chain: str) -> bool:
    entry = entry_chain(tag)
    return chain == entry or chain.startswith(f"{entry}-")


# ---------------------------------------------------------------- from the API's objects


def service_ports(
    services: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]]
) -> list[ServicePort]:
    """Every TCP and UDP port of every ClusterIP Service but default/kubernetes, with the ready IPv4
    endpoints the Service's EndpointSlices list for it (by port name and protocol)."""
    ready: dict[tuple[str, str, str, str], set[str]] = {}
    for s in slices:
        meta = s.get("metadata", {})
        service = meta.get("labels", {}).get(SERVICE_NAME_LABEL)
        if not service or s.get("addressType") != "IPv4":
            continue
        addresses = [
            e["addresses"][0]
            for e in s.get("endpoints") or []
            # nil is ready, as the API says and kube-proxy reads it.
            if e.get("addresses") and (e.get("conditions") or {}).get("ready", True) is not False
        ]
        for p in s.get("ports") or []:
            if p.get("port") is None:
                continue
            key = (meta.get("namespace", ""), service, p.get("name") or "", p.get("protocol") or "TCP")
            ready.setdefault(key, set()).update(f"{a}:{p['port']}" for a in addresses)
    found = []
    for svc in services:
        meta, spec = svc.get("metadata", {}), svc.get("spec", {})
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        ip = spec.get("clusterIP")
        if (namespace, name) in SKIPPED or not ip or ip == "None" or ":" in ip:
            continue
        for p in spec.get("ports") or []:
            protocol = p.get("protocol") or "TCP"
            if protocol not in PROTOCOLS:
                continue
            port_name = p.get("name") or ""
            endpoints = tuple(sorted(ready.get((namespace, name, port_name, protocol), set())))
            found.append(ServicePort(namespace, name, port_name, protocol, ip, int(p["port"]), endpoints))
    return sorted(found, key=lambda p: (p.namespace, p.name, p.port_name, p.protocol))


# ---------------------------------------------------------------- iptables-restore input


def rules(
    services: Iterable[Mapping[str, Any]],
    slices: Iterable[Mapping[str, Any]],
    tag: str,
    nat: Saved = Saved(),
    filt: Saved = Saved(),
) -> str:
    """The ``iptables-restore --noflush`` input for the cluster's Services: its chains declared (which
    flushes them), filled, the chains of ours it no longer needs removed (a Service gone, or a set
    left by a proxy killed -9), and exactly one jump to each entry chain, where it must be."""
    ports = service_ports(services, slices)
    return nat_table(ports, tag, nat) + filter_table(ports, tag, filt)


def nat_table(ports: Sequence[ServicePort], tag: str, saved: Saved) -> str:
    entry = entry_chain(tag)
    served = [p for p in ports if p.endpoints]
    chains = [entry, *(port_chain(tag, p) for p in served)]
    body = []
    for p in served:
        chain, proto = port_chain(tag, p), p.protocol.lower()
        body.append(f"-A {entry} {_match(p)} -m comment --comment {_quoted(p.label)} -j {chain}")
        for i, endpoint in enumerate(p.endpoints):
            left = len(p.endpoints) - i
            # Each rule takes 1/left of what the rules before it let through: 1/n for every endpoint.
            spread = f"-m statistic --mode random --probability {1 / left:.10f} " if left > 1 else ""
            body.append(f"-A {chain} -p {proto} {spread}-j DNAT --to-destination {endpoint}")
    return _table(NAT, tag, chains, body, saved)


def filter_table(ports: Sequence[ServicePort], tag: str, saved: Saved) -> str:
    entry = entry_chain(tag)
    body = [
        f"-A {entry} {_match(p)} -m comment --comment {_quoted(p.label + ' has no ready endpoints')} "
        "-j REJECT --reject-with icmp-port-unreachable"
        for p in ports
        if not p.endpoints
    ]
    return _table(FILTER, tag, [entry], body, saved)


def removal(tag: str, nat: Saved, filt: Saved) -> str:
    """The input that removes every chain of ours and every jump to them (``""`` when there are none)."""
    text = ""
    for (table, _, _), saved in ((NAT, nat), (FILTER, filt)):
        jumps = _jumps(saved, tag)
        if not saved.chains and not jumps:
            continue
        chains = sorted(saved.chains)
        lines = [f"*{table}", *(f":{c} - [0:0]" for c in chains)]
        lines += [_deletion(line) for line in jumps]
        lines += [f"-X {c}" for c in chains]
        text += "\n".join([*lines, "COMMIT"]) + "\n"
    return text


def from_save(text: str, tag: str, hook: str) -> Saved:
    """The part of one table's ``iptables-save`` output ``rules`` and ``removal`` need."""
    chains, hook_rules = set(), []
    for line in text.splitlines():
        if line.startswith(":") and ours(tag, line[1:].split()[0]):
            chains.add(line[1:].split()[0])
        elif line.startswith(f"-A {hook} "):
            hook_rules.append(line)
    return Saved(frozenset(chains), tuple(hook_rules))


def _table(kind: tuple[str, str, bool], tag: str, chains: list[str], body: list[str], saved: Saved) -> str:
    table, hook, ahead = kind
    stale = sorted(c for c in saved.chains if c not in chains)
    lines = [f"*{table}", *(f":{c} - [0:0]" for c in [*chains, *stale]), *body]
    lines += [f"-X {c}" for c in stale]
    lines += _jump_fix(saved, tag, hook, ahead)
    return "\n".join([*lines, "COMMIT"]) + "\n"


def _jump_fix(saved: Saved, tag: str, hook: str, ahead: bool) -> list[str]:
    """Nothing when the hook already holds exactly one jump of ours (ahead of the cluster's nodes' own,
    where it must be); otherwise every one there is deleted and one added, first."""
    at = [i for i, line in enumerate(saved.hook_rules) if _is_jump(line, tag)]
    nodes = [i for i, line in enumerate(saved.hook_rules) if _NODE_JUMP.format(tag=tag) in line]
    if len(at) == 1 and not (ahead and nodes and min(nodes) < at[0]):
        return []
    spec = f"-i {bridges(tag)} -j {entry_chain(tag)}"
    add = f"-I {hook} 1 {spec}" if ahead else f"-A {hook} {spec}"
    return [*(_deletion(saved.hook_rules[i]) for i in at), add]


# A node's own jump (realnodes, podnetwork): ``-i kf{tag}{index} -j KF-kf{tag}{index}``.
_NODE_JUMP = "-j KF-kf{tag}"


def _jumps(saved: Saved, tag: str) -> list[str]:
    return [line for line in saved.hook_rules if _is_jump(line, tag)]


def _is_jump(line: str, tag: str) -> bool:
    return line.split()[-2:] == ["-j", entry_chain(tag)]


def _deletion(saved_rule: str) -> str:
    # iptables-save prints a rule as its own ``-A`` command; the same words with ``-D`` delete it.
    return "-D" + saved_rule[2:]


def _match(p: ServicePort) -> str:
    proto = p.protocol.lower()
    return f"-d {p.cluster_ip}/32 -p {proto} -m {proto} --dport {p.port}"


def _quoted(text: str) -> str:
    # Object names are DNS labels; a port name too: nothing in them needs escaping but the quotes.
    return '"' + text.replace('"', "") + '"'
