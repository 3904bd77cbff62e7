"""The webhook's certificates kept in one Secret, shared by every replica (SPEC §4, ``--bootstrap-certs``).

The Secret holds the CA key too: whichever replica renews signs with the same CA, so ``caBundle`` keeps
trusting all of them. Writes carry the resourceVersion that was read (create: the name), so when
replicas race exactly one write lands; the others get 409 Conflict, read again and adopt the winner's.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import kr8s.asyncio

from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.backoff import Backoff
from kubectl_fluid.kube.resources import SECRETS
from webhook import certs
from webhook.certs import CertBundle

log = logging.getLogger(__name__)

TLS_SECRET_TYPE = "kubernetes.io/tls"
# Each lost race costs one read; more rounds than replicas would mean something else keeps writing.
MAX_ROUNDS = 8


async def ensure_secret(
    api: kr8s.asyncio.Api,
    namespace: str,
    secret_name: str,
    dns_names: list[str],
    ips: list[str],
    *,
    ca_name: str = names.WEBHOOK_CA_NAME,
    days: int = certs.DEFAULT_DAYS,
    margin_days: int = certs.DEFAULT_MARGIN_DAYS,
) -> CertBundle:
    """The bundle to serve: the Secret's when it is sound, covers ``dns_names`` and ``ips`` and is not
    due for renewal; otherwise a renewed one (same CA while that is sound), stored first."""
    path = SECRETS.object_path(namespace, secret_name)
    for _ in range(MAX_ROUNDS):
        now = datetime.now(UTC)
        secret = await http.get(api, path)
        current = bundle_of(secret) if secret is not None else None
        why = "no Secret" if secret is None else "incomplete Secret"
        if current is not None:
            found = certs.problem(current, dns_names, ips, now, margin_days)
            if found is None:
                return current
            why = found
        fresh = certs.renew(current, ca_name, dns_names, ips, days, margin_days=margin_days, now=now)
        try:
            if secret is None:
                body = _new_secret(namespace, secret_name, fresh)
                await http.request(api, "POST", SECRETS.collection_path(namespace), body=body)
            else:
                await http.request(api, "PUT", path, body=_with_bundle(secret, fresh))
        except http.ApiError as e:
            if e.code != 409:
                raise
            log.info("another replica wrote Secret %s/%s first; using theirs", namespace, secret_name)
            continue
        log.info(
            "stored a new serving certificate in Secret %s/%s: %s",
            namespace,
            secret_name,
            why,
            extra={
                "serial": certs.serial(fresh.cert),
                "new_ca": current is None or fresh.ca_cert != current.ca_cert,
            },
        )
        return fresh
    raise RuntimeError(f"Secret {namespace}/{secret_name} kept changing under {MAX_ROUNDS} attempts")


async def keep_secret_fresh(
    api: kr8s.asyncio.Api,
    namespace: str,
    secret_name: str,
    dns_names: list[str],
    ips: list[str],
    *,
    cert_dir: str | os.PathLike[str],
    period: float = 3600.0,
    on_change: Callable[[CertBundle], None] | None = None,
) -> None:
    """Every ``period`` seconds, ``ensure_secret`` and write its files into ``cert_dir`` (where
    ``CertReloader`` picks them up): this replica renews when due, or adopts what another replica
    renewed. ``on_change`` sees each bundle that differs from the last (e.g. to re-point the caBundle
    loop at a new CA). Errors are logged and retried with backoff; cancel the task to stop."""
    backoff = Backoff(cap=min(period, 300.0))
    last: CertBundle | None = None
    while True:
        try:
            bundle = await ensure_secret(api, namespace, secret_name, dns_names, ips)
            certs.write_files(bundle, cert_dir)
            if bundle != last and on_change is not None:
                on_change(bundle)
            last = bundle
            backoff.reset()
            delay = period
        except asyncio.CancelledError:
            raise
        except Exception as e:
            delay = backoff.next()
            log.warning("could not refresh the serving certificate: %s; retrying in %.0fs", e, delay)
        await asyncio.sleep(delay)


def bundle_of(secret: dict[str, Any]) -> CertBundle | None:
    """The bundle a Secret holds, or None when a key is missing or not base64."""
    data = secret.get("data") or {}
    try:
        files = {k: base64.b64decode(v, validate=True) for k, v in data.items() if isinstance(v, str)}
    except (binascii.Error, ValueError):
        return None
    return CertBundle.from_files(files)


def _encoded(bundle: CertBundle) -> dict[str, str]:
    return {k: base64.b64encode(v).decode() for k, v in bundle.as_files().items()}


def _new_secret(namespace: str, name: str, bundle: CertBundle) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": TLS_SECRET_TYPE,
        "data": _encoded(bundle),
    }


def _with_bundle(secret: dict[str, Any], bundle: CertBundle) -> dict[str, Any]:
    """``secret`` as read (resourceVersion, labels, type: a Secret's type cannot change) with the
    bundle's keys replaced; other keys someone added stay."""
    return {**secret, "data": {**(secret.get("data") or {}), **_encoded(bundle)}}
