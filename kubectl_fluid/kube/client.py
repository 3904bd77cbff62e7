"""The one way every server process gets an API client (the plugin's is ``transport``)."""

from __future__ import annotations

import warnings

import kr8s.asyncio


async def connect(kubeconfig: str | None = None, context: str | None = None) -> kr8s.asyncio.Api:
    """An async client from a kubeconfig (or in-cluster service account when none is found)."""
    with warnings.catch_warnings():
        # kr8s warns about every server newer than the ones it lists; the calls we make are stable API.
        warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")
        return await kr8s.asyncio.api(kubeconfig=kubeconfig, context=context)
