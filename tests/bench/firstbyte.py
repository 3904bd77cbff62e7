"""Time to first byte by stage, pure: from milestones seen (each the wall-clock second, to the ms, when
it was first observed) to the seconds each stage is charged, and the product's share of the total.

The stages overlap (the app pod's volume is staged while Curvine's master starts), so each is charged
along one order, a critical path: from when every milestone before it in ``STEPS`` was reached to when
its own was. The charges never go below zero and tile the span from the apply to the last milestone,
so they sum to the total. A milestone not seen is charged nothing (the next one takes its time).

Whose time a stage is: the product's (its controller rendering, its CSI node's calls, and any wait it
adds between a stage being possible and acting on it) or the components' (Curvine's own start and
script, Kubernetes' scheduling and containers, the app's read)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")


@dataclass(frozen=True)
class Step:
    name: str  # the stage, as its bench row names it
    ends_at: str  # the milestone that ends it
    product: bool  # the product's time (else the components')


# In the order of the critical path: a stage is charged from the latest milestone before it.
STEPS: tuple[Step, ...] = (
    Step("kubectl apply, the objects stored", "stored", False),
    Step("controller render", "rendered", True),
    Step("master scheduled and started", "master started", False),
    Step("master's readiness probe", "master ready", False),
    Step("mountUFS, wait for the controller", "mountUFS started", True),
    Step("mountUFS, Curvine's script", "mountUFS done", False),
    Step("worker scheduled and Ready", "worker ready", False),
    Step("app pod scheduled", "app scheduled", False),
    Step("kubelet to NodeStage", "NodeStage called", False),
    Step("client pod scheduled and Ready", "client ready", False),
    Step("client's FUSE mounted (CSI node saw)", "client mounted", False),
    Step("NodeStage after the client's mount", "NodeStage done", True),
    Step("kubelet to NodePublish", "NodePublish called", False),
    Step("NodePublish", "NodePublish done", True),
    Step("container start", "container started", False),
    Step("app's reads until the data is there", "read began", False),
    Step("first read", "first byte", False),
)


# The product's own work, each from the milestone that made it possible to the one that ends it,
# whether on the critical path or beside it (a NodeStage done while Curvine's master still starts).
OWN_SPANS: dict[str, tuple[str, str]] = {
    "controller render": ("stored", "rendered"),
    "mountUFS wait for the controller": ("master ready", "mountUFS started"),
    "NodeStage after the client's mount": ("client mounted", "NodeStage done"),
    "NodePublish": ("NodePublish called", "NodePublish done"),
}


def own_spans(seen: Mapping[str, float]) -> dict[str, float]:
    """Each of OWN_SPANS whose two ends were seen, in seconds; at least 0 (a watch may see the
    milestone that starts one after the log line that ends it)."""
    return {
        name: max(seen[end] - seen[begin], 0.0)
        for name, (begin, end) in OWN_SPANS.items()
        if begin in seen and end in seen
    }


@dataclass(frozen=True)
class Charge:
    step: Step
    seconds: float


def critical_path(start: float, seen: Mapping[str, float], steps: Iterable[Step] = STEPS) -> list[Charge]:
    """Each step charged from when all before it were reached to when its own milestone was."""
    done, out = start, []
    for step in steps:
        at = seen.get(step.ends_at)
        reached = done if at is None else max(done, at)
        out.append(Charge(step, reached - done))
        done = reached
    return out


def total(charges: Iterable[Charge]) -> float:
    return sum(c.seconds for c in charges)


def product_share(charges: list[Charge]) -> float:
    """The product's stages as a percentage of the total (0 for an empty total)."""
    whole = total(charges)
    return 100 * total(c for c in charges if c.step.product) / whole if whole > 0 else 0.0


def first(observations: Iterable[tuple[float, _T]], test: Callable[[_T], bool]) -> float | None:
    """When the first observation that passes ``test`` was seen (observations in any order)."""
    return min((t for t, o in observations if test(o)), default=None)


def log_time(ts: str) -> float:
    """A JSON log line's ``ts`` (kubectl_fluid/logs.py: ``2026-12-05T11:56:08.123Z``) as epoch seconds."""
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def running(pod: Mapping[str, Any]) -> bool:
    """Whether every container of the pod has started (its state ``running``)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all("running" in (c.get("state") or {}) for c in statuses)


def condition_true(obj: Mapping[str, Any], type_: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions)


def started_at(line: Mapping[str, Any], seconds_field: str = "seconds") -> float:
    """When the work a log line reports began: its time less the seconds it says the work took."""
    return log_time(str(line["ts"])) - float(line.get(seconds_field) or 0)
