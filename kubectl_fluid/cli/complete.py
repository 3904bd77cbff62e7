"""Shell completion through kubectl: ``kubectl_complete-fluid``.

kubectl (≥ 1.26) completes ``kubectl fluid …`` by running ``kubectl_complete-fluid ARGS… INCOMPLETE``
and reading Cobra's ``__complete`` protocol back: one candidate per line (``value<TAB>help``), then
``:<directive>`` (4: no file completion, 2: no space after it, 0: let the shell complete files).
Click resolves which parameter is being completed; its ``shell_complete`` function
(``kubectl_fluid.cli.completers``) lists the candidates. Any failure completes nothing: a completion
must never print an error into the shell.

This is the entry point above the root command (it completes ``kubectl_fluid.cli.main.cli``), so
nothing below imports it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kubectl_fluid.cli.main import PROG, cli, normalize_args

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# Cobra's ShellCompDirective bits.
DIRECTIVE_DEFAULT = 0
DIRECTIVE_NO_SPACE = 2
DIRECTIVE_NO_FILE = 4
DIRECTIVE_FILTER_DIRS = 16


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

    args = sys.argv[1:] or [""]
    words, incomplete = normalize_args(args[:-1]), args[-1]
    try:
        items = ShellComplete(cli, {}, PROG, "_KUBECTL_FLUID_COMPLETE").get_completions(words, incomplete)
    except Exception:
        items = []
    sys.stdout.write("".join(line + "\n" for line in cobra_lines(items)))
    return 0
