"""The flags every command takes, spelled as kubectl spells them, and the session they open.

``-n``, ``--context``, ``--kubeconfig`` and ``--request-timeout`` are accepted both before the verb
(``kubectl fluid -n a datasets``, as kubectl takes global flags anywhere) and after it; the verb's own
wins. ``-o`` and ``--no-headers`` belong to the verb, ``-A`` to verbs that list.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from kubectl_fluid.cli import complete

if TYPE_CHECKING:
    from kubectl_fluid.cli.kubeconfig import Access
    from kubectl_fluid.cli.transport import Api

Command = Callable[..., None]
DEFAULT_REQUEST_TIMEOUT = "30s"
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)(ms|s|m|h))")


def parse_duration(text: str) -> float:
    """Seconds in a kubectl duration: ``30s``, ``5m``, ``1h30m``, ``1.5s``, ``250ms``, or a bare
    number of seconds. Raises ValueError otherwise."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    parts = _DURATION.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r}: use a number with a unit, like 30s, 5m or 1h")
    unit = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * unit[u] for n, u in parts)


@dataclass(frozen=True)
class Session:
    api: Api
    namespace: str  # -n, else the context's namespace
    access: Access


@dataclass(frozen=True)
class Settings:
    namespace: str | None = None
    all_namespaces: bool = False
    context: str | None = None
    kubeconfig: str | None = None
    request_timeout: float | None = 30.0
    output: str | None = None
    no_headers: bool = False

    def open(self) -> Session:
        """Read the kubeconfig and make a client (nothing is sent yet)."""
        from kubectl_fluid.cli import kubeconfig, transport

        access = kubeconfig.load(self.kubeconfig, self.context)
        if access.warnings:
            from kubectl_fluid.cli.output import warn

            for warning in access.warnings:
                warn(warning)
        return Session(
            transport.Api(access, self.request_timeout), self.namespace or access.namespace, access
        )


def _timeout(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
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
            shell_complete=complete.namespaces,
        ),
        click.option(
            "--context",
            metavar="NAME",
            help="kubeconfig context to use.",
            shell_complete=complete.contexts,
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


CONNECTION_KEYS = ("namespace", "context", "kubeconfig", "request_timeout")


def outer_values(ctx: click.Context) -> dict[str, Any]:
    """Connection flags given before the verb (on the root or a group), the nearest one winning."""
    found: dict[str, Any] = {}
    parent = ctx.parent
    while parent is not None:
        for key in CONNECTION_KEYS:
            if found.get(key) is None and parent.params.get(key) is not None:
                found[key] = parent.params[key]
        parent = parent.parent
    return found


def kube_command(*, outputs: tuple[str, ...], lists: bool = False) -> Callable[[Command], Command]:
    """Adds the kubectl flags to a verb and hands it one ``settings`` argument instead of them."""

    def decorate(fn: Command) -> Command:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> None:
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
                output=kwargs.pop("output"),
                no_headers=bool(kwargs.pop("no_headers")),
            )
            fn(*args, settings=settings, **kwargs)

        command = connection_options(wrapper)
        command = click.option("--no-headers", is_flag=True, help="Print tables without their header line.")(
            command
        )
        command = click.option(
            "-o",
            "--output",
            metavar="FORMAT",
            callback=_output_check(outputs),
            shell_complete=lambda ctx, param, incomplete: [o for o in outputs if o.startswith(incomplete)],
            help=f"Output format: {'|'.join(outputs)}.",
        )(command)
        if lists:
            command = click.option(
                "-A", "--all-namespaces", is_flag=True, help="List across all namespaces."
            )(command)
        return command

    return decorate
