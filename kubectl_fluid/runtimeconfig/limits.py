"""The limits a runtime.sh must fit: applications source it, so every export becomes part of the
environment of each program the shell starts afterwards, and Linux refuses an exec whose strings are
too long with E2BIG ("Argument list too long"). A script that breaks every later exec of the pod is
refused at render time instead, with the variable, the field it came from and the limit named.

- One string: ``MAX_ARG_STRLEN`` = 32 pages = 131072 bytes for each argument or environment string,
  counting ``NAME=``, the value's UTF-8 bytes and the terminating NUL. 4 KiB pages are the smallest
  Linux uses, so this holds on every node a pod may land on.
- The whole script: 256 KiB. The kernel allows arguments and environment together a quarter of the
  stack limit (2 MiB under the usual 8 MiB), and that room is shared with the application's own
  argv and env and with the runtime.sh of every other dataset the pod sources (a pod may use many).
  The ConfigMap holding runtime.sh also holds runtime.json with the same values, and
  runtime-scoped.sh (the same exports under longer names, held to the same limits or left out), and a
  ConfigMap is limited to 1 MiB in all. The script's size bounds what it adds to the environment: each export
  line is longer than its ``NAME=value`` string plus NUL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from kubectl_fluid.runtimeconfig.errors import RuntimeConfigTooLarge
from kubectl_fluid.runtimeconfig.sources import source_of

MAX_ARG_STRLEN = 32 * 4096
RUNTIME_SH_MAX_BYTES = 256 * 1024
_LARGEST_SHOWN = 3
_ADVICE = (
    "shorten it, or hand large data to the cache as a file (mount a ConfigMap or Secret) and pass its "
    "path instead"
)


def env_string_size(name: str, value: str) -> int:
    """Bytes the kernel counts for ``name=value`` in a process environment, with its NUL."""
    return len(name.encode()) + 1 + len(value.encode()) + 1


def check_runtime_sh(exports: Sequence[tuple[str, str]], script: str, file: str = "runtime.sh") -> None:
    """Raise RuntimeConfigTooLarge when one export or the whole script (``file``) is over its limit."""
    for name, value in exports:
        size = env_string_size(name, value)
        if size > MAX_ARG_STRLEN:
            origin = _origin(name, value)
            raise RuntimeConfigTooLarge(
                f"{file} variable {name} is too long: as an environment string ({name}=…) it is "
                f"{size} bytes, and Linux refuses any single argument or environment string over "
                f"{MAX_ARG_STRLEN} bytes (MAX_ARG_STRLEN): once {file} is sourced, every program "
                f'the shell starts would fail with "Argument list too long" (E2BIG). '
                + (f"It comes from {origin}: " if origin else "")
                + _ADVICE
            )
    total = len(script.encode())
    if total > RUNTIME_SH_MAX_BYTES:
        largest = sorted(exports, key=lambda e: env_string_size(*e), reverse=True)[:_LARGEST_SHOWN]
        shown = "; ".join(
            f"{n}: {env_string_size(n, v)} bytes" + (f", from {origin}" if (origin := _origin(n, v)) else "")
            for n, v in largest
        )
        raise RuntimeConfigTooLarge(
            f"{file} would be {total} bytes, over its limit of {RUNTIME_SH_MAX_BYTES} bytes: "
            "sourcing it puts all of it into the environment of every program the shell starts, and "
            "Linux allows arguments and environment together only a quarter of the stack limit "
            "(2 MiB under the usual 8 MiB), shared with the application's own and with the other "
            f"datasets it sources. Largest variables: {shown}. For each: {_ADVICE}"
        )


def _origin(name: str, value: str) -> str:
    """The field(s) a variable comes from and, for a map, its largest entry; "" when neither."""
    origin = source_of(name) or ""
    if name.endswith("OPTIONS"):
        entries: dict[str, str] = json.loads(value)
        if entries:
            key = max(entries, key=lambda k: env_string_size(k, entries[k]))
            origin += f' (largest entry "{key[:64]}": {len(entries[key].encode())} bytes)'
    return origin.strip()
