"""What a rule reads: its stable ID and the snapshot kinds it cannot judge without.

``kubectl fluid diagnose`` runs a rule only when every kind it needs was readable (RBAC may forbid a
list, an old server may lack a kind): a rule that sees an empty list where it could not look would
report a fault that is not there, or miss one silently. The skipped rules are named in the report.
A rule without these marks runs always.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from kubectl_fluid.cli.rules.finding import Rule
    from kubectl_fluid.cli.snapshot import Snapshot

F = TypeVar("F", bound=Callable[..., object])


def rule(rule_id: str, *needs: str) -> Callable[[F], F]:
    """Marks a rule function with its ID and the snapshot kinds (``snapshot.KINDS`` keys) it reads."""

    def mark(fn: F) -> F:
        fn.rule_id = rule_id  # type: ignore[attr-defined]
        fn.needs = needs  # type: ignore[attr-defined]
        return fn

    return mark


def rule_id(fn: Rule) -> str:
    return str(getattr(fn, "rule_id", getattr(fn, "__name__", "?")))


def missing(fn: Rule, snap: Snapshot) -> list[str]:
    """The kinds ``fn`` needs that ``snap`` could not read."""
    return [kind for kind in getattr(fn, "needs", ()) if kind in snap.unreadable]
