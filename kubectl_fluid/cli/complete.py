"""Shell completion through kubectl: ``kubectl_complete-fluid``.

kubectl (≥ 1.26) completes ``kubectl fluid …`` by running ``kubectl_complete-fluid ARGS… INCOMPLETE``
and reading Cobra's ``__complete`` protocol back: one candidate per line (``value<TAB>help``), then
``:<directive>`` (4: no file completion, 2: no space after it, 0: let the shell complete files).
Click resolves which parameter is being completed; the functions below list cluster objects for it,
with the ``-n``/``--context``/``--kubeconfig`` already typed. Any failure completes nothing: a
completion must never print an error into the shell.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click
    from click.shell_completion import CompletionItem

    from kubectl_fluid.cli.settings import Session

# Cobra's ShellCompDirective bits.
DIRECTIVE_DEFAULT = 0
DIRECTIVE_NO_SPACE = 2
DIRECTIVE_NO_FILE = 4
DIRECTIVE_FILTER_DIRS = 16
COMPLETION_TIMEOUT = 5.0


def _session(ctx: click.Context) -> Session:
    from kubectl_fluid.cli.settings import Settings, outer_values

    outer = outer_values(ctx)

    def pick(key: str) -> Any:
        return ctx.params.get(key) or outer.get(key)

    return Settings(
        namespace=pick("namespace"),
        context=pick("context"),
        kubeconfig=pick("kubeconfig"),
        request_timeout=COMPLETION_TIMEOUT,
    ).open()


def _names(ctx: click.Context, path_of: Any, namespaced: bool = True) -> list[str]:
    """Names of the objects at ``path_of(namespace)``; nothing on any failure."""
    try:
        session = _session(ctx)
        with session.api:
            items = session.api.list(path_of(session.namespace if namespaced else None))
    except Exception:  # completion degrades silently: unreachable, forbidden, no kubeconfig
        return []
    return sorted(str((i.get("metadata") or {}).get("name", "")) for i in items)


def _items(values: list[str], incomplete: str, **info: Any) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    return [CompletionItem(v, **info) for v in values if v.startswith(incomplete)]


def namespaces(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from kubectl_fluid.kube import resources

    return _items(_names(ctx, resources.NAMESPACES.collection_path, namespaced=False), incomplete)


def contexts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    import os
    from pathlib import Path

    from kubectl_fluid.cli import kubeconfig

    merged = kubeconfig.Merged()
    try:
        from kubectl_fluid.cli.settings import outer_values

        explicit = ctx.params.get("kubeconfig") or outer_values(ctx).get("kubeconfig")
        for path in kubeconfig.kubeconfig_files(explicit, os.environ, Path.home()):
            merged.add(kubeconfig.parse(path.read_text(), str(path)), path.parent)
    except Exception:
        return []
    return _items(sorted(merged.contexts), incomplete)


def datasets(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from kubectl_fluid.kube import resources

    return _items(_names(ctx, resources.DATASETS.collection_path), incomplete)


def dataset_list(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``--dataset a,b,<TAB>``: the next dataset after those already typed."""
    from kubectl_fluid.kube import resources

    done, _, last = incomplete.rpartition(",")
    typed = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    names = [prefix + n for n in _names(ctx, resources.DATASETS.collection_path) if n not in typed]
    return _items(names, prefix + last)


def workloads(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``deploy/`` and its kin first (no space after them), then ``deploy/NAME``."""
    from kubectl_fluid.cli.workloads import WORKLOAD_KINDS, words_for

    if "/" not in incomplete:
        return _items([f"{k.short}/" for k in WORKLOAD_KINDS], incomplete, nospace=True)
    word, _, _ = incomplete.partition("/")
    kind = next((k for k in WORKLOAD_KINDS if word.lower() in words_for(k)), None)
    if kind is None:
        return []
    return _items([f"{word}/{n}" for n in _names(ctx, kind.resource.collection_path)], incomplete)


def pods(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from kubectl_fluid.kube import resources

    if "/" not in incomplete and not "pod/".startswith(incomplete):
        return []
    return _items([f"pod/{n}" for n in _names(ctx, resources.PODS.collection_path)], incomplete)


def nodes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Nodes that have FUSE mounts (what ``--node`` filters)."""
    from kubectl_fluid.kube import resources

    try:
        session = _session(ctx)
        with session.api:
            items = session.api.list(resources.FUSEMOUNTS.collection_path())
    except Exception:
        return []
    found = sorted({str((i.get("spec") or {}).get("nodeName", "")) for i in items} - {""})
    return _items(found, incomplete)


def cobra_lines(items: list[CompletionItem]) -> list[str]:
    """Candidates in Cobra's format, the directive last."""
    directive = DIRECTIVE_NO_FILE
    lines = []
    for item in items:
        if item.type == "file":
            return [f":{DIRECTIVE_DEFAULT}"]
        if item.type == "dir":
            return [f":{DIRECTIVE_FILTER_DIRS}"]
        if getattr(item, "nospace", None):
            directive |= DIRECTIVE_NO_SPACE
        help_text = (item.help or "").splitlines()[0] if item.help else ""
        lines.append(f"{item.value}\t{help_text}" if help_text else str(item.value))
    return [*lines, f":{directive}"]


def main() -> int:
    """Entry point of ``kubectl_complete-fluid``."""
    from click.shell_completion import ShellComplete

    from kubectl_fluid.cli.main import PROG, cli, normalize_args

    args = sys.argv[1:] or [""]
    words, incomplete = normalize_args(args[:-1]), args[-1]
    try:
        items = ShellComplete(cli, {}, PROG, "_KUBECTL_FLUID_COMPLETE").get_completions(words, incomplete)
    except Exception:
        items = []
    sys.stdout.write("".join(line + "\n" for line in cobra_lines(items)))
    return 0
