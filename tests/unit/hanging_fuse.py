"""A FUSE that stops answering on demand: what a curvine-fuse whose master hangs looks like to the
kernel (each request waits, the process lives, nothing answers ENOTCONN).

It is the curvine-fuse stand-in (csi/standin/fusestandin.py, the same command line, so a node
service runs it as its ``--fuse-binary``), except that every request but FUSE_INIT waits while its
gate file exists: ``{$HANGING_FUSE_GATES}/{cluster-id of its masters}``. A test creates the gate to
hang every FUSE of those masters and removes it to let the waiting requests through, answered as
usual. Run as ``python -m tests.unit.hanging_fuse`` with curvine-fuse's flags.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from csi.standin import fusestandin
from csi.standin.fusestandin_fs import Passthrough
from kubectl_fluid.api import names

GATES_ENV = "HANGING_FUSE_GATES"
COMMAND = [sys.executable, "-m", "tests.unit.hanging_fuse"]


def gate(gates: Path, master_addrs: str) -> Path:
    """The file that hangs every FUSE of ``master_addrs`` while it exists."""
    return gates / names.cluster_id(master_addrs)


@contextmanager
def hanging(gates: Path, master_addrs: str) -> Iterator[Path]:
    """The FUSEs of ``master_addrs`` answer nothing inside the block; always released at its end."""
    path = gate(gates, master_addrs)
    path.touch()
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


class Gated(Passthrough):
    """The stand-in's passthrough, each operation held while ``gate`` exists."""

    def __init__(self, root: str, *, gate: str, **kwargs: Any) -> None:
        super().__init__(root, **kwargs)
        self.gate = gate

    def wait(self) -> None:
        while os.path.exists(self.gate):
            time.sleep(0.02)


def _held(operation: Callable[..., Any]) -> Callable[..., Any]:
    def held(self: Gated, *args: Any) -> Any:
        self.wait()
        return operation(self, *args)

    return held


for _name, _operation in vars(Passthrough).items():
    # FUSE_INIT is answered: the mount comes up, and only what follows waits.
    if callable(_operation) and not _name.startswith("_") and _name != "init":
        setattr(Gated, _name, _held(_operation))


def main(argv: list[str]) -> int:
    if argv[:1] == [fusestandin.VALIDATE_COMMAND]:
        return fusestandin.main(argv)
    opts = fusestandin.parse_args(argv)
    held = str(gate(Path(os.environ[GATES_ENV]), opts.master_addrs))

    def filesystem(root: str, **kwargs: Any) -> Passthrough:
        return Gated(root, gate=held, **kwargs)

    return fusestandin.run(opts, filesystem)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
