"""The webhook's Prometheus metrics.

With ``--workers N`` each worker counts into prometheus_client's multiprocess files, in the directory
the supervisor names (``names.PROMETHEUS_MULTIPROC_DIR_ENV``), and ``exposition()`` sums every
worker's (a worker that died keeps its counts: counters never go back). One process alone keeps them
in memory, as before.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from kubectl_fluid.api import names

CONTENT_TYPE = CONTENT_TYPE_LATEST

ADMISSIONS = Counter(
    "fluid_webhook_admissions_total",
    "Admission reviews by handler group, plugin and result (mutated, unchanged, denied, error).",
    ["group", "plugin", "result"],
)
ADMISSION_SECONDS = Histogram(
    "fluid_webhook_admission_duration_seconds",
    "Time from a request's body to its response, in the server.",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
API_REQUESTS = Counter(
    "fluid_webhook_api_requests_total",
    "Requests to the API server on the admission path (cache misses).",
    ["resource"],
)
BAD_REQUESTS = Counter("fluid_webhook_bad_requests_total", "Requests answered 400 (malformed or oversized).")
NOT_FOUND_REMEMBERED = Counter(
    "fluid_webhook_not_found_remembered_total",
    "Cache misses answered from the memory of a recent 404, without a request.",
    ["kind"],
)
OVER_BUDGET = Counter(
    "fluid_webhook_lookups_over_budget_total",
    "Admissions refused because their namespace had spent its budget of cache-miss requests.",
)

# The labelled children of ADMISSIONS, by their labels: ``labels()`` takes a lock and builds its key
# on every call, and the combinations are few (groups x plugin lists x results).
_ADMISSION_COUNTERS: dict[tuple[str, str, str], Any] = {}


def count_admission(group: str, plugins: str, result: str) -> None:
    key = (group, plugins, result)
    child = _ADMISSION_COUNTERS.get(key)
    if child is None:
        child = _ADMISSION_COUNTERS[key] = ADMISSIONS.labels(group, plugins, result)
    child.inc()


def _registry() -> CollectorRegistry | None:
    directory = os.environ.get(names.PROMETHEUS_MULTIPROC_DIR_ENV)
    if not directory:
        return None
    registry = CollectorRegistry()
    MultiProcessCollector(registry, directory)  # type: ignore[no-untyped-call]
    return registry


_WORKERS = _registry()


def exposition() -> bytes:
    """The metrics as Prometheus text: every worker's summed, or this process's."""
    return generate_latest(_WORKERS) if _WORKERS is not None else generate_latest()
