"""A diagnosis: the rules run over one snapshot and scope, and the report they make, as text (one block
per finding) or as the versioned ``DiagnoseReport`` (``-o json|yaml``; its JSON schema is
``report.schema.json`` beside this module, and the README documents it field by field). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.rules.finding import REPORT_KIND, SEVERITIES, Finding, Rule, Scope
from kubectl_fluid.cli.rules.needs import missing, rule_id
from kubectl_fluid.cli.snapshot import Snapshot

SCHEMA_FILE = "report.schema.json"
CLEAN = "No problems found."


@dataclass
class Diagnosis:
    scope: Scope
    namespace: str | None  # None: every namespace
    findings: list[Finding] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, list[str]] = field(default_factory=dict)  # rule ID → the unreadable kinds it needs

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def failed(self) -> bool:
        """Any error-severity finding: the verb exits 1."""
        return self.count("error") > 0


def run(snap: Snapshot, scope: Scope, rules: Sequence[Rule]) -> Diagnosis:
    """Every rule whose kinds were read, in ``rules``' order; the others named as skipped."""
    out = Diagnosis(scope, snap.namespace, unreadable=dict(snap.unreadable))
    for fn in rules:
        lacking = missing(fn, snap)
        if lacking:
            out.skipped[rule_id(fn)] = lacking
            continue
        out.findings.extend(fn(snap, scope))
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(d: Diagnosis) -> str:
    """``2 errors, 1 warning``; ``No problems found.`` when there is nothing."""
    if not d.findings:
        return CLEAN
    return ", ".join(_plural(d.count(s), s) for s in SEVERITIES if d.count(s))


def render_text(d: Diagnosis) -> str:
    blocks = []
    for f in d.findings:
        lines = [f"{f.severity.upper():<7}  {f.rule}  {f.object}: {f.message}"]
        lines += [f"         {e}" for e in f.evidence]
        if f.advice:
            lines.append(f"         → {f.advice}")
        blocks.append("\n".join(lines))
    return "".join(b + "\n\n" for b in blocks) + summary_line(d) + "\n"


def warnings(d: Diagnosis) -> list[str]:
    """What could not be read, and the rules that were skipped for it (stderr)."""
    out = []
    for kind, reason in sorted(d.unreadable.items()):
        skipped = sorted(r for r, kinds in d.skipped.items() if kind in kinds)
        tail = f"; rules skipped: {', '.join(skipped)}" if skipped else ""
        out.append(f"could not read {kind} ({reason}){tail}")
    return out


def scope_json(d: Diagnosis) -> dict[str, Any]:
    scope: dict[str, Any] = {"namespace": d.namespace}
    if d.scope.datasets:
        scope["datasets"] = [f"{ns}/{name}" for ns, name in d.scope.datasets]
    if d.scope.pod is not None:
        scope["pod"] = "/".join(d.scope.pod)
    return scope


def to_json(d: Diagnosis) -> dict[str, Any]:
    return {
        "apiVersion": names.CLI_API_VERSION,
        "kind": REPORT_KIND,
        "scope": scope_json(d),
        "findings": [f.to_json() for f in d.findings],
        "unreadable": dict(sorted(d.unreadable.items())),
        "skipped": [{"rule": r, "unreadable": kinds} for r, kinds in d.skipped.items()],
        "summary": {"errors": d.count("error"), "warnings": d.count("warning"), "infos": d.count("info")},
    }
