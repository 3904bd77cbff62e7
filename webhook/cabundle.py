"""Point the MutatingWebhookConfiguration's ``caBundle`` at our CA, and keep it there (SPEC §4, TLS).

The manifest ships without a caBundle, so every ``kubectl apply`` of it resets ours; with
``failurePolicy: Fail`` pods asking for injection are refused until it is back. Hence a watch on the one
object (a reset is repaired within a round trip) with a periodic check behind it in case the watch is
down or not allowed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Literal

import kr8s.asyncio

from kubectl_fluid.kube import http
from kubectl_fluid.kube.backoff import Backoff
from kubectl_fluid.kube.resources import MUTATING_WEBHOOK_CONFIGURATIONS
from kubectl_fluid.kube.watchcache import WatchCache

log = logging.getLogger(__name__)

PatchResult = Literal["patched", "unchanged", "missing"]
# Rounds of read-then-patch lost to concurrent writers before giving up until the next call.
MAX_ROUNDS = 5


def ca_bundle_ops(config: dict[str, Any], ca_pem: bytes) -> list[dict[str, Any]]:
    """The JSON patch setting ``caBundle`` on each webhook of ``config`` that lacks ``ca_pem``; empty
    when all have it. ``webhooks`` is a list, so a patch addresses entries by index; it also sets the
    resourceVersion that was read, which the API server takes as a precondition: if the object (and so
    maybe the list) changed since ``config`` was read, the patch is refused with 409 Conflict instead of
    writing into the wrong webhook. (A ``test`` op would guard as well, but its failure comes back as
    an opaque 422 that cannot be told from a real validation error.)"""
    wanted = base64.b64encode(ca_pem).decode()
    ops: list[dict[str, Any]] = []
    for i, webhook in enumerate(config.get("webhooks") or []):
        client_config = webhook.get("clientConfig")
        if client_config is None:  # required by the API; tolerated so a patch can still add it
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig", "value": {"caBundle": wanted}})
        elif _decoded(client_config.get("caBundle")) != ca_pem:
            # "add" on an existing member replaces it, so one op serves both cases.
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": wanted})
    if not ops:
        return []
    version = config["metadata"]["resourceVersion"]
    return [{"op": "replace", "path": "/metadata/resourceVersion", "value": version}, *ops]


async def patch_ca_bundle(api: kr8s.asyncio.Api, webhook_config_name: str, ca_pem: bytes) -> PatchResult:
    """Set ``caBundle`` to ``ca_pem`` on every webhook of the configuration, writing only when one
    differs. A missing configuration (not applied yet) is logged and reported, not raised: callers
    retry later. API errors other than a lost race are raised."""
    path = MUTATING_WEBHOOK_CONFIGURATIONS.object_path(None, webhook_config_name)
    for _ in range(MAX_ROUNDS):
        config = await http.get(api, path)
        if config is None:
            log.warning(
                "MutatingWebhookConfiguration %s not found; will patch its caBundle once it exists",
                webhook_config_name,
            )
            return "missing"
        ops = ca_bundle_ops(config, ca_pem)
        if not ops:
            return "unchanged"
        try:
            await http.request(api, "PATCH", path, body=ops, content_type=http.JSON_PATCH)
        except http.ApiError as e:
            if e.code == 409:  # changed since read: read again
                continue
            if e.code == 404:  # deleted between the read and the patch
                return "missing"
            raise
        log.info("set caBundle on %d webhook(s) of %s", len(ops) - 1, webhook_config_name)
        return "patched"
    raise RuntimeError(f"MutatingWebhookConfiguration {webhook_config_name} kept changing under the patch")


async def keep_ca_bundle_patched(
    api: kr8s.asyncio.Api,
    name: str,
    ca_pem: bytes | Callable[[], bytes],
    period: float = 30.0,
    *,
    watch: bool = True,
) -> None:
    """Patch now, then again whenever the configuration changes (with ``watch``) and at least every
    ``period`` seconds, forever; cancel the task to stop. ``ca_pem`` may be a callable returning the
    current CA, for a process whose CA can be renewed while it runs. Errors are logged and retried
    with backoff, never raised."""
    current = ca_pem if callable(ca_pem) else lambda: ca_pem
    changed = asyncio.Event()
    watcher: asyncio.Task[None] | None = None
    if watch:
        cache = WatchCache(api, MUTATING_WEBHOOK_CONFIGURATIONS, field_selector=f"metadata.name={name}")
        cache.add_handler(lambda _event, _obj: changed.set())
        watcher = asyncio.create_task(cache.run(), name=f"watch {name}")
    backoff = Backoff(cap=period)
    try:
        while True:
            # Cleared before reading: a change landing during the patch wakes the next round.
            changed.clear()
            try:
                await patch_ca_bundle(api, name, current())
                backoff.reset()
                delay = period
            except asyncio.CancelledError:
                raise
            except Exception as e:
                delay = backoff.next()
                log.warning("could not patch caBundle of %s: %s; retrying in %.1fs", name, e, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), delay)
    finally:
        if watcher is not None:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)


def _decoded(value: object) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
