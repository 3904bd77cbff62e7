"""The flags every command takes, spelled as kubectl spells them.

``-n``, ``--context``, ``--kubeconfig`` and ``--request-timeout`` are accepted both before the verb
(``kubectl fluid -n a datasets``, as kubectl takes global flags anywhere) and after it; the verb's own
wins. ``-o`` and ``--no-headers`` belong to the verb, ``-A`` to verbs that list. What they make, the
``Settings`` a command runs with, is ``kubectl_fluid.cli.settings``; both it and the completers are
imported when a command runs or the shell completes, never for ``--help``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kubectl_fluid.cli import DEFAULT_REQUEST_TIMEOUT

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

Command = Callable[..., None]
Completer = Callable[[click.Context, click.Parameter, str], "list[CompletionItem]"]


def _completer(name: str) -> Completer:
    """``kubectl_fluid.cli.completers.<name>``, imported when the shell asks for candidates."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from kubectl_fluid.cli import completers

        found: list[CompletionItem] = getattr(completers, name)(ctx, param, incomplete)
        return found

    return complete


def _timeout(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from kubectl_fluid.cli.settings import parse_duration

    try:
        return parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None


def connection_options(fn: Command) -> Command:
    """-n, --context, --kubeconfig, --request-timeout (shared by the root group and every verb)."""
    options = [
        click.option(
            "-n",
            "--namespace",
            metavar="NAMESPACE",
            help="Namespace of the request (default: the context's).",
            shell_complete=_completer("namespaces"),
        ),
        click.option(
            "--context",
            metavar="NAME",
            help="kubeconfig context to use.",
            shell_complete=_completer("contexts"),
        ),
        click.option(
            "--kubeconfig",
            metavar="PATH",
            type=click.Path(dir_okay=False),
            help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).",
        ),
        click.option(
            "--request-timeout",
            metavar="DURATION",
            callback=_timeout,
            help=f"How long to wait for one API answer, 0 for ever (default {DEFAULT_REQUEST_TIMEOUT}).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _output_check(
    allowed: tuple[str, ...],
) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None or value in allowed:
            return value
        # kubectl's own words for this mistake.
        raise click.UsageError(
            f'unable to match a printer suitable for the output format "{value}", '
            f"allowed formats are: {','.join(sorted(allowed))}",
            ctx,
        )

    return check


def kube_command(*, outputs: tuple[str, ...], lists: bool = False) -> Callable[[Command], Command]:
    """Adds the kubectl flags to a verb and hands it one ``settings`` argument instead of them."""

    def decorate(fn: Command) -> Command:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> None:
            from kubectl_fluid.cli.settings import Settings, outer_values, parse_duration

            outer = outer_values(click.get_current_context())

            def pick(key: str) -> Any:
                value = kwargs.pop(key)
                return outer.get(key) if value is None else value

            timeout = pick("request_timeout")
            if timeout is None:
                timeout = parse_duration(DEFAULT_REQUEST_TIMEOUT)
            settings = Settings(
                namespace=pick("namespace"),
                all_namespaces=bool(kwargs.pop("all_namespaces", False)),
                context=pick("context"),
                kubeconfig=pick("kubeconfig"),
                request_timeout=timeout or None,
                output=kwargs.pop("output", None),
                no_headers=bool(kwargs.pop("no_headers", False)),
            )
            fn(*args, settings=settings, **kwargs)

        command = connection_options(wrapper)
        if outputs:  # a verb without output formats (bundle writes a file) has -o of its own
            command = click.option(
                "--no-headers", is_flag=True, help="Print tables without their header line."
            )(command)
            command = click.option(
                "-o",
                "--output",
                metavar="FORMAT",
                callback=_output_check(outputs),
                shell_complete=lambda ctx, param, incomplete: [
                    o for o in outputs if o.startswith(incomplete)
                ],
                help=f"Output format: {'|'.join(outputs)}.",
            )(command)
        if lists:
            command = click.option(
                "-A", "--all-namespaces", is_flag=True, help="List across all namespaces."
            )(command)
        return command

    return decorate
