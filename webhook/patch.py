"""RFC 6902 JSON patches: the diff the webhook answers with, and a small applier to check it.

``json_patch`` is built for copy-on-write pairs (see ``podedit``): parts that did not change are the
same objects in both documents and are skipped by identity, so the cost follows what changed, not the
size of the pod. It is still a correct diff of any two JSON documents:

- a key only in ``mutated`` -> ``add`` of the whole value (a missing ``labels`` map, ``volumes`` list
  or container ``env`` is added whole, since a patch cannot add below a missing parent);
- a key only in ``original`` -> ``remove``; a value of another type or a changed scalar -> ``replace``;
- a list that kept its length or grew -> a diff of the common elements, then ``add …/-`` for each
  appended one; a list that shrank -> ``replace`` of the whole list (index shifts make per-element
  removes error-prone, and the lists here are short).

Keys are escaped per RFC 6901 (``~`` -> ``~0``, ``/`` -> ``~1``): label keys such as
``done.sidecar.fluid.io/inject`` contain ``/``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Op = dict[str, Any]


class PatchError(ValueError):
    """A patch does not apply to the document (a missing path, a failed ``test``, a bad op)."""


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1") if ("~" in token or "/" in token) else token


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


def json_patch(original: Any, mutated: Any) -> list[Op]:
    """Operations that turn ``original`` into ``mutated`` (neither is changed). The values in the ops
    are shared with ``mutated``: serialise them before anyone edits it."""
    ops: list[Op] = []
    _diff(original, mutated, "", ops)
    return ops


def _scalar_equal(a: Any, b: Any) -> bool:
    # bool is an int subclass and True == 1 in Python; JSON tells them apart, so must we. Numbers
    # compare by value (RFC 6902: 1 and 1.0 are equal).
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _diff(a: Any, b: Any, path: str, ops: list[Op]) -> None:
    if a is b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        _diff_dict(a, b, path, ops)
    elif isinstance(a, list) and isinstance(b, list):
        _diff_list(a, b, path, ops)
    elif not _scalar_equal(a, b):
        ops.append({"op": "replace", "path": path, "value": b})


def _diff_dict(a: dict[str, Any], b: dict[str, Any], path: str, ops: list[Op]) -> None:
    # Plugins add keys and seldom remove one: one set comparison in C usually spares the loop.
    if not a.keys() <= b.keys():
        for key in a:
            if key not in b:
                ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
    for key, value in b.items():
        if key in a:
            old = a[key]
            if old is not value:
                _diff(old, value, f"{path}/{escape(key)}", ops)
        else:
            ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": value})


def _diff_list(a: list[Any], b: list[Any], path: str, ops: list[Op]) -> None:
    common = len(a)
    if len(b) < common:
        ops.append({"op": "replace", "path": path, "value": b})
        return
    for index in range(common):
        old, new = a[index], b[index]
        if old is not new:
            _diff(old, new, f"{path}/{index}", ops)
    if len(b) > common:
        append = f"{path}/-"
        ops.extend({"op": "add", "path": append, "value": value} for value in b[common:])


# --- applying -------------------------------------------------------------------------------------
def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer {pointer!r} must start with '/'")
    return [unescape(token) for token in pointer[1:].split("/")]


def _index(token: str, size: int, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return size
    # RFC 6901: decimal digits, no leading zero, no sign.
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"{token!r} is not an array index")
    index = int(token)
    if index > size or (index == size and not allow_end):
        raise PatchError(f"array index {index} is out of range (length {size})")
    return index


def _get(doc: Any, tokens: list[str]) -> Any:
    for token in tokens:
        if isinstance(doc, dict):
            if token not in doc:
                raise PatchError(f"no member {token!r}")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(token, len(doc), allow_end=False)]
        else:
            raise PatchError(f"cannot descend into {type(doc).__name__} at {token!r}")
    return doc


def apply_patch(doc: Any, ops: Iterable[Op]) -> Any:
    """``doc`` with the ops (add, remove, replace, test) applied; ``doc`` itself is not changed.

    Containers on the way to each change are copied once (copy-on-write), so the result may share
    untouched parts with ``doc`` and with the ops' values, but editing neither affects the other."""
    owned: dict[int, Any] = {}  # id -> the copy itself, which keeps the id from being reused

    def own(value: Any) -> Any:
        if id(value) in owned:
            return value
        if isinstance(value, dict):
            copy: Any = dict(value)
        elif isinstance(value, list):
            copy = list(value)
        else:
            raise PatchError(f"cannot descend into {type(value).__name__}")
        owned[id(copy)] = copy
        return copy

    root = doc
    for op in ops:
        kind = op.get("op")
        tokens = _tokens(op.get("path", ""))
        if kind == "test":
            if not _json_equal(_get(root, tokens), op["value"]):
                raise PatchError(f"test failed at {op['path']!r}")
            continue
        if kind not in ("add", "remove", "replace"):
            raise PatchError(f"unsupported op {kind!r}")
        if not tokens:
            if kind == "remove":
                raise PatchError("cannot remove the whole document")
            root = op["value"]
            continue
        root = parent = own(root)
        for token in tokens[:-1]:
            if isinstance(parent, dict):
                if token not in parent:
                    raise PatchError(f"no member {token!r} in {op['path']!r}")
                child = own(parent[token])
                parent[token] = child
            else:
                position = _index(token, len(parent), allow_end=False)
                child = own(parent[position])
                parent[position] = child
            parent = child
        _apply_last(parent, tokens[-1], kind, op)
    return root


def _apply_last(parent: Any, token: str, kind: str, op: Op) -> None:
    if isinstance(parent, dict):
        if kind != "add" and token not in parent:
            raise PatchError(f"no member {token!r} to {kind} at {op['path']!r}")
        if kind == "remove":
            del parent[token]
        else:
            parent[token] = op["value"]
    elif isinstance(parent, list):
        position = _index(token, len(parent), allow_end=kind == "add")
        if kind == "add":
            parent.insert(position, op["value"])
        elif kind == "remove":
            del parent[position]
        else:
            parent[position] = op["value"]
    else:
        raise PatchError(f"cannot {kind} inside {type(parent).__name__} at {op['path']!r}")


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``true`` is not ``1``."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return _scalar_equal(a, b)
