"""Whether a FuseMount the API server holds already says what the mirror would write (SPEC §5).

The mirror's periodic resync lists this node's objects to put right what was deleted or edited by
hand. Applying every listed object again, equal or not, made a steady node send two writes per mount
per resync (1,000 mounts: 400 writes a minute for nothing). Comparing first leaves the equal ones
alone. The server's copy carries more than the mirror writes (uid, managedFields, other managers'
fields), so "holds" means: every field the mirror sets has the same value there, and no field its
field manager owns there is one it no longer sets (server-side apply would remove it; a write is
due). Lists are compared whole: the mirror writes them sorted and whole, and a list of the server's
that differs in any item is one to write again.
"""

from __future__ import annotations

from typing import Any

# The parts of a FuseMount the mirror writes (csi/node/mirror.py: to_fusemount()).
WRITTEN = ("metadata", "spec", "status")


def holds(found: Any, wanted: Any) -> bool:
    """Whether ``found`` has every field of ``wanted`` with the same value (dicts by key, recursively;
    anything else by equality)."""
    if isinstance(wanted, dict):
        return isinstance(found, dict) and all(k in found and holds(found[k], v) for k, v in wanted.items())
    return bool(found == wanted)


def already_held(found: dict[str, Any], wanted: dict[str, Any], manager: str = "") -> bool:
    """Whether the listed object ``found`` needs no write to be ``wanted``, written under the field
    manager ``manager``."""
    if not all(holds(found.get(part), wanted.get(part)) for part in WRITTEN if part in wanted):
        return False
    for entry in found.get("metadata", {}).get("managedFields") or []:
        if entry.get("manager") == manager and not _sets(entry.get("fieldsV1") or {}, wanted):
            return False
    return True


def _sets(owned: dict[str, Any], wanted: Any) -> bool:
    """Whether ``wanted`` still has every field of ``owned`` (fieldsV1: ``f:name`` per field of a map;
    a list's items, ``k:``/``v:``/``i:``, are left to the whole-list comparison)."""
    for key, below in owned.items():
        if not key.startswith("f:"):
            continue
        if not isinstance(wanted, dict) or key[2:] not in wanted:
            return False
        if isinstance(wanted[key[2:]], dict) and not _sets(below, wanted[key[2:]]):
            return False
    return True
