"""Prometheus text exposition, read the way the bench needs it: a histogram's cumulative buckets
summed over the series whose labels match, the difference of two scrapes, and a quantile from buckets
as Prometheus's ``histogram_quantile`` interpolates it (linearly inside the bucket that holds it)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

Buckets = dict[float, float]  # upper bound ("le") -> cumulative count

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def labels_of(text: str) -> dict[str, str]:
    return {m["key"]: m["value"] for m in _LABEL.finditer(text)}


def buckets(text: str, name: str, match: Mapping[str, str]) -> Buckets:
    """``name``'s buckets summed over every series whose labels include ``match`` (a label given as
    "" must be absent or empty, as Prometheus reads a missing label)."""
    out: Buckets = {}
    for line in text.splitlines():
        sample = _SAMPLE.match(line)
        if sample is None or sample["name"] != f"{name}_bucket":
            continue
        labels = labels_of(sample["labels"] or "")
        if any(labels.get(k, "") != v for k, v in match.items()):
            continue
        le = float(labels["le"])  # "+Inf" parses as inf
        out[le] = out.get(le, 0.0) + float(sample["value"])
    return out


def difference(after: Buckets, before: Buckets) -> Buckets:
    """What was observed between two scrapes of the same histogram."""
    return {le: count - before.get(le, 0.0) for le, count in after.items()}


def count(b: Buckets) -> float:
    return b.get(math.inf, max(b.values(), default=0.0))


def quantile(q: float, b: Buckets) -> float | None:
    """The q-quantile (0..1) of the observations, or None when there are none. Inside the bucket that
    holds it the value is interpolated linearly from the bucket's lower bound (0 for the first); in
    the +Inf bucket it is the highest finite bound, as Prometheus answers."""
    total = count(b)
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for le in sorted(b):
        cumulative = b[le]
        if cumulative >= rank:
            if math.isinf(le):
                return lower
            if cumulative == below:
                return le
            return lower + (le - lower) * (rank - below) / (cumulative - below)
        lower, below = le, cumulative
    return lower


def sums_by(
    text: str, name: str, label: str, keep: Mapping[str, frozenset[str]] | None = None
) -> dict[str, float]:
    """``name``'s counter samples summed by the value of ``label``, over the series whose labels have
    one of the values ``keep`` gives for each label it names (e.g. ``{"verb": WRITE_VERBS}``)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m is None or m["name"] != name:
            continue
        labels = labels_of(m["labels"] or "")
        if all(labels.get(k, "") in values for k, values in (keep or {}).items()):
            key = labels.get(label, "")
            out[key] = out.get(key, 0.0) + float(m["value"])
    return out


# The verbs of apiserver_request_total that write (server-side apply is counted as APPLY).
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})
