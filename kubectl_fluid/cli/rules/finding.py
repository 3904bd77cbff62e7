"""What a diagnose rule finds, and what it looks at.

A ``Finding`` is one fault: the rule's stable ID, a severity, the object it is about, the evidence
(what was read: an object's field, an Event, a log line) and what to do. The JSON form is part of the
documented, versioned report (``REPORT_KIND`` under ``names.CLI_API_VERSION``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from kubectl_fluid.cli.snapshot import Snapshot

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
REPORT_KIND = "DiagnoseReport"


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        """``Dataset ns/name``, ``Node name``: how a report line names it."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        return out


@dataclass(frozen=True)
class Finding:
    rule: str  # stable ID, e.g. "dataset-not-bound"
    severity: Severity
    object: ObjectRef
    message: str  # one line: what is wrong
    evidence: tuple[str, ...] = ()  # what was read that shows it
    advice: str = ""  # what to do

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "object": self.object.to_json(),
            "message": self.message,
            "evidence": list(self.evidence),
            "advice": self.advice,
        }


@dataclass(frozen=True)
class Scope:
    """What a diagnosis looks at: some datasets, one pod, or (both empty) everything in the snapshot."""

    datasets: tuple[tuple[str, str], ...] = ()  # (namespace, name)
    pod: tuple[str, str] | None = None
    everything: bool = field(default=False)

    def dataset_keys(self, snap: Snapshot) -> list[tuple[str, str]]:
        """The datasets in scope: those named, a pod's (through its PVCs and injections), or all."""
        from kubectl_fluid.cli.podview import claim_names, injected_datasets, metadata, requested_datasets
        from kubectl_fluid.cli.snapshot import key

        if self.datasets:
            return list(self.datasets)
        if self.pod is not None:
            pod = snap.get("pods", *self.pod)
            if pod is None:
                return []
            ns = self.pod[0]
            wanted = (
                set(claim_names(pod))
                | set(injected_datasets(pod))
                | set(requested_datasets(metadata(pod)[1]))
            )
            return sorted((ns, d) for d in wanted if snap.dataset(ns, d) is not None)
        return sorted(key(d) for d in snap.items("datasets"))


Rule = Callable[["Snapshot", Scope], Iterable[Finding]]
