"""Hatch build hook: a wheel without the CSI driver's gRPC stubs would install a ``fluid-csi`` that
cannot start, so building one fails here instead, saying how to make them. They are generated from
csi/proto/*.proto (``make csi-stubs``) and gitignored; the sdist carries them (pyproject.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STUBS = (
    "csi/proto/csi_pb2.py",
    "csi/proto/csi_pb2_grpc.py",
    "csi/proto/pluginregistration_pb2.py",
    "csi/proto/pluginregistration_pb2_grpc.py",
)


class CsiStubsRequired(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        # An editable install runs from the source tree, where `make venv` generates the stubs right
        # after it (grpcio-tools comes with the install itself): refusing it would make a fresh
        # checkout impossible to set up.
        if version == "editable":
            return
        missing = [s for s in STUBS if not (Path(self.root) / s).is_file()]
        if missing:
            raise RuntimeError(
                f"{', '.join(missing)} missing: generate the CSI gRPC stubs first "
                "(make csi-stubs, or python csi/proto/generate.py with grpcio-tools installed)"
            )
