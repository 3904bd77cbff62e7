"""``kubectl fluid config show DS`` without click: its most common spellings, read here.

Importing click and building the command tree is a third of a ``config show`` (issue 15: it must stay
within 1.5 times ``kubectl get cm``). The argument list is taken here only when every word of it is one
this module knows: the root's, the group's and the verb's connection flags (``-n``,
``--namespace``, ``--context``, ``--kubeconfig``, ``--request-timeout``; ``--flag VALUE`` or
``--flag=VALUE``), the verb's ``--format sh|json`` and ``--env``, and one dataset name. Anything else
(``-o``, ``--help``, ``-nNS``, an empty value or one that looks like a flag, an unknown word)
returns None and click parses it, errors and all. ``tests/unit/test_cli_fastpath.py`` holds the two
readings equal over generated argument lists.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from kubectl_fluid.cli import DEFAULT_REQUEST_TIMEOUT

if TYPE_CHECKING:
    from kubectl_fluid.cli.settings import Settings

# The connection flags, on every level (flags.connection_options), by their parameter names.
CONNECTION = {
    "-n": "namespace",
    "--namespace": "namespace",
    "--context": "context",
    "--kubeconfig": "kubeconfig",
    "--request-timeout": "request_timeout",
}
# The verb's own (config.show).
VALUED = {**CONNECTION, "--format": "fmt"}
FORMATS = ("sh", "json")


class ConfigShow(NamedTuple):
    """A ``config show`` as the fast path read it: ``configview.show``'s arguments."""

    dataset: str
    settings: Settings
    fmt: str | None
    env: bool


def parse(args: Sequence[str]) -> ConfigShow | None:
    """``args`` read as click would read them, or None where only click should."""
    levels: list[dict[str, str]] = [{}, {}, {}]  # the root's, the config group's, the verb's
    level, dataset, env = 0, None, False
    words = iter(args)
    for word in words:
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            allowed = VALUED if level == 2 else CONNECTION
            if word == "--env" and level == 2:
                env = True
                continue
            if name not in allowed or (eq and not name.startswith("--")):
                return None
            if not eq:
                value = next(words, "")
            if not value or value.startswith("-"):
                return None
            levels[level][allowed[name]] = value  # the last of a repeated flag wins, as in click
        elif level == 0 and word == "config":
            level = 1
        elif level == 1 and word == "show":
            level = 2
        elif level == 2 and dataset is None:
            dataset = word
        else:
            return None
    if level != 2 or not dataset:
        return None
    return _settled(dataset, levels, env)


def _settled(dataset: str, levels: list[dict[str, str]], env: bool) -> ConfigShow | None:
    from kubectl_fluid.cli.settings import Settings, parse_duration

    def pick(key: str) -> str | None:
        # The verb's own value, else the nearest level's (settings.outer_values).
        return next((found[key] for found in reversed(levels) if key in found), None)

    fmt = levels[2].get("fmt")
    kubeconfig = pick("kubeconfig")
    # click converts each level's value, not only the one that wins: a directory at any level is
    # its error, in its words.
    directory = any(os.path.isdir(found.get("kubeconfig", "")) for found in levels)
    if (fmt is not None and fmt not in FORMATS) or directory:
        return None
    try:
        # click checks each level's value, not only the one that wins.
        for found in levels:
            parse_duration(found.get("request_timeout", DEFAULT_REQUEST_TIMEOUT))
        timeout = parse_duration(pick("request_timeout") or DEFAULT_REQUEST_TIMEOUT)
    except ValueError:
        return None
    settings = Settings(
        namespace=pick("namespace"),
        context=pick("context"),
        kubeconfig=kubeconfig,
        request_timeout=timeout or None,
    )
    return ConfigShow(dataset, settings, fmt, env)


def run(args: Sequence[str]) -> int | None:
    """The exit status of ``args`` run here, or None when click must run them."""
    command = parse(args)
    if command is None:
        return None
    from kubectl_fluid.cli import configview

    try:
        text = configview.show(command.settings, command.dataset, command.fmt, command.env)
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as e:
        # A failure pays for click: the words are main's, whatever path the command took.
        from kubectl_fluid.cli.main import failed

        return failed(e)
    return 0
