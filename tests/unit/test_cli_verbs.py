"""Every verb of ``main.VERBS`` (verbs added later included: the lists are read from VERBS) shows an
``Examples:`` section in its --help, and its positional arguments, and ``--dataset``, complete to
names from the cluster (here a fake one: ``completers._names`` answers two names)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import click
import pytest

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.main import VERBS

# Positional arguments that name no cluster object, so complete to nothing by design.
FREE_TEXT = {("load", "paths")}
NAMES = ["alpha", "beta"]


def verb_command(verb: str) -> click.Command:
    command = getattr(importlib.import_module(VERBS[verb][0]), verb)
    assert isinstance(command, click.Command)
    return command


def commands(verb: str) -> Iterator[tuple[str, click.Command]]:
    """The verb's command and, for a group, each of its subcommands (``config show``)."""
    top = verb_command(verb)
    yield verb, top
    if isinstance(top, click.Group):
        for name, sub in top.commands.items():
            yield f"{verb} {name}", sub


@pytest.mark.parametrize("verb", list(VERBS))
def test_each_verbs_help_shows_examples(verb: str) -> None:
    for path, command in commands(verb):
        text = command.get_help(click.Context(command, info_name=path))
        assert "Examples:\n" in text, f"kubectl fluid {path} --help has no Examples: section"
        examples = text.split("Examples:\n", 1)[1]
        assert f"kubectl fluid {verb}" in examples, examples


@pytest.mark.parametrize("verb", list(VERBS))
def test_each_verbs_object_arguments_complete_to_names(verb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(completers, "_names", lambda ctx, path_of, namespaced=True: list(NAMES))
    for path, command in commands(verb):
        ctx = click.Context(command, info_name=path)
        for param in command.params:
            wanted = isinstance(param, click.Argument) or param.name == "dataset"
            if not wanted or (verb, param.name) in FREE_TEXT:
                continue
            offered = [item.value for item in param.shell_complete(ctx, "")]
            assert offered, f"kubectl fluid {path}: {param.name} completes to nothing"
            # A later argument may complete by an earlier one's value (``inspect dataset <TAB>``).
            ctx.params[str(param.name)] = offered[0]
            if param.name in ("dataset", "datasets"):
                assert offered == NAMES, (path, offered)


def test_bundle_dataset_completes_to_the_namespaces_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def names(ctx: click.Context, path_of: object, namespaced: bool = True) -> list[str]:
        asked.append(path_of("team-a"))  # type: ignore[operator]
        return list(NAMES)

    monkeypatch.setattr(completers, "_names", names)
    command = verb_command("bundle")
    [dataset] = [p for p in command.params if p.name == "dataset"]
    ctx = click.Context(command, info_name="bundle")
    assert [i.value for i in dataset.shell_complete(ctx, "b")] == ["beta"]
    assert asked == ["/apis/data.fluid.io/v1alpha1/namespaces/team-a/datasets"]
