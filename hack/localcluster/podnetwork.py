"""Pods of one node reaching pods of another (realnodes.py): every real node of a cluster has a bridge
and a /24 of this host's network namespace, carved from the cluster's /16 (``pod_range``). A pod routes
that /16 to its bridge's host address, and the host forwards between the cluster's bridges, as a
cluster's network forwards between its nodes.

The forwarding is turned on per bridge (``net.ipv4.conf.{bridge}.forwarding``), never host-wide: the
kernel asks the interface a packet came in on, so this host still forwards nothing that arrives on any
other interface. A filter chain of each node's own lets its pods' packets through to the cluster's
/16 only: nothing a pod sends leaves this machine (no default route, no masquerade, and a pod that
made a route of its own would still be dropped here) or reaches another cluster's pods on this host.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Protocol

# The node's /24 is the third octet of its cluster's /16 (realnodes.plan).
RANGE_PREFIX = 16


class Bridged(Protocol):
    @property
    def bridge(self) -> str: ...

    @property
    def subnet(self) -> str: ...

    @property
    def name(self) -> str: ...


def pod_range(node: Bridged) -> str:
    """The cluster's pod addresses, every node's /24 of it: ``10.X.0.0/16`` for ``10.X.N.0/24``."""
    return str(ipaddress.ip_network(node.subnet).supernet(new_prefix=RANGE_PREFIX))


def chain(node: Bridged) -> str:
    # The same name as the node's nat and raw chains (realnodes.chain): chains are per table.
    return f"KF-{node.bridge}"


def forward_rules(node: Bridged) -> list[list[str]]:
    """iptables arguments: what the node's pods send through this host goes to the cluster's pods or
    nowhere. The Service range is rewritten before this (nat PREROUTING), so a Service's packets are
    judged by the pod they go to."""
    return [
        ["-t", "filter", "-N", chain(node)],
        ["-t", "filter", "-A", chain(node), "-d", pod_range(node),
         "-m", "comment", "--comment", f"kubectl-fluid {node.name}: to the cluster's pods",
         "-j", "ACCEPT"],
        ["-t", "filter", "-A", chain(node),
         "-m", "comment", "--comment", f"kubectl-fluid {node.name}: nothing else leaves the node's pods",
         "-j", "DROP"],
        ["-t", "filter", "-I", "FORWARD", "-i", node.bridge, "-j", chain(node)],
    ]  # fmt: skip


def forward_removal(node: Bridged) -> list[list[str]]:
    return [
        ["-t", "filter", "-D", "FORWARD", "-i", node.bridge, "-j", chain(node)],
        ["-t", "filter", "-F", chain(node)],
        ["-t", "filter", "-X", chain(node)],
    ]


def forwarding_switch(bridge: str) -> Path:
    return Path(f"/proc/sys/net/ipv4/conf/{bridge}/forwarding")


def enable_forwarding(bridge: str) -> None:
    """Forward what comes in on this bridge only (the module's docstring)."""
    forwarding_switch(bridge).write_text("1\n")
