"""Machine-readable output as kubectl prints it: ``-o json`` (4-space indent, sorted keys), ``-o yaml``,
``-o name`` (``kind.group/name``), and lists wrapped in a ``v1/List``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any


def as_list(items: Sequence[Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": list(items), "kind": "List", "metadata": {"resourceVersion": ""}}


def dump_json(value: Any) -> str:
    import json

    return json.dumps(value, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def dump_yaml(value: Any) -> str:
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(value, Dumper=dumper, sort_keys=True, default_flow_style=False, allow_unicode=True)
    return text


def dump(value: Any, output: str) -> str:
    """``value`` in ``output`` (json or yaml)."""
    return dump_yaml(value) if output == "yaml" else dump_json(value)


def write(text: str) -> None:
    sys.stdout.write(text)


def warn(message: str) -> None:
    """A warning on stderr, spelled like kubectl relays the API server's."""
    sys.stderr.write(f"Warning: {message}\n")


def nothing_found(namespace: str | None) -> None:
    """kubectl's words for an empty listing: on stderr, exit 0."""
    where = f" in {namespace} namespace" if namespace else ""
    sys.stderr.write(f"No resources found{where}.\n")
