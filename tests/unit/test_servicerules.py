"""A cluster's ClusterIP Services as iptables rules (hack/localcluster/servicerules.py), applied to a
model of this host's tables by a small iptables-restore of the test's own, then walked by packets: every
ready endpoint is reached and nothing else, no other cluster's bridge enters the chains, the names are
bounded and distinct, and writing again, over a set left behind, or taking it away leaves the rest of
the host as it was."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster import servicerules

TAG, OTHER = "abc123", "abc124"
Tables = dict[str, dict[str, list[list[str]]]]


# ---------------------------------------------------------------- a model of the host's tables


def host() -> Tables:
    """The hooks, with rules of others in them: a node's own chains (inserted first, as realnodes and
    podnetwork do) and another cluster's Service jump."""
    return {
        "nat": {
            "PREROUTING": [
                ["-i", "kfabc1230", "-j", "KF-kfabc1230"],
                ["-i", f"kf{OTHER}+", "-j", f"KF-SVC-{OTHER}"],
            ],
            "KF-kfabc1230": [["-d", "10.96.0.1/32", "-p", "tcp", "--dport", "443", "-j", "DNAT"]],
            f"KF-SVC-{OTHER}": [["-d", "10.96.0.10/32", "-p", "tcp", "--dport", "80", "-j", "DNAT"]],
        },
        "filter": {
            "FORWARD": [["-i", "kfabc1230", "-j", "KF-kfabc1230"]],
            "KF-kfabc1230": [["-d", "10.1.0.0/16", "-j", "ACCEPT"], ["-j", "DROP"]],
        },
    }


BUILTIN = {"PREROUTING", "FORWARD", "INPUT", "OUTPUT", "POSTROUTING"}


def restore(tables: Tables, text: str) -> None:
    """``iptables-restore --noflush``: a chain line makes or flushes, ``-D`` must find its rule, ``-X``
    its chain unreferenced; a failure fails the test."""
    table = ""
    for line in text.splitlines():
        words = line.split()
        if line.startswith("*"):
            table = line[1:]
        elif line == "COMMIT":
            table = ""
        elif line.startswith(":"):
            tables[table][words[0][1:]] = []
        elif words[0] == "-A":
            tables[table][words[1]].append(unquoted(words[2:]))
        elif words[0] == "-I":
            tables[table][words[1]].insert(int(words[2]) - 1, unquoted(words[3:]))
        elif words[0] == "-D":
            tables[table][words[1]].remove(unquoted(words[2:]))
        elif words[0] == "-X":
            assert not any(r[-1] == words[1] for rules in tables[table].values() for r in rules), line
            del tables[table][words[1]]
        else:
            raise AssertionError(f"unexpected line {line!r}")


def unquoted(words: list[str]) -> list[str]:
    # The comments' words: the model keeps them apart from the matches (only -i -d -p --dport match).
    return [w.strip('"') for w in words]


def save(tables: Tables, table: str) -> str:
    lines = [f"*{table}"] + [f":{c} {'ACCEPT' if c in BUILTIN else '-'} [0:0]" for c in tables[table]]
    lines += [f"-A {c} {' '.join(r)}" for c, rules in tables[table].items() for r in rules]
    return "\n".join([*lines, "COMMIT"]) + "\n"


def current(tables: Tables, tag: str = TAG) -> tuple[servicerules.Saved, servicerules.Saved]:
    return (
        servicerules.from_save(save(tables, "nat"), tag, "PREROUTING"),
        servicerules.from_save(save(tables, "filter"), tag, "FORWARD"),
    )


def walk(
    tables: Tables, table: str, chain: str, packet: dict[str, Any], share: float = 1.0
) -> dict[str, float]:
    """Where a packet ends, with what probability: ``DNAT ip:port``, ``REJECT``, ... or ``on`` (no
    verdict of the chains walked: it goes on past them)."""
    ends: dict[str, float] = {}
    for rule in tables[table][chain]:
        if share <= 1e-12 or not matches(rule, packet):
            continue
        p = float(rule[rule.index("--probability") + 1]) if "--probability" in rule else 1.0
        target = rule[rule.index("-j") + 1]
        taken = share * p
        if target in tables[table]:
            below = walk(tables, table, target, packet, taken)
            taken -= below.pop("on", 0.0)
            for end, q in below.items():
                ends[end] = ends.get(end, 0.0) + q
        else:
            end = (
                f"DNAT {rule[rule.index('--to-destination') + 1]}"
                if target == "DNAT" and "--to-destination" in rule
                else target
            )
            ends[end] = ends.get(end, 0.0) + taken
        share -= taken
    ends["on"] = ends.get("on", 0.0) + share
    return ends


def matches(rule: list[str], packet: dict[str, Any]) -> bool:
    def given_(flag: str) -> str | None:
        return rule[rule.index(flag) + 1] if flag in rule else None

    iface = given_("-i")
    if iface is not None and not (
        packet["iface"].startswith(iface[:-1]) if iface.endswith("+") else packet["iface"] == iface
    ):
        return False
    dst = given_("-d")
    if dst is not None and ipaddress.ip_address(packet["dst"]) not in ipaddress.ip_network(dst):
        return False
    proto = given_("-p")
    if proto is not None and proto != packet["proto"]:
        return False
    dport = given_("--dport")
    return dport is None or int(dport) == packet["port"]


# ---------------------------------------------------------------- the API's objects, generated

names = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Services (ClusterIP, some headless) with TCP/UDP ports, and EndpointSlices of ready and
    not-ready endpoints, split over up to two slices per Service."""
    keys = draw(st.lists(st.tuples(names, names), min_size=1, max_size=5, unique=True))
    ips = draw(st.lists(st.integers(2, 60000), min_size=len(keys), max_size=len(keys), unique=True))
    services, slices = [], []
    for (ns, name), n in zip(keys, ips, strict=True):
        headless = draw(st.booleans()) and draw(st.booleans())
        ports = draw(
            st.lists(
                st.tuples(st.sampled_from(["TCP", "UDP"]), st.integers(1, 65535)),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        named = [{"name": f"p{i}", "protocol": proto, "port": port} for i, (proto, port) in enumerate(ports)]
        cluster_ip = "None" if headless else str(ipaddress.ip_address("10.96.0.0") + n)
        services.append(
            {"metadata": {"namespace": ns, "name": name}, "spec": {"clusterIP": cluster_ip, "ports": named}}
        )
        for part in range(draw(st.integers(0, 2))):
            hosts = draw(st.lists(st.integers(2, 250), max_size=4, unique=True))
            readiness = [draw(st.sampled_from([{"ready": True}, {"ready": False}, {}])) for _ in hosts]
            # {}: a nil ready, which counts as ready.
            endpoints = [
                {"addresses": [f"10.1.{part}.{h}"], "conditions": ready}
                for h, ready in zip(hosts, readiness, strict=True)
            ]
            targets = [
                {"name": p["name"], "protocol": p["protocol"], "port": 8000 + i} for i, p in enumerate(named)
            ]
            slices.append(endpoint_slice(ns, f"{name}-{part}", name, targets, *endpoints))
    return services, slices


def endpoint_slice(
    ns: str,
    name: str,
    service: str,
    ports: list[dict[str, Any]],
    *endpoints: dict[str, Any],
    family: str = "IPv4",
) -> dict[str, Any]:
    labels = {servicerules.SERVICE_NAME_LABEL: service}
    return {
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "addressType": family,
        "ports": ports,
        "endpoints": list(endpoints),
    }


def expected(
    services: list[dict[str, Any]], slices: list[dict[str, Any]]
) -> dict[tuple[str, str, int], set[str]]:
    """(ClusterIP, protocol, port) → the ready endpoints, straight from the objects."""
    out: dict[tuple[str, str, int], set[str]] = {}
    for svc in services:
        if svc["spec"]["clusterIP"] == "None":
            continue
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        for port in svc["spec"]["ports"]:
            ready = {
                f"{e['addresses'][0]}:{p['port']}"
                for s in slices
                if s["metadata"]["namespace"] == ns
                and s["metadata"]["labels"][servicerules.SERVICE_NAME_LABEL] == name
                for p in s["ports"]
                if p["name"] == port["name"]
                for e in s["endpoints"]
                if e["conditions"].get("ready", True)
            }
            out[(svc["spec"]["clusterIP"], port["protocol"].lower(), port["port"])] = ready
    return out


# ---------------------------------------------------------------- the invariants


@settings(max_examples=150, deadline=None)
@given(clusters(), st.integers(0, 9))
def test_every_ready_endpoint_is_reached_evenly_and_a_port_without_one_is_refused(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]]], index: int
) -> None:
    services, slices = cluster
    tables = host()
    restore(tables, servicerules.rules(services, slices, TAG, *current(tables)))
    for (ip, proto, port), ready in expected(services, slices).items():
        packet = {"iface": f"kf{TAG}{index}", "dst": ip, "proto": proto, "port": port}
        nat = walk(tables, "nat", "PREROUTING", packet)
        verdict = walk(tables, "filter", "FORWARD", packet)
        if ready:
            assert set(nat) - {"on"} == {f"DNAT {e}" for e in ready}
            assert nat.get("on", 0.0) == pytest.approx(0.0, abs=1e-9)
            for end in ready:
                assert nat[f"DNAT {end}"] == pytest.approx(1 / len(ready))
        else:
            assert nat == {"on": pytest.approx(1.0)}
            # Refused before the node's own chain drops it.
            assert verdict == {"REJECT": pytest.approx(1.0), "on": pytest.approx(0.0)}


@settings(max_examples=100, deadline=None)
@given(clusters(), st.integers(0, 9), st.from_regex(r"[0-9a-f]{6}", fullmatch=True))
def test_no_other_clusters_bridge_enters_the_chains(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]]], index: int, other: str
) -> None:
    services, slices = cluster
    tables = host()
    before = {t: {c: list(r) for c, r in chains.items()} for t, chains in tables.items()}
    restore(tables, servicerules.rules(services, slices, TAG, *current(tables)))
    if other == TAG:
        return
    for ip, proto, port in expected(services, slices):
        for iface in (f"kf{other}{index}", "eth0", "lo"):
            packet = {"iface": iface, "dst": ip, "proto": proto, "port": port}
            for table, hook in (("nat", "PREROUTING"), ("filter", "FORWARD")):
                assert walk(tables, table, hook, packet) == walk(before, table, hook, packet)


@settings(max_examples=100, deadline=None)
@given(clusters(), st.from_regex(r"[0-9a-f]{6}", fullmatch=True))
def test_chain_names_are_bounded_distinct_and_the_clusters_own(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]]], other: str
) -> None:
    services, slices = cluster
    ports = servicerules.service_ports(services, slices)
    chains = [servicerules.entry_chain(TAG), *(servicerules.port_chain(TAG, p) for p in ports)]
    assert len(set(chains)) == len(chains)
    assert all(len(c) <= servicerules.MAX_CHAIN and servicerules.ours(TAG, c) for c in chains)
    if other != TAG:
        assert not any(servicerules.ours(other, c) for c in chains)
        assert (
            servicerules.port_chain(TAG, ports[0]) != servicerules.port_chain(other, ports[0])
            if ports
            else True
        )
    # Never a node's own chain (realnodes.chain: KF- and its bridge's name).
    assert not any(c.startswith("KF-kf") for c in chains)


@settings(max_examples=100, deadline=None)
@given(clusters(), clusters())
def test_writing_again_changes_nothing_a_new_set_replaces_the_old_and_removal_leaves_the_host_as_it_was(
    first: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    then: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    tables = host()
    untouched = save(host(), "nat") + save(host(), "filter")
    restore(tables, servicerules.rules(*first, TAG, *current(tables)))
    once = save(tables, "nat") + save(tables, "filter")
    restore(tables, servicerules.rules(*first, TAG, *current(tables)))
    assert save(tables, "nat") + save(tables, "filter") == once
    # Another set (a proxy started after one killed -9): only the new one's chains are left.
    restore(tables, servicerules.rules(*then, TAG, *current(tables)))
    fresh = host()
    restore(fresh, servicerules.rules(*then, TAG, *current(fresh)))
    assert {t: sorted(c) for t, c in tables.items()} == {t: sorted(c) for t, c in fresh.items()}
    restore(tables, servicerules.removal(TAG, *current(tables)))
    assert save(tables, "nat") + save(tables, "filter") == untouched
    assert servicerules.removal(TAG, *current(tables)) == ""


def test_the_forward_jump_goes_back_ahead_of_a_node_started_since_and_duplicates_go() -> None:
    tables = host()
    restore(tables, servicerules.rules([], [], TAG, *current(tables)))
    jump = ["-i", f"kf{TAG}+", "-j", f"KF-SVC-{TAG}"]
    assert tables["filter"]["FORWARD"][0] == jump
    # Another cluster's node started since: its rules match other bridges, so ours stays where it is.
    tables["filter"]["FORWARD"].insert(0, ["-i", f"kf{OTHER}0", "-j", f"KF-kf{OTHER}0"])
    tables["filter"][f"KF-kf{OTHER}0"] = []
    assert servicerules.rules([], [], TAG, *current(tables)).count("FORWARD") == 0
    # A node of this cluster started again: its chain inserted first; and a jump doubled by hand.
    tables["filter"]["FORWARD"].insert(0, ["-i", "kfabc1231", "-j", "KF-kfabc1231"])
    tables["filter"]["KF-kfabc1231"] = []
    tables["nat"]["PREROUTING"].append(jump)
    restore(tables, servicerules.rules([], [], TAG, *current(tables)))
    assert tables["filter"]["FORWARD"][0] == jump
    assert tables["filter"]["FORWARD"].count(jump) == 1
    assert tables["nat"]["PREROUTING"].count(jump) == 1


def service(ns: str, name: str, ip: str, *ports: dict[str, Any], kind: str = "ClusterIP") -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"type": kind, "clusterIP": ip, "ports": list(ports)},
    }


def test_what_is_not_answered_here() -> None:
    tcp = {"name": "", "port": 443, "protocol": "TCP"}
    services = [
        service("default", "kubernetes", "10.96.0.1", tcp),  # each node's own rule answers it
        service("a", "headless", "None", tcp),
        service("a", "external", "", tcp, kind="ExternalName"),
        service("a", "sctp", "10.96.0.5", {"name": "s", "port": 9, "protocol": "SCTP"}),
        service("a", "six", "fd00::5", tcp),
        service("a", "web", "10.96.0.6", {"port": 80}),  # protocol and name left out: TCP, ""
    ]
    slices = [
        endpoint_slice("a", "web-v6", "web", [{"port": 8080}], {"addresses": ["fd00::9"]}, family="IPv6"),
        endpoint_slice(
            "a",
            "web-v4",
            "web",
            [{"port": 8080}],
            {"addresses": ["10.1.0.9"]},
            {"addresses": ["10.1.0.8"], "conditions": {"ready": False}},
        ),
    ]
    [web] = servicerules.service_ports(services, slices)
    assert (web.label, web.protocol, web.endpoints) == ("a/web:80", "TCP", ("10.1.0.9:8080",))


def test_a_tag_is_six_hex_digits_so_no_bridge_pattern_covers_another_clusters() -> None:
    for bad in ("abc12", "abc1234", "ABC123", "kfabc1"):
        with pytest.raises(ValueError, match="6 hex digits"):
            servicerules.entry_chain(bad)
    assert servicerules.bridges(TAG) == f"kf{TAG}+"
