"""``WatchCache.owned_by`` agrees with a scan of the store over any mix of watch events, answers to
writes and re-lists: a child gained, lost, re-owned or deleted is found under exactly its owners."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import CONFIGMAPS
from kubectl_fluid.kube.watchcache import WatchCache

UIDS = ("u1", "u2", "u3")


def obj(name: str, rv: int, owners: list[str]) -> dict[str, Any]:
    refs = [{"kind": "CacheRuntime", "name": uid, "uid": uid} for uid in owners]
    return {
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv), "ownerReferences": refs}
    }


step = st.tuples(
    st.sampled_from(("ADDED", "MODIFIED", "DELETED", "observe", "list")),
    st.sampled_from(("a", "b", "c")),
    st.lists(st.sampled_from(UIDS), max_size=2, unique=True),
)


def scan(c: WatchCache, uid: str) -> set[str]:
    return {
        o["metadata"]["name"]
        for o in c.items()
        if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences", []))
    }


@given(st.lists(step, max_size=30))
def test_owned_by_is_what_a_scan_finds(steps: list[tuple[str, str, list[str]]]) -> None:
    c = WatchCache(None, CONFIGMAPS)  # type: ignore[arg-type]  # the list's request is replaced below
    for rv, (what, name, owners) in enumerate(steps, start=1):
        if what == "observe":
            c.observe(obj(name, rv, owners))
        elif what == "list":
            listed = [o for o in c.items() if o["metadata"]["name"] != name] + [obj(name, rv, owners)]

            async def request(
                *_: Any, items: list[Any] = listed, version: str = str(rv), **__: Any
            ) -> dict[str, Any]:
                return {"metadata": {"resourceVersion": version}, "items": items}

            with mock.patch.object(http, "request", request):
                asyncio.run(c._list())
        else:
            c._apply({"type": what, "object": obj(name, rv, owners)})
        for uid in UIDS:
            assert {o["metadata"]["name"] for o in c.owned_by(uid)} == scan(c, uid)
            assert len(c.owned_by(uid)) == len(scan(c, uid))
