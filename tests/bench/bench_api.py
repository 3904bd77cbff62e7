"""API round trips through kr8s (what the product uses) against the official client (the baseline):
the floor under every later figure that talks to the API server."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tests.bench.report import Report, percentile

ROUNDS = 300


def sample(call: Callable[[], object], rounds: int = ROUNDS) -> list[float]:
    call()  # connection set-up and discovery are not the per-call figure
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def run(report: Report, kubeconfig: Path) -> None:
    import kr8s
    from kr8s.objects import Namespace
    from kubernetes import client, config

    api = kr8s.api(kubeconfig=str(kubeconfig))
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))

    def kr8s_get() -> object:
        ns = Namespace({"metadata": {"name": "default"}}, api=api)
        ns.refresh()
        return ns

    ours = sample(kr8s_get)
    base = sample(lambda: core.read_namespace("default"))
    for p in (50, 99):
        report.add(
            f"GET namespace p{p} (kr8s sync)",
            percentile(ours, p),
            "ms",
            "official client",
            percentile(base, p),
        )
