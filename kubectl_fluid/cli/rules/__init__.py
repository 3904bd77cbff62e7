"""``kubectl fluid diagnose``'s rules: each a pure function over a ``Snapshot`` and a ``Scope`` that
yields ``Finding``s. One module per area (``dataset.py``, ``runtime.py``, ``webhook.py``, ``fuse.py``,
``nodes.py``...), each exporting ``RULES``; ``all_rules()`` gathers them in a fixed order, so reports
are stable. A rule's ID is part of the interface (scripts match on it): never renamed or reused.
"""

from __future__ import annotations

import importlib

from kubectl_fluid.cli.rules.finding import Rule

# The rule modules, in the order their findings are reported.
MODULES: tuple[str, ...] = ("dataset", "runtime", "nodes", "fuse", "webhook")


def all_rules() -> list[Rule]:
    rules: list[Rule] = []
    for module in MODULES:
        rules.extend(importlib.import_module(f"kubectl_fluid.cli.rules.{module}").RULES)
    return rules
