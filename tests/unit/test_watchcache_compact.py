"""A ``compact`` watch cache (objects held as JSON) behaves exactly as a plain one over any mix of
watch events, answers to writes and re-lists: the same objects read back, the same owners found, the
same events heard, the same versions remembered; and its readers get copies of their own."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

import orjson
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import CONFIGMAPS
from kubectl_fluid.kube.watchcache import Packer, WatchCache

UIDS = ("u1", "u2")


def obj(name: str, rv: int, owners: list[str], value: str) -> dict[str, Any]:
    refs = [{"kind": "CacheRuntime", "name": uid, "uid": uid} for uid in owners]
    meta = {"namespace": "ns", "name": name, "resourceVersion": str(rv), "ownerReferences": refs}
    return {"metadata": {**meta, "managedFields": [{"manager": "m"}]}, "data": {"v": value}}


step = st.tuples(
    st.sampled_from(("ADDED", "MODIFIED", "DELETED", "observe", "announce", "list", "BOOKMARK")),
    st.sampled_from(("a", "b", "c")),
    st.lists(st.sampled_from(UIDS), max_size=2, unique=True),
    st.text(max_size=3),
    st.integers(-2, 0),  # how far back the step's version is: late events and stale answers too
)


def view(c: WatchCache) -> tuple[Any, ...]:
    return (
        sorted(c.items(), key=lambda o: o["metadata"]["name"]),
        [c.get("ns", n) for n in ("a", "b", "c")],
        {uid: sorted(o["metadata"]["name"] for o in c.owned_by(uid)) for uid in UIDS},
        sorted(c.keys()),
        c.resource_version,
        dict(c._written),
    )


def feed(c: WatchCache, steps: list[tuple[str, str, list[str], str, int]]) -> list[tuple[str, Any]]:
    heard: list[tuple[str, Any]] = []
    c.add_handler(lambda event, o: heard.append((event, o)))
    for n, (what, name, owners, value, back) in enumerate(steps, start=3):
        rv = n + back
        o = obj(name, rv, owners, value)
        if what in ("observe", "announce"):
            c.observe(o, announce=what == "announce")
        elif what == "list":
            listed = [x for x in c.items() if x["metadata"]["name"] != name] + [o]

            async def request(*_: Any, items: list[Any] = listed, version: str = str(rv), **__: Any) -> Any:
                return {"metadata": {"resourceVersion": version}, "items": items}

            with mock.patch.object(http, "request", request):
                asyncio.run(c._list())
        elif what == "BOOKMARK":
            c._apply({"type": what, "object": {"metadata": {"resourceVersion": str(rv)}}})
        else:
            c._apply({"type": what, "object": o})
        heard.append(("view", view(c)))
    return heard


@given(st.lists(step, max_size=25))
def test_a_compact_cache_is_a_plain_cache(steps: list[tuple[str, str, list[str], str, int]]) -> None:
    plain = WatchCache(None, CONFIGMAPS)  # type: ignore[arg-type]  # the list's request is replaced
    compact = WatchCache(None, CONFIGMAPS, compact=True)  # type: ignore[arg-type]
    assert feed(compact, steps) == feed(plain, steps)
    assert all(isinstance(held, bytes) for held in compact._store.values())


def test_a_compact_caches_readers_get_copies_of_their_own() -> None:
    c = WatchCache(None, CONFIGMAPS, compact=True)  # type: ignore[arg-type]  # no I/O here
    c._apply({"type": "ADDED", "object": obj("a", 5, ["u1"], "kept")})
    for read in (c.get("ns", "a"), c.items()[0], c.owned_by("u1")[0]):
        assert read is not None
        read["data"]["v"] = "changed by a reader"
    assert c.get("ns", "a") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "namespace": "ns",
            "name": "a",
            "resourceVersion": "5",
            "ownerReferences": [{"kind": "CacheRuntime", "name": "u1", "uid": "u1"}],
        },
        "data": {"v": "kept"},
    }


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(st.lists(st.dictionaries(st.text(max_size=5), JSON, max_size=5), min_size=1, max_size=5))
def test_packed_objects_read_back_as_they_were(objects: list[dict[str, Any]]) -> None:
    packer = Packer()
    held = [packer.pack(o) for o in objects]
    assert [packer.unpack(h) for h in held] == objects


def test_an_object_like_the_first_is_held_in_a_fraction_of_its_json() -> None:
    packer = Packer()

    def statefulset(name: str) -> dict[str, Any]:
        container = {"name": "worker", "image": "curvine/curvine:v1", "args": ["--conf", f"/etc/{name}"]}
        template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container] * 3}}
        return {
            "metadata": {"name": name, "namespace": "team"},
            "spec": {"replicas": 2, "template": template},
        }

    packer.pack(statefulset("first"))
    second = statefulset("second")
    assert len(packer.pack(second)) * 4 < len(orjson.dumps(second))
