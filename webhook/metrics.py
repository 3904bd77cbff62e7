"""The webhook's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

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
