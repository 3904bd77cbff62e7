"""Where a cluster's masters resolve (csi/backends/masterips.py): the entries of a canonical
master-addrs, a lookup, and when a mount counts as having lost its masters."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from csi.backends import masterips
from csi.model.addresses import normalize_master_addrs


def test_masters_of_canonical_addresses() -> None:
    canonical = normalize_master_addrs("M-0.Curvine.svc:8995, 10.0.0.1:19995,[fe80::1]:8995")
    assert masterips.masters(canonical) == [("m-0.curvine.svc", 8995), ("10.0.0.1", 19995), ("fe80::1", 8995)]


def test_a_lookup_names_each_host_with_its_addresses() -> None:
    assert masterips.resolve_now("127.0.0.1:8995,[::1]:8995") == {"127.0.0.1=127.0.0.1", "::1=::1"}
    assert asyncio.run(masterips.resolve("127.0.0.1:8995")) == {"127.0.0.1=127.0.0.1"}


def test_a_host_that_does_not_resolve_makes_the_lookup_tell_nothing() -> None:
    assert masterips.resolve_now("127.0.0.1:8995,no-such-master.invalid:8995") == frozenset()


A, B = frozenset({"m=10.0.0.1"}), frozenset({"m=10.0.0.2"})


def test_moved_only_when_both_lookups_answered_and_differ() -> None:
    assert masterips.moved(A, B)
    assert not masterips.moved(A, A)
    assert not masterips.moved(A, frozenset())
    assert not masterips.moved(frozenset(), B)
    assert not masterips.moved(frozenset(), frozenset())


resolved = st.frozensets(st.sampled_from(["m=10.0.0.1", "m=10.0.0.2", "n=10.0.0.3"]))


@given(resolved, resolved)
def test_moved_is_symmetric_and_never_on_an_empty_answer(a: frozenset[str], b: frozenset[str]) -> None:
    assert masterips.moved(a, b) == masterips.moved(b, a)
    if not a or not b or a == b:
        assert not masterips.moved(a, b)
