"""CSI v1 messages and gRPC service classes, generated at build time from ``csi.proto``, and kubelet's
plugin registration API, from ``pluginregistration.proto``.

``*_pb2`` / ``*_pb2_grpc`` are build products (``make csi-stubs``), not sources: importing this
package without them fails here with the command that makes them, rather than deep inside a servicer
with a bare "cannot import name".
"""

from __future__ import annotations

from importlib.util import find_spec

_GENERATED = ("csi_pb2", "csi_pb2_grpc", "pluginregistration_pb2", "pluginregistration_pb2_grpc")
_missing = [name for name in _GENERATED if find_spec(f"{__name__}.{name}") is None]
if _missing:
    raise ImportError(
        f"the CSI gRPC stubs ({', '.join(_missing)}) are not generated: run `make csi-stubs` "
        "(or `.venv/bin/python csi/proto/generate.py`)"
    )

from csi.proto import (  # noqa: E402  (only once they are known to exist)
    csi_pb2,
    csi_pb2_grpc,
    pluginregistration_pb2,
    pluginregistration_pb2_grpc,
)

__all__ = ["csi_pb2", "csi_pb2_grpc", "pluginregistration_pb2", "pluginregistration_pb2_grpc"]
