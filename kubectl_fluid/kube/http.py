"""Raw API calls over kr8s's authenticated session, by path, with errors a caller can branch on.

kr8s builds URLs from (base, version, namespace, url); the product builds paths once, in
``resources``, and hands them over whole."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import kr8s.asyncio
import orjson

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class ApiError(Exception):
    """A non-2xx answer: ``code`` (HTTP status), ``reason`` (``NotFound``, ``Conflict``, ``Gone``…) and
    the server's own message, which is usually the most actionable thing to show a person."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{reason or code}: {message}")
        self.code = code
        self.reason = reason
        self.message = message

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        try:
            status = response.json()
        except ValueError:
            return cls(response.status_code, "", response.text[:500])
        if not isinstance(status, dict):
            return cls(response.status_code, "", str(status)[:500])
        return cls(response.status_code, str(status.get("reason", "")), str(status.get("message", "")))


def _split(path: str) -> tuple[str, str]:
    base, _, last = path.rstrip("/").rpartition("/")
    return base, last


@asynccontextmanager
async def stream(
    api: kr8s.asyncio.Api, path: str, params: dict[str, str], read_timeout: float
) -> AsyncIterator[httpx.Response]:
    """A streaming GET (watches). ``read_timeout`` bounds silence on the wire, so a dead connection is
    noticed even when the server never closes it."""
    timeout = httpx.Timeout(10.0, read=read_timeout)
    base, url = _split(path)
    async with api.call_api(
        "GET",
        version="",
        base=base,
        url=url,
        raise_for_status=False,
        stream=True,
        params=params,
        timeout=timeout,
    ) as response:
        if response.is_error:
            await response.aread()
            raise ApiError.from_response(response)
        yield response


async def request(
    api: kr8s.asyncio.Api,
    method: str,
    path: str,
    *,
    params: dict[str, str] | None = None,
    body: Any = None,
    content_type: str = JSON,
) -> Any:
    """One call; the decoded JSON answer (orjson: lists of hundreds of objects go into the watch
    caches, and it parses them faster and shares their repeated keys). Raises ApiError on a non-2xx
    status."""
    kwargs: dict[str, Any] = {}
    if params:
        kwargs["params"] = params
    if body is not None:
        kwargs["content"] = body if isinstance(body, (str, bytes)) else json.dumps(body)
        kwargs["headers"] = {"Content-Type": content_type}
    base, url = _split(path)
    async with api.call_api(
        method, version="", base=base, url=url, raise_for_status=False, **kwargs
    ) as response:
        if response.is_error:
            raise ApiError.from_response(response)
        return orjson.loads(response.content) if response.content else None


async def get(api: kr8s.asyncio.Api, path: str) -> dict[str, Any] | None:
    """The object at ``path``, or None when it does not exist."""
    try:
        found: dict[str, Any] = await request(api, "GET", path)
    except ApiError as e:
        if e.code == 404:
            return None
        raise
    return found
