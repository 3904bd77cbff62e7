"""The ``oidc`` auth-provider of a kubeconfig user, as client-go's plugin/pkg/client/auth/oidc serves
it: the ``id-token`` is the bearer token while it is valid (its ``exp`` more than 10 s away); an
expired one is refreshed with the ``refresh-token`` at the issuer's token endpoint (found through
``{idp-issuer-url}/.well-known/openid-configuration``), and the new tokens are written back into the
kubeconfig file that defines the user (``persist``: privately, atomically, through a symlink as
kubectl writes it). The issuer is trusted through ``idp-certificate-authority(-data)``, else the
system's roots, and reached as client-go reaches it: through the proxy the environment names (never
the cluster's ``proxy-url``), on the plugin's own dialer (``kubectl_fluid.kube.fetch``), so an
``https://`` proxy's credentials travel only inside TLS. Logging in (no refresh token) is not this
plugin's job: the error says so.

Imported only for a user with an auth-provider."""

from __future__ import annotations

import base64
import json
import os
import ssl
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from kubectl_fluid.kube.errors import ClientError
from kubectl_fluid.kube.kubeconfig import AuthProvider, parse

ID_TOKEN = "id-token"
REFRESH_TOKEN = "refresh-token"
JSON = "application/json"
EXPIRY_DELTA = 10.0  # client-go's: a token this close to its expiry is refreshed
TIMEOUT = 30.0  # each request to the issuer


def expired(id_token: str, now: float) -> bool:
    """Whether an ID token (a JWT) is expired or about to be; one without ``exp`` counts as expired,
    as in client-go. Raises ClientError for something that is not a JWT."""
    parts = id_token.split(".")
    if len(parts) != 3:
        raise ClientError("the id-token of the oidc auth-provider is not a JWT")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        exp = float(claims.get("exp") or 0)
    except (ValueError, AttributeError, TypeError):
        raise ClientError("the id-token of the oidc auth-provider has no readable claims") from None
    return now + EXPIRY_DELTA >= exp


def token(provider: AuthProvider, now: float | None = None, env: Mapping[str, str] | None = None) -> str:
    """The bearer token for ``provider``, refreshing (and persisting) it when needed; ``env`` (the
    process's by default) names the proxy the issuer is reached through."""
    config = provider.config
    owner = f'the oidc auth-provider of user "{provider.user}"'
    for key in ("client-id", "idp-issuer-url"):
        if not config.get(key):
            raise ClientError(f"{owner} has no {key}; kubectl requires it too")
    current = config.get(ID_TOKEN, "")
    if current and not expired(current, time.time() if now is None else now):
        return current
    refresh = config.get(REFRESH_TOKEN, "")
    if not refresh:
        raise ClientError(
            f"{owner} has {'an expired' if current else 'no'} id-token and no refresh-token: "
            "log in again with your identity provider's tool (for example kubectl oidc-login)"
        )
    answer = _refresh(config, refresh, owner, os.environ if env is None else env)
    new_id = answer.get("id_token")
    if not isinstance(new_id, str) or not new_id:
        raise ClientError(
            f"{owner}: the token response of {config['idp-issuer-url']} did not contain an id_token"
        )
    updated = {ID_TOKEN: new_id}
    new_refresh = answer.get("refresh_token")
    if isinstance(new_refresh, str) and new_refresh and new_refresh != refresh:
        updated[REFRESH_TOKEN] = new_refresh
    if provider.source is not None:
        persist(provider.source, provider.user, updated)
    return new_id


def _context(config: Mapping[str, str], owner: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    try:
        if config.get("idp-certificate-authority-data"):
            ctx = ssl.create_default_context(
                cadata=base64.b64decode(config["idp-certificate-authority-data"]).decode()
            )
        elif config.get("idp-certificate-authority"):
            ctx = ssl.create_default_context(cafile=config["idp-certificate-authority"])
    except (OSError, ssl.SSLError, ValueError) as e:
        raise ClientError(
            f"cannot load the identity provider's certificate authority of {owner}: {e}"
        ) from None
    return ctx


def _refresh(config: Mapping[str, str], refresh: str, owner: str, env: Mapping[str, str]) -> dict[str, Any]:
    """The token endpoint's answer to a refresh_token grant. Client credentials go in an HTTP Basic
    header first, then (when the issuer refuses that) in the form, as Go's oauth2 auto-detects. The
    requests go through the proxy the environment names, never the cluster's proxy-url: client-go
    builds this refresh's transport from the issuer's certificate authority alone, and such a
    transport takes its proxy from the environment."""
    from kubectl_fluid.kube.fetch import fetch, reason

    context = _context(config, owner)
    issuer = config["idp-issuer-url"].rstrip("/")
    try:
        found = fetch(f"{issuer}/.well-known/openid-configuration", context=context, env=env, timeout=TIMEOUT)
        if found.status != 200:
            raise ValueError(f"it answered {found.status}: {_excerpt(found.body)}")
        endpoint = _json_object(found.body).get("token_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            raise ValueError("its discovery document names no token_endpoint")
    except (OSError, ValueError) as e:
        why = reason(e) if isinstance(e, OSError) else str(e)
        raise ClientError(f"{owner}: cannot discover the token endpoint of {issuer}: {why}") from None
    form = {"grant_type": "refresh_token", "refresh_token": refresh}
    client_id, secret = config["client-id"], config.get("client-secret", "")
    basic = base64.b64encode(f"{_q(client_id)}:{_q(secret)}".encode()).decode()
    attempts = [
        (urlencode(form), [("Authorization", f"Basic {basic}")]),
        (urlencode({**form, "client_id": client_id, "client_secret": secret}), []),
    ]
    last = ""
    for body, headers in attempts:
        try:
            answer = fetch(
                endpoint,
                method="POST",
                body=body.encode(),
                headers=[("Content-Type", "application/x-www-form-urlencoded"), ("Accept", JSON), *headers],
                context=context,
                env=env,
                timeout=TIMEOUT,
            )
        except OSError as e:
            last = reason(e)
            break
        if 200 <= answer.status < 300:
            try:
                return _json_object(answer.body)
            except ValueError as e:
                last = f"its answer is not a JSON object: {e}"
                break
        last = f"it answered {answer.status}: {_excerpt(answer.body)}"
        if answer.status not in (400, 401):
            break
    raise ClientError(f"{owner}: refreshing the id-token at {endpoint} failed: {last}")


def _json_object(data: bytes) -> dict[str, Any]:
    loaded = json.loads(data)
    if not isinstance(loaded, dict):
        raise ValueError("not a JSON object")
    return loaded


def _excerpt(data: bytes) -> str:
    """The start of an error answer, on one line (an HTML page is not printed whole)."""
    text = " ".join(data.decode(errors="replace").split())
    return text if len(text) <= 200 else text[:200] + "..."


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def persist(path: Path, user: str, updated: Mapping[str, str]) -> None:
    """Write refreshed tokens into the auth-provider config of ``user`` in ``path``, as kubectl's
    persister does: through a symlink (the link stays, its target is rewritten), the file's mode
    kept, and the whole file rewritten from its parsed content, so comments are lost, as with
    kubectl. Unlike kubectl's write in place, the new content goes to a temporary file beside the
    target (0600 from its creation) that is renamed over it: a reader sees the old file or the new,
    and a failure leaves the old one and no temporary file."""
    import yaml

    from kubectl_fluid.files import atomic_write

    target = Path(os.path.realpath(path))
    try:
        text = target.read_text()
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError as e:
        raise ClientError(f"cannot write refreshed tokens to {path}: {e.strerror or e}") from None
    document = parse(text, str(path))
    for entry in document.get("users") or ():
        if isinstance(entry, dict) and entry.get("name") == user:
            provider = (entry.get("user") or {}).get("auth-provider") or {}
            provider.setdefault("config", {}).update(updated)
            break
    else:
        raise ClientError(f'cannot write refreshed tokens: user "{user}" is no longer in {path}')
    out = json.dumps(document, indent=2) if text.lstrip().startswith("{") else yaml.safe_dump(document)
    try:
        atomic_write(target, out.encode(), mode)
    except OSError as e:
        raise ClientError(f"cannot write refreshed tokens to {path}: {e.strerror or e}") from None
