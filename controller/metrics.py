"""The controller's Prometheus metrics (served on /metrics with the process's own RSS and CPU)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RECONCILES = Counter("fluid_controller_reconcile_total", "Reconcile passes by result.", ["result"])
RECONCILE_SECONDS = Histogram(
    "fluid_controller_reconcile_duration_seconds",
    "Time of one reconcile pass.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
WRITES = Counter(
    "fluid_controller_api_writes_total", "Write requests sent to the API server.", ["verb", "resource"]
)
QUEUE_DEPTH = Gauge("fluid_controller_queue_depth", "Keys waiting in the work queue.")
IS_LEADER = Gauge("fluid_controller_is_leader", "1 while this replica holds the leader Lease.")
NODE_LOSS_WRITES = Counter(
    "fluid_controller_node_loss_writes_total",
    "FuseMount statuses written for a lost node: marked Unknown (mark) or given back once Ready (release).",
    ["verdict"],
)
