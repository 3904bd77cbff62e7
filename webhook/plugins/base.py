"""What a plugin is and what it is given.

A plugin edits the pod it is handed *in place*. That pod is the pipeline's working copy (see
``webhook.podedit``): its metadata maps, spec lists, containers and their env/volumeMounts lists are
the plugin's to change; their elements are shared with the original pod and must be replaced, never
edited. A plugin refuses a pod by raising ``Denied`` before changing anything it cannot finish: the
pipeline then drops the working copy, so no half-mutated pod is ever admitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from webhook.lookup import Lookup


@dataclass(slots=True)
class Context:
    """One admission as plugins see it. ``datasets`` are sorted, de-duplicated names in
    ``namespace``; ``warnings`` collects admission warnings shown to whoever created the pod."""

    namespace: str
    datasets: list[str]
    lookup: Lookup
    warnings: list[str] = field(default_factory=list)


class Plugin(Protocol):
    """A named step of a handler group. Plugins hold no per-admission state: one instance serves
    every admission, possibly from several threads."""

    @property
    def name(self) -> str: ...

    def mutate(self, pod: dict[str, Any], ctx: Context) -> None: ...
