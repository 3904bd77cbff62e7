"""The pod network across a cluster's real nodes (hack/localcluster/podnetwork.py): what each node's
pods may send through this host."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster import podnetwork, realnodes

PORTS = {"kubelet": 41001, "healthz": 41002}


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet="abcdefgh/", min_size=1, max_size=40), st.integers(min_value=0, max_value=9))
def test_every_node_of_a_cluster_has_a_24_of_one_16_and_two_clusters_differ_by_state_dir(
    tail: str, index: int
) -> None:
    state = Path("/tmp") / tail.strip("/")
    first, this = (realnodes.plan(state, i, PORTS, "192.0.2.2") for i in (0, index))
    assert podnetwork.pod_range(first) == podnetwork.pod_range(this)
    assert ipaddress.ip_network(this.subnet).subnet_of(ipaddress.ip_network(podnetwork.pod_range(this)))  # type: ignore[arg-type]
    if index:
        assert not ipaddress.ip_network(this.subnet).overlaps(ipaddress.ip_network(first.subnet))


def test_a_nodes_pods_send_through_this_host_to_the_clusters_pods_and_nowhere_else(tmp_path: Path) -> None:
    a, b = (realnodes.plan(tmp_path / d, i, PORTS, "192.0.2.2") for i, d in enumerate("ab"))
    add = podnetwork.forward_rules(a)
    assert all(rule[:2] == ["-t", "filter"] for rule in add)
    # Made before the jump; entered by this bridge's packets only, ahead of any rule of the host's.
    assert add[0] == ["-t", "filter", "-N", podnetwork.chain(a)]
    assert add[-1] == ["-t", "filter", "-I", "FORWARD", "-i", a.bridge, "-j", podnetwork.chain(a)]
    body = [r for r in add if r[2:4] == ["-A", podnetwork.chain(a)]]
    accept, drop = body
    assert accept[accept.index("-d") + 1] == podnetwork.pod_range(a)
    assert accept[-1] == "ACCEPT"
    # The last word: everything else, whatever its destination (the outside, another cluster).
    assert drop[-1] == "DROP"
    assert "-d" not in drop
    assert podnetwork.chain(a) != podnetwork.chain(b)
    assert podnetwork.forward_removal(a) == [
        ["-t", "filter", "-D", "FORWARD", "-i", a.bridge, "-j", podnetwork.chain(a)],
        ["-t", "filter", "-F", podnetwork.chain(a)],
        ["-t", "filter", "-X", podnetwork.chain(a)],
    ]


def test_forwarding_is_switched_on_for_the_bridge_alone() -> None:
    assert podnetwork.forwarding_switch("kfabc1230") == Path("/proc/sys/net/ipv4/conf/kfabc1230/forwarding")
