"""Generate the CSI driver's Python stubs from the ``.proto`` files beside this one (``make csi-stubs``).

``csi.proto`` (the CSI services) and ``pluginregistration.proto`` (kubelet's plugin registration,
vendored from k8s.io/kubelet): for each ``X.proto``, writes ``X_pb2.py``, ``X_pb2_grpc.py`` and, when
mypy-protobuf's plugins are installed, their ``.pyi`` type stubs into this directory. The outputs are
build products (gitignored), never edited.

Run it as a file, ``python csi/proto/generate.py``, not with ``-m``: importing the ``csi.proto``
package is exactly what fails while the stubs are missing.

The proto is compiled with the repository root on the include path, so the generated modules import
each other as ``csi.proto.csi_pb2`` (protoc derives imports from the include-relative path; compiling
from this directory would produce a top-level ``import csi_pb2`` that only works with ``sys.path``
hacks). Generation happens in a scratch directory and is moved into place only when protoc succeeds,
so a failed run never leaves a mix of old and new files.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROTOS = (HERE / "csi.proto", HERE / "pluginregistration.proto")
RELATIVE = HERE.relative_to(ROOT)
OUTPUTS = tuple(f"{p.stem}{suffix}.py" for p in PROTOS for suffix in ("_pb2", "_pb2_grpc"))
TYPE_STUBS = tuple(f"{name}i" for name in OUTPUTS)


def _plugin(name: str) -> str | None:
    """A protoc plugin from the running interpreter's environment first (a venv's bin/ need not be on
    PATH when ``make`` calls ``.venv/bin/python``), else from PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file():
        return str(local)
    return shutil.which(name)


def generate(*, require_types: bool) -> list[Path]:
    # grpc_tools is a build-time dependency only; the running driver needs grpcio and protobuf.
    from grpc_tools import protoc  # type: ignore[import-untyped]

    well_known = resources.files("grpc_tools") / "_proto"
    mypy_plugin, mypy_grpc_plugin = _plugin("protoc-gen-mypy"), _plugin("protoc-gen-mypy_grpc")
    with_types = mypy_plugin is not None and mypy_grpc_plugin is not None
    if require_types and not with_types:
        raise SystemExit(
            "generate.py: protoc-gen-mypy / protoc-gen-mypy_grpc not found (pip install mypy-protobuf)"
        )

    with tempfile.TemporaryDirectory(prefix="csi-stubs-") as scratch:
        args = [
            "grpc_tools.protoc",
            f"-I{ROOT}",
            f"-I{well_known}",
            f"--python_out={scratch}",
            f"--grpc_python_out={scratch}",
        ]
        if with_types:
            args += [
                f"--plugin=protoc-gen-mypy={mypy_plugin}",
                f"--plugin=protoc-gen-mypy_grpc={mypy_grpc_plugin}",
                f"--mypy_out={scratch}",
                f"--mypy_grpc_out={scratch}",
            ]
        args += [str(p) for p in PROTOS]
        if protoc.main(args) != 0:
            raise SystemExit(
                f"generate.py: protoc failed on {', '.join(str(RELATIVE / p.name) for p in PROTOS)}"
            )
        out_dir = Path(scratch) / RELATIVE
        written = []
        for name in OUTPUTS + (TYPE_STUBS if with_types else ()):
            # Copy beside the target, then rename: the scratch directory may be on another
            # filesystem, and a rename within one directory lands the file whole.
            partial = HERE / f".{name}.partial"
            shutil.copyfile(out_dir / name, partial)
            partial.replace(HERE / name)
            written.append(HERE / name)
    if not with_types:
        # Stale type stubs would describe a proto that no longer exists.
        for name in TYPE_STUBS:
            (HERE / name).unlink(missing_ok=True)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--require-types",
        action="store_true",
        help="fail unless mypy-protobuf is installed (the .pyi stubs are what mypy --strict checks against)",
    )
    args = parser.parse_args(argv)
    for path in generate(require_types=args.require_types):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
