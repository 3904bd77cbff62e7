"""Run a command in a pod's container through the API server (``pods/exec``), as kubectl does.

The edge of ``execframes``: one websocket per exec on the API client's own connection settings (kr8s
opens it with the kubeconfig's or service account's credentials), the subprotocols offered as kubectl
offers them, frames fed to ``ExecStream`` until the error channel gives the outcome. A deadline
bounds the whole exec: the API server would otherwise hold a hung command open for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

import httpx
import httpx_ws
import kr8s.asyncio

from kubectl_fluid.kube.execframes import SUBPROTOCOLS, ExecProtocolError, ExecStream, exec_query


class ExecFailed(Exception):
    """The exec could not run the command (no pod, no container, a refused upgrade, a timeout)."""


class ExecTimeout(ExecFailed):
    pass


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    seconds: float
    subprotocol: str


async def exec_in_pod(
    api: kr8s.asyncio.Api,
    namespace: str,
    pod: str,
    container: str,
    command: list[str],
    *,
    timeout: float,
) -> ExecResult:
    """Run ``command`` and wait for it, at most ``timeout`` seconds in all."""
    started = time.monotonic()
    stream = ExecStream()
    subprotocol = ""
    try:
        async with asyncio.timeout(timeout):
            async with api.open_websocket(
                version="v1",
                namespace=namespace,
                url=f"pods/{pod}/exec",
                params=exec_query(command, container),
                subprotocols=list(SUBPROTOCOLS),
            ) as ws:
                subprotocol = ws.subprotocol or ""
                while not stream.finished:
                    try:
                        stream.feed(await ws.receive_bytes())
                    except httpx_ws.WebSocketDisconnect:
                        break
    except TimeoutError as e:
        raise ExecTimeout(
            f"{' '.join(command)[:80]} in {namespace}/{pod}[{container}] did not finish in {timeout:g}s"
        ) from e
    except httpx_ws.WebSocketUpgradeError as e:
        with contextlib.suppress(httpx.HTTPError, RuntimeError):
            await e.response.aread()  # the Status that says why
        raise ExecFailed(f"exec in {namespace}/{pod}[{container}] refused: {_refusal(e.response)}") from e
    except (httpx.HTTPError, httpx_ws.HTTPXWSException, ExecProtocolError, OSError) as e:
        raise ExecFailed(f"exec in {namespace}/{pod}[{container}]: {e}") from e
    if stream.failure is not None:
        raise ExecFailed(f"exec in {namespace}/{pod}[{container}]: {stream.failure}")
    if stream.exit_code is None:
        raise ExecFailed(f"exec in {namespace}/{pod}[{container}]: the stream ended without an exit status")
    return ExecResult(
        stream.exit_code, bytes(stream.stdout), bytes(stream.stderr), time.monotonic() - started, subprotocol
    )


def _refusal(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"{response.status_code} {body.get('message', '')}".strip()
    except Exception:  # a body that is not a Status: its code says enough
        return str(response.status_code)
