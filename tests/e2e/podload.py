"""Pod creates at a steady rate through the API server, for the fault tests: each answer is kept
(status, the stored pod or the refusal), so a test can count what was admitted, mutated or refused
while a component was down.

httpx on one event loop rather than the official client in threads: 200 creates a second must leave
the two cores to the API server and the webhook under test, not to the load."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client, config

# Pods nothing schedules: they stay Pending on no node, so 200 a second costs the API server and
# etcd, not the scheduler or kwok, and deleting the namespace afterwards is immediate.
UNSCHEDULED = "e2e-nobody-schedules-this"


@dataclass(frozen=True)
class Answer:
    at: float  # seconds since the load started, when the request was sent
    took: float  # seconds until its answer
    labelled: bool
    status: int  # 0: no HTTP answer at all
    pod: dict[str, Any] | None  # the stored pod, on 201
    message: str  # the API server's message, on a refusal


def _client(kubeconfig: Path, connections: int) -> tuple[httpx.AsyncClient, str]:
    """An httpx client with the kubeconfig's server, CA and credentials (as the official client reads
    them: files or inline data, token or client certificate)."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    ctx = (
        ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.verify_ssl else ssl.create_default_context()
    )
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    if token:
        headers["Authorization"] = token if token.startswith("Bearer ") else f"Bearer {token}"
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(verify=ctx, headers=headers, limits=limits, timeout=30.0), str(cfg.host)


async def create_pods(
    kubeconfig: Path,
    namespace: str,
    *,
    rate: float,
    seconds: float,
    body: Callable[[int], dict[str, Any]],
    labelled: Callable[[int], bool],
    during: Callable[[], Awaitable[None]] | None = None,
    connections: int = 32,
) -> list[Answer]:
    """Send ``rate`` creates a second for ``seconds`` (request i is ``body(i)``), while ``during`` runs
    beside them (the fault); returns every answer. Requests go out on schedule while fewer than
    ``connections`` are in flight; past that the load waits for a free connection (and falls behind,
    which the caller sees in the answers' times) rather than queueing without bound in the client."""
    http, server = _client(kubeconfig, connections)
    url = f"{server}/api/v1/namespaces/{namespace}/pods"
    answers: list[Answer] = []
    slots = asyncio.Semaphore(connections)
    t0 = time.monotonic()

    async def one(i: int) -> None:
        sent = time.monotonic()
        try:
            r = await http.post(url, json=body(i))
            status, data = r.status_code, r.json()
        except (httpx.HTTPError, ValueError) as e:
            status, data = 0, {"message": f"{type(e).__name__}: {e}"}
        finally:
            slots.release()
        answers.append(
            Answer(
                at=sent - t0,
                took=time.monotonic() - sent,
                labelled=labelled(i),
                status=status,
                pod=data if status == 201 else None,
                message="" if status == 201 else str(data.get("message", data)),
            )
        )

    async def load() -> None:
        tasks = []
        total = int(rate * seconds)
        for i in range(total):
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await slots.acquire()
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)

    async with http:
        await asyncio.gather(load(), during() if during is not None else asyncio.sleep(0))
    return sorted(answers, key=lambda a: a.at)


def pod(i: int, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"load-{i:05d}", "labels": labels, "annotations": annotations},
        "spec": {
            "schedulerName": UNSCHEDULED,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
