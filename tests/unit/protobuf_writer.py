"""Kubernetes answers in protobuf's wire format, written by hand for the reader's tests: the few
fields it reads, among others it must skip (labels, managed fields, containers, status)."""

from __future__ import annotations

from typing import Any

from kubectl_fluid.kube import protobuf


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    raw = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(raw)) + raw


def fixed(number: int, size: int) -> bytes:
    return varint(number << 3 | (1 if size == 8 else 5)) + b"\x07" * size


CONTENT_TYPE = field(4, "application/vnd.kubernetes.protobuf")


def envelope(raw: bytes) -> bytes:
    type_meta = field(1, "v1") + field(2, "PodList")
    return protobuf.MAGIC + field(1, type_meta) + field(2, raw) + CONTENT_TYPE


def volume_bytes(volume: dict[str, Any]) -> bytes:
    source = b""
    if "configMap" in volume:
        source = field(19, field(1, field(1, volume["configMap"]["name"])) + field(3, 420))
    elif "persistentVolumeClaim" in volume:
        source = field(10, field(1, volume["persistentVolumeClaim"]["claimName"]) + field(2, 1))
    else:  # a projected service-account token volume: another source, skipped
        source = field(26, field(1, field(3, field(2, 3607))))
    return field(1, volume["name"]) + field(2, source)


def pod_bytes(pod: dict[str, Any]) -> bytes:
    meta = pod["metadata"]
    meta_raw = (
        field(1, meta["name"])
        + field(2, "gen-")
        + field(3, meta["namespace"])
        + field(5, "uid-1")
        + field(7, 3)
        + field(11, field(1, "fluid.io/inject") + field(2, "true"))
        + field(17, field(1, "kube-controller-manager") + field(2, "Update"))
    )
    spec = b"".join(field(1, volume_bytes(v)) for v in pod["spec"]["volumes"])
    # Containers, a fixed-width field and status: all skipped.
    spec += field(2, field(1, "app") + field(2, "busybox")) + fixed(4, 8) + fixed(99, 4)
    spec += field(10, "node-1")
    status = field(1, "Running") + field(7, "10.0.0.1")
    return field(1, meta_raw) + field(2, spec) + field(3, status)


def pod_list_bytes(pods: list[dict[str, Any]], token: str | None) -> bytes:
    list_meta = field(2, "1234") + (field(3, token) if token else b"")
    return envelope(field(1, list_meta) + b"".join(field(2, pod_bytes(p)) for p in pods))
