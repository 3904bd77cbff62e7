"""A list-then-watch cache of one resource: the controller's and the webhook's view of the cluster.

kr8s's own ``watch`` ends when the server closes the stream and spins on ``410 Gone``. This one:
- lists in pages, then watches from the list's resourceVersion with bookmarks, so a reconnect resumes
  where it stopped instead of re-listing;
- re-lists when the server says the version is gone (410, as an HTTP status or an ERROR event), and
  reports what changed meanwhile as ordinary ADDED/MODIFIED/DELETED events;
- reconnects after the server's routine close (``timeoutSeconds``) and after errors, with backoff.

Objects are held without ``metadata.managedFields`` (unless asked: ``managed_fields``), which few
readers use and which is a third to a half of a server-side-applied object in memory; they are
parsed with orjson, which also shares the key strings every object repeats (a StatefulSet of the
bench: 34 KiB as ``json`` parses it, 14 KiB lean through orjson). A ``compact`` cache holds each as
its JSON deflated against the first object it held (objects of one resource share most of their
text: that StatefulSet is 3.7 KiB of JSON and 0.6 KiB held) and parses it again for each reader,
some 50 µs: the controller's way, which holds every child of every runtime and reads a few a pass
(readers then get a copy of their own, too); not the webhook's, which reads objects on every
admission.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable
from typing import Any, Literal

import kr8s.asyncio
import orjson

from kubectl_fluid.kube import http
from kubectl_fluid.kube.backoff import Backoff
from kubectl_fluid.kube.resources import Resource

log = logging.getLogger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Handler = Callable[[EventType, dict[str, Any]], None]
Key = tuple[str, str]  # (namespace or "", name)


class Gone(Exception):
    """The resourceVersion we hold is too old for the server: list again."""


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata", {})
    return meta.get("namespace", ""), meta["name"]


class WatchCache:
    def __init__(
        self,
        api: kr8s.asyncio.Api,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
        compact: bool = False,
        trim: Callable[[dict[str, Any]], None] | None = None,
        managed_fields: bool = False,
    ) -> None:
        self.api = api
        self.resource = resource
        self.namespace = namespace
        self.selectors = {
            k: v for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector)) if v
        }
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self.synced = asyncio.Event()
        self.resource_version: str | None = None
        self.relists = 0  # how often the server made us start over; tests and metrics read it
        self._packer = Packer() if compact else None
        # Drops, in place, what no reader of this cache uses: for a resource held by the thousand
        # (every claim of the cluster), the few fields read are all that is worth the memory.
        self._trim = trim
        # Kept only where a reader asks who owns a field (the FuseMounts of lost nodes: a handful).
        self._managed_fields = managed_fields
        self._store: dict[Key, Any] = {}  # the object; with ``compact``, its JSON (bytes)
        self._versions: dict[Key, str | None] = {}  # each held object's resourceVersion
        # Keys by the uid of each owner their ownerReferences name (a dict for a stable order): the
        # controller asks for a runtime's children on every pass, and scanning the store for them
        # made each pass cost as much as the cluster is large.
        self._owned: dict[str, dict[Key, None]] = {}
        self._owners: dict[Key, set[str]] = {}  # the other way round, for the keys that have owners
        self._handlers: list[Handler] = []
        self._written: dict[Key, str] = {}  # versions our own writes made, until the watch brings them

    # ------------------------------------------------------------------ reading

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        held = self._store.get((namespace or "", name))
        return None if held is None else self._unpack(held)

    def items(self, namespace: str | None = None) -> list[dict[str, Any]]:
        if namespace is None:
            return [self._unpack(held) for held in self._store.values()]
        return [self._unpack(held) for (ns, _), held in self._store.items() if ns == namespace]

    def keys(self) -> list[Key]:
        return list(self._store)

    def owned_by(self, uid: str) -> list[dict[str, Any]]:
        """The objects with an ownerReference to ``uid``."""
        return [self._unpack(self._store[k]) for k in self._owned.get(uid, ())]

    def __len__(self) -> int:
        return len(self._store)

    async def get_or_fetch(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """From the cache, or by one direct GET when the cache has not seen it: an object created
        just now may reach us through the API before it reaches us through the watch."""
        cached = self.get(namespace, name)
        if cached is not None:
            return cached
        found = await http.get(self.api, self.resource.object_path(namespace, name))
        if found is not None:
            found.setdefault("apiVersion", self.resource.api_version)
            found.setdefault("kind", self.resource.kind)
        return found

    def observe(self, obj: dict[str, Any], *, announce: bool = False) -> None:
        """Hold the server's answer to our own write now, before the watch brings it: the next pass
        over the same key then compares against what the server has, not against what it had, and
        writes nothing twice. An answer older than what the cache holds (the watch was faster, or a
        later write came first) is ignored.

        The watch's event for the held version then tells nobody anything new: the writer knows
        what it wrote (the object at that version is the answer), so handlers do not hear of it
        and the writer's key is not queued again for its own write. ``announce`` keeps the event
        for objects others react to as well (one several keys share)."""
        k = key_of(obj)
        if k in self._store and not _newer(_rv(obj), self._versions[k]):
            return
        self._adopt(obj)
        self._put(k, obj)
        rv = _rv(obj)
        if not announce and rv is not None:
            self._written[k] = rv

    def add_handler(self, handler: Handler) -> None:
        """``handler(event, obj)`` runs in the cache's task for every change; keep it cheap (enqueue)."""
        self._handlers.append(handler)

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        """List, then watch, forever. Cancel the task to stop."""
        while True:
            try:
                if self.resource_version is None:
                    await self._list()
                await self._watch()
                self.backoff.reset()
            except Gone:
                log.info("%s: resourceVersion too old, listing again", self.resource)
                self.resource_version = None
                self.relists += 1
            except asyncio.CancelledError:
                raise
            except Exception as e:
                delay = self.backoff.next()
                log.warning("%s: %s; retrying in %.1fs", self.resource, _describe(e), delay)
                await asyncio.sleep(delay)

    async def _list(self) -> None:
        fresh: dict[Key, Any] = {}
        versions: dict[Key, str | None] = {}
        owners: dict[Key, set[str]] = {}
        params = {**self.selectors, "limit": str(self.page_size)}
        while True:
            try:
                page = await http.request(
                    self.api, "GET", self.resource.collection_path(self.namespace), params=params
                )
            except http.ApiError as e:
                if e.code == 410:  # the continue token expired: start the list over
                    raise Gone from e
                raise
            for obj in page.get("items", []):
                self._adopt(obj)
                k = key_of(obj)
                fresh[k], versions[k], owners[k] = self._pack(obj), _rv(obj), _owner_uids(obj)
            cont = page.get("metadata", {}).get("continue")
            if not cont:
                break
            params["continue"] = cont
        old, self._store = self._store, fresh
        old_versions, self._versions = self._versions, versions
        self._owned, self._owners = {}, {}
        for k, uids in owners.items():
            self._index(k, uids)
        self._written.clear()
        self.resource_version = page["metadata"]["resourceVersion"]
        # What changed while we were not watching, as events, so consumers need no special case.
        for k, held in old.items():
            if k not in fresh:
                self._emit("DELETED", self._unpack(held))
        for k, held in fresh.items():
            if k not in old:
                self._emit("ADDED", self._unpack(held))
            elif old_versions[k] != versions[k]:
                self._emit("MODIFIED", self._unpack(held))
        self.synced.set()
        log.debug("%s: listed %d at resourceVersion %s", self.resource, len(fresh), self.resource_version)

    async def _watch(self) -> None:
        assert self.resource_version is not None
        params = {
            **self.selectors,
            "watch": "1",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(self.watch_timeout),
        }
        path = self.resource.collection_path(self.namespace)
        try:
            async with http.stream(self.api, path, params, read_timeout=self.watch_timeout + 30) as resp:
                async for line in resp.aiter_lines():
                    if line:
                        self._apply(orjson.loads(line))
        except http.ApiError as e:
            if e.code == 410:
                raise Gone from e
            raise

    def _apply(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone
            raise http.ApiError(
                int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message"))
            )
        rv = obj.get("metadata", {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        self._adopt(obj)
        k = key_of(obj)
        written = self._written.get(k)
        # Forgotten once the watch reaches that version (or passes it: a later write, a deletion).
        if written is not None and (kind == "DELETED" or rv == written or not _newer(written, rv)):
            del self._written[k]
        if kind == "DELETED":
            self._drop(k)
        elif kind in ("ADDED", "MODIFIED"):
            # Older than the answer to our own write we hold (``observe``): keep the newer; handlers
            # still hear of the older change.
            if k not in self._store or _newer(rv, self._versions[k]) or rv == self._versions[k]:
                self._put(k, obj)
            if rv is not None and rv == written:
                self.resource_version = rv
                return  # our own write: see ``observe``
        else:
            log.warning("%s: ignoring watch event of type %r", self.resource, kind)
            return
        self.resource_version = rv or self.resource_version
        self._emit(kind, obj)

    def _put(self, k: Key, obj: dict[str, Any]) -> None:
        self._drop(k)
        self._store[k], self._versions[k] = self._pack(obj), _rv(obj)
        self._index(k, _owner_uids(obj))

    def _drop(self, k: Key) -> None:
        self._store.pop(k, None)
        self._versions.pop(k, None)
        for uid in self._owners.pop(k, ()):
            keys = self._owned.get(uid)
            if keys is not None:
                keys.pop(k, None)
                if not keys:
                    del self._owned[uid]

    def _index(self, k: Key, uids: set[str]) -> None:
        if uids:
            self._owners[k] = uids
        for uid in uids:
            self._owned.setdefault(uid, {})[k] = None

    def _pack(self, obj: dict[str, Any]) -> Any:
        return obj if self._packer is None else self._packer.pack(obj)

    def _unpack(self, held: Any) -> dict[str, Any]:
        unpacked: dict[str, Any] = held if self._packer is None else self._packer.unpack(held)
        return unpacked

    def _adopt(self, obj: dict[str, Any]) -> None:
        """An object as the cache holds it: typed (lists and watches leave kind out) and lean."""
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        meta = obj.get("metadata")
        if isinstance(meta, dict) and not self._managed_fields:
            meta.pop("managedFields", None)
        if self._trim is not None:
            self._trim(obj)

    def _emit(self, event: EventType, obj: dict[str, Any]) -> None:
        for handler in self._handlers:
            try:
                handler(event, obj)
            except Exception:
                log.exception("%s: handler failed on %s %s", self.resource, event, key_of(obj))


class Packer:
    """Objects as deflated JSON, against a dictionary: the first object packed. orjson's own bytes
    are not kept: their buffer is twice the text on average."""

    WBITS = -12  # raw deflate with a 4 KiB window, an object's size: less state to set up per call
    LEVEL, MEM_LEVEL = 6, 4

    def __init__(self) -> None:
        self.zdict: bytes | None = None

    def pack(self, obj: dict[str, Any]) -> bytes:
        text = orjson.dumps(obj)
        if self.zdict is None:
            self.zdict = text
        deflate = zlib.compressobj(self.LEVEL, zlib.DEFLATED, self.WBITS, self.MEM_LEVEL, zdict=self.zdict)
        return deflate.compress(text) + deflate.flush()

    def unpack(self, held: bytes) -> dict[str, Any]:
        assert self.zdict is not None  # nothing is unpacked before something was packed
        inflate = zlib.decompressobj(self.WBITS, zdict=self.zdict)
        obj: dict[str, Any] = orjson.loads(inflate.decompress(held) + inflate.flush())
        return obj


def _owner_uids(obj: dict[str, Any]) -> set[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return {ref["uid"] for ref in refs if isinstance(ref, dict) and ref.get("uid")}


def _rv(obj: dict[str, Any]) -> str | None:
    rv: str | None = obj.get("metadata", {}).get("resourceVersion")
    return rv


def _newer(new: str | None, old: str | None) -> bool:
    """Whether resourceVersion ``new`` is later than ``old``. resourceVersions are opaque by contract
    but etcd's revisions in practice, which only grow; compared as numbers when both are, and
    otherwise the one in hand wins (an unknown scheme: the newest answer is the best guess)."""
    if new is not None and old is not None and new.isdigit() and old.isdigit():
        return int(new) > int(old)
    return True


def _describe(e: Exception) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
