"""What a command runs with (namespace, context, kubeconfig, timeout, output) and the session it opens.

The flags that fill these in are ``kubectl_fluid.cli.flags``; shell completion reads them here too
(``kubectl_fluid.cli.completers``), which is why this module knows nothing of the flags' definitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click

    from kubectl_fluid.kube.kubeconfig import Access
    from kubectl_fluid.kube.transport import Api

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
        from kubectl_fluid.kube import kubeconfig, transport

        access = kubeconfig.load(self.kubeconfig, self.context)
        if access.warnings:
            from kubectl_fluid.cli.output import warn

            for warning in access.warnings:
                warn(warning)
        return Session(
            transport.Api(access, self.request_timeout), self.namespace or access.namespace, access
        )


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
