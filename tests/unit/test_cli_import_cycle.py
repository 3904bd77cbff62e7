"""The plugin's modules (its commands, and its client in kubectl_fluid.kube) import each other in one
direction: an import inside a function counts, since hiding one there only postpones the circle
(completion once went main → settings → complete → main)."""

from __future__ import annotations

import ast
from pathlib import Path

import kubectl_fluid

PACKAGES = ("kubectl_fluid.cli", "kubectl_fluid.kube")


def imports_of(path: Path) -> set[str]:
    """The modules of PACKAGES ``path`` names anywhere (functions and TYPE_CHECKING included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            # ``from kubectl_fluid.cli import settings`` names the module settings.
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith(tuple(p + "." for p in PACKAGES))}


def test_the_plugins_modules_form_no_import_cycle() -> None:
    root = Path(kubectl_fluid.__file__).parent
    modules = {
        f"{package}.{p.stem}": p
        for package in PACKAGES
        for p in (root / package.split(".")[-1]).glob("*.py")
        if p.stem != "__init__"
    }
    assert {"kubectl_fluid.cli.main", "kubectl_fluid.cli.complete", "kubectl_fluid.kube.transport"} <= set(
        modules
    )
    graph = {name: imports_of(path) & set(modules) for name, path in modules.items()}

    done: set[str] = set()  # modules from which no cycle starts

    def cycle_from(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return [*trail[trail.index(name) :], name]
        if name in done:
            return None
        for imported in sorted(graph[name]):
            found = cycle_from(imported, [*trail, name])
            if found:
                return found
        done.add(name)
        return None

    for name in sorted(graph):
        cycle = cycle_from(name, [])
        assert cycle is None, " → ".join(cycle)
