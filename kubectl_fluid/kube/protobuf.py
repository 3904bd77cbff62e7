"""The API server's protobuf encoding of built-in kinds, read for the few fields the plugin needs.

Why: ``kubectl fluid datasets -A`` counts injected pods, and 10,000 of them are 47 MB of JSON that
the server spends most of a second encoding and this process most of a second decoding, to keep
two names and a volume list of each. The same list in protobuf is a fraction of the bytes, cheap for
the server to write, and a reader that jumps over every length-delimited field it does not want
(status, containers, managed fields) touches little of it. kubectl reads built-in kinds this way too.

Only the wire format is here (no generated code, no dependency): an answer is ``k8s\\x00`` then a
``runtime.Unknown`` whose ``raw`` is the object (k8s.io/apimachinery runtime/generated.proto). The
field numbers are k8s.io/api core/v1's and apimachinery meta/v1's generated.proto, which never
renumber (protobuf compatibility is the API's promise). A server that cannot answer in protobuf
answers JSON to the same Accept header; callers check ``is_protobuf`` first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

ACCEPT = "application/vnd.kubernetes.protobuf, application/json"
MAGIC = b"k8s\x00"

# runtime.Unknown
_UNKNOWN_RAW = 2
# meta/v1 ListMeta, ObjectMeta, Status, StatusDetails
_LIST_METADATA, _LIST_ITEMS = 1, 2
_LISTMETA_CONTINUE = 3
_META_NAME, _META_NAMESPACE = 1, 3
_STATUS_MESSAGE, _STATUS_REASON, _STATUS_DETAILS, _STATUS_CODE = 3, 4, 5, 6
_DETAILS_NAME, _DETAILS_GROUP, _DETAILS_KIND = 1, 2, 3
# core/v1 Pod, PodSpec, Volume, VolumeSource, ConfigMapVolumeSource, PersistentVolumeClaimVolumeSource
_POD_METADATA, _POD_SPEC = 1, 2
_SPEC_VOLUMES = 1
_VOLUME_NAME, _VOLUME_SOURCE = 1, 2
_SOURCE_PVC, _SOURCE_CONFIGMAP = 10, 19
_CONFIGMAP_REFERENCE, _REFERENCE_NAME = 1, 1
_PVC_CLAIM_NAME = 1

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class ProtobufError(ValueError):
    """Bytes that are not the protobuf answer they claim to be (cut short, or of another shape)."""


def is_protobuf(data: bytes) -> bool:
    return data.startswith(MAGIC)


def pod_list(data: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """A PodList answer's pods, each reduced to the JSON shape of what the plugin reads of it
    (``metadata.name``/``namespace``; ``spec.volumes[]`` with ``name`` and a ``configMap.name`` or
    ``persistentVolumeClaim.claimName``), and the list's continue token."""
    try:
        start, end = _raw(data)
        items: list[dict[str, Any]] = []
        token = None
        for field, wire, a, b in _fields(data, start, end):
            if wire != _LENGTH:
                continue
            if field == _LIST_ITEMS:
                items.append(_pod(data, a, b))
            elif field == _LIST_METADATA:
                token = _string_field(data, a, b, _LISTMETA_CONTINUE)
    except IndexError:
        raise ProtobufError("protobuf answer cut short") from None
    return items, token or None


def list_continue(data: bytes) -> str | None:
    """The continue token of a list answer, read without touching its items: the server writes the
    list's metadata (field 1) before them, so only that one field is read when it is first."""
    try:
        start, end = _raw(data)
        for field, wire, a, b in _fields(data, start, end):
            if field == _LIST_METADATA and wire == _LENGTH:
                return _string_field(data, a, b, _LISTMETA_CONTINUE) or None
    except IndexError:
        raise ProtobufError("protobuf answer cut short") from None
    return None


def status(data: bytes) -> dict[str, Any]:
    """A ``Status`` answer (what an error is, in protobuf) in the JSON shape of its useful fields:
    ``message``, ``reason``, ``code``, ``details`` (``name``, ``group``, ``kind``)."""
    out: dict[str, Any] = {}
    try:
        start, end = _raw(data)
        for field, wire, a, b in _fields(data, start, end):
            if field == _STATUS_CODE and wire == _VARINT:
                out["code"] = a
            elif wire != _LENGTH:
                continue
            elif field == _STATUS_MESSAGE:
                out["message"] = _text(data, a, b)
            elif field == _STATUS_REASON:
                out["reason"] = _text(data, a, b)
            elif field == _STATUS_DETAILS:
                details = {}
                for f, w, c, d in _fields(data, a, b):
                    key = {_DETAILS_NAME: "name", _DETAILS_GROUP: "group", _DETAILS_KIND: "kind"}.get(f)
                    if key and w == _LENGTH:
                        details[key] = _text(data, c, d)
                out["details"] = details
    except IndexError:
        raise ProtobufError("protobuf answer cut short") from None
    return out


def _raw(data: bytes) -> tuple[int, int]:
    """The span of the envelope's ``raw`` (the object itself)."""
    if not data.startswith(MAGIC):
        raise ProtobufError("not a protobuf answer (no k8s magic)")
    raw = None
    # Every field of the envelope is walked (four, small): bytes cut short after the object fail too.
    for field, wire, a, b in _fields(data, len(MAGIC), len(data)):
        if field == _UNKNOWN_RAW and wire == _LENGTH:
            raw = (a, b)
    if raw is None:
        raise ProtobufError("protobuf answer without an object")
    return raw


def _pod(data: bytes, start: int, end: int) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    volumes: list[dict[str, Any]] = []
    for field, wire, a, b in _fields(data, start, end):
        if wire != _LENGTH:
            continue
        if field == _POD_METADATA:
            for f, w, c, d in _fields(data, a, b):
                if w == _LENGTH and f == _META_NAME:
                    meta["name"] = _text(data, c, d)
                elif w == _LENGTH and f == _META_NAMESPACE:
                    meta["namespace"] = _text(data, c, d)
                if len(meta) == 2:
                    # The rest of ObjectMeta (labels, annotations, managed fields) is never wanted;
                    # the server writes fields in number order, so this is after field 3 of ~15.
                    break
        elif field == _POD_SPEC:
            for f, w, c, d in _fields(data, a, b):
                if f == _SPEC_VOLUMES and w == _LENGTH:
                    volumes.append(_volume(data, c, d))
    return {"metadata": meta, "spec": {"volumes": volumes}}


def _volume(data: bytes, start: int, end: int) -> dict[str, Any]:
    volume: dict[str, Any] = {}
    for field, wire, a, b in _fields(data, start, end):
        if wire != _LENGTH:
            continue
        if field == _VOLUME_NAME:
            volume["name"] = _text(data, a, b)
        elif field == _VOLUME_SOURCE:
            for f, w, c, d in _fields(data, a, b):
                if w != _LENGTH:
                    continue
                if f == _SOURCE_CONFIGMAP:
                    reference = _message_field(data, c, d, _CONFIGMAP_REFERENCE)
                    name = None if reference is None else _string_field(data, *reference, _REFERENCE_NAME)
                    volume["configMap"] = {"name": name} if name is not None else {}
                elif f == _SOURCE_PVC:
                    claim = _string_field(data, c, d, _PVC_CLAIM_NAME)
                    volume["persistentVolumeClaim"] = {"claimName": claim} if claim is not None else {}
    return volume


def _message_field(data: bytes, start: int, end: int, number: int) -> tuple[int, int] | None:
    found = None
    for field, wire, a, b in _fields(data, start, end):
        if field == number and wire == _LENGTH:
            found = (a, b)  # protobuf: of a field given twice, the last counts
    return found


def _string_field(data: bytes, start: int, end: int, number: int) -> str | None:
    span = _message_field(data, start, end, number)
    return None if span is None else _text(data, *span)


def _text(data: bytes, start: int, end: int) -> str:
    try:
        return data[start:end].decode()
    except UnicodeDecodeError:
        raise ProtobufError("protobuf string is not UTF-8") from None


def _fields(data: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, a, b) of each field in ``data[pos:end]``: for a length-delimited
    field ``a:b`` is its span, for a varint ``a`` is its value; fixed-width ones are skipped over
    with a = b = 0. Raises IndexError when the bytes end inside a field."""
    if end > len(data):
        raise IndexError(end)
    while pos < end:
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == _LENGTH:
            size, pos = _varint(data, pos)
            stop = pos + size
            if stop > end:
                raise IndexError(stop)
            yield key >> 3, wire, pos, stop
            pos = stop
        elif wire == _VARINT:
            value, pos = _varint(data, pos)
            yield key >> 3, wire, value, 0
        elif wire == _FIXED64:
            pos += 8
        elif wire == _FIXED32:
            pos += 4
        else:
            # Groups (3, 4) are proto2's and no Kubernetes type has one.
            raise ProtobufError(f"protobuf wire type {wire} is not one the API server writes")
    if pos > end:
        raise IndexError(pos)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7
        if shift > 63:
            raise ProtobufError("protobuf varint longer than 64 bits")
