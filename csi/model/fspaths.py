"""Paths inside the cache filesystem (``fs-path``, ``curvine-path``) and how one sits in another.

A path must be absolute and free of ``..`` segments (they would let a volume climb out of its
``fs-path``), ``@`` (it separates the parts of a volume handle) and control characters (NUL cannot
reach a process's argv; newlines make logs and mount tables lie). The canonical form has no empty or
``.`` segments and no trailing slash, so ``/a//b/./`` and ``/a/b`` name one FUSE and one directory.
"""

from __future__ import annotations

import re

from csi.model.errors import InvalidParameter

ROOT = "/"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def normalize_path(value: str, key: str) -> str:
    """The canonical form of an absolute cache-filesystem path, or InvalidParameter naming ``key``."""
    if not value.startswith("/"):
        raise InvalidParameter(key, f"must be an absolute path (starting with /), got {value!r}")
    if _CONTROL.search(value):
        raise InvalidParameter(key, f"must not contain control characters, got {value!r}")
    if "@" in value:
        raise InvalidParameter(
            key, f"must not contain '@' (it separates the parts of a volume handle), got {value!r}"
        )
    segments = [segment for segment in value.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise InvalidParameter(key, f"must not contain a '..' segment, got {value!r}")
    return ROOT + "/".join(segments)


def join(parent: str, name: str) -> str:
    """``parent/name`` for a canonical ``parent``, without a double slash under the root."""
    return f"{parent.rstrip('/')}/{name}"


def relative_to(path: str, root: str) -> str | None:
    """The part of canonical ``path`` below canonical ``root`` ("" when equal, else starting with
    "/"), or None when ``path`` is not inside ``root``. A plain prefix test would put ``/ab`` inside
    ``/a``; comparing on a segment boundary does not."""
    if root == ROOT:
        return "" if path == ROOT else path
    if path == root:
        return ""
    if path.startswith(root + "/"):
        return path[len(root) :]
    return None
