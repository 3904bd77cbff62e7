"""What a parameter completes to: the names of cluster objects, listed with the ``-n``/``--context``/
``--kubeconfig`` already typed (the ``shell_complete`` functions of the verbs and the flags).

Any failure completes nothing: a completion must never print an error into the shell. How the
candidates reach kubectl is ``kubectl_fluid.cli.complete``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubectl_fluid.cli.settings import Settings, outer_values

if TYPE_CHECKING:
    import click
    from click.shell_completion import CompletionItem

    from kubectl_fluid.cli.settings import Session

COMPLETION_TIMEOUT = 5.0


def _session(ctx: click.Context) -> Session:
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

    from kubectl_fluid.kube import kubeconfig

    merged = kubeconfig.Merged()
    try:
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


def workloads(
    ctx: click.Context, param: click.Parameter, incomplete: str, *, explained: bool = False
) -> list[CompletionItem]:
    """``deploy/`` and its kin first (no space after them), then ``deploy/NAME``; with ``explained``,
    the kinds ``explain`` reads too (``rs/``)."""
    from kubectl_fluid.cli.workloads import EXPLAINED_KINDS, WORKLOAD_KINDS, lookup

    kinds = EXPLAINED_KINDS if explained else WORKLOAD_KINDS
    if "/" not in incomplete:
        return _items([f"{k.short}/" for k in kinds], incomplete, nospace=True)
    word, _, _ = incomplete.partition("/")
    kind = lookup(word, kinds)
    if kind is None:
        return []
    return _items([f"{word}/{n}" for n in _names(ctx, kind.resource.collection_path)], incomplete)


def explained(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """What ``explain`` takes: ``pod/NAME``, and the workloads' ``deploy/``… as ``workloads`` offers."""
    word = incomplete.partition("/")[0].lower()
    if "/" in incomplete and word in ("pod", "po", "pods"):
        return pods(ctx, param, incomplete)
    offered = workloads(ctx, param, incomplete, explained=True)
    return [*_items(["pod/"], incomplete, nospace=True), *offered] if "/" not in incomplete else offered


def pods(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from kubectl_fluid.kube import resources

    if "/" not in incomplete and not "pod/".startswith(incomplete):
        return []
    return _items([f"pod/{n}" for n in _names(ctx, resources.PODS.collection_path)], incomplete)


def pod_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Bare pod names of the namespace (``debug pod NAME``)."""
    from kubectl_fluid.kube import resources

    return _items(_names(ctx, resources.PODS.collection_path), incomplete)


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


def inspected(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """What ``inspect`` takes first: ``dataset``, or ``dataset/NAME`` once the slash is typed."""
    word, slash, _ = incomplete.partition("/")
    if not slash:
        return _items(["dataset"], incomplete)
    from kubectl_fluid.cli.datasetnames import DATASET_WORDS
    from kubectl_fluid.kube import resources

    if word.lower() not in DATASET_WORDS:
        return []
    return _items([f"{word}/{n}" for n in _names(ctx, resources.DATASETS.collection_path)], incomplete)


def inspected_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``inspect dataset <TAB>``: the namespace's datasets (nothing after ``dataset/NAME``)."""
    from kubectl_fluid.cli.datasetnames import DATASET_WORDS

    if str(ctx.params.get("kind") or "").lower() not in DATASET_WORDS:
        return []
    return datasets(ctx, param, incomplete)


def diagnose_targets(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``diagnose <TAB>``: what it takes a name of."""
    return _items(["dataset", "pod"], incomplete)


def diagnose_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``diagnose dataset <TAB>``: dataset names; ``diagnose pod <TAB>``: pod names."""
    from kubectl_fluid.kube import resources

    what = str(ctx.params.get("what") or "").lower()
    if what in ("dataset", "datasets"):
        return _items(_names(ctx, resources.DATASETS.collection_path), incomplete)
    if what in ("pod", "pods", "po"):
        return _items(_names(ctx, resources.PODS.collection_path), incomplete)
    return []
