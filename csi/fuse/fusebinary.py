"""Whether the FUSE program (``--fuse-binary``) can be run here, said in words an operator can act
on. Embedded mode runs it as a child of the node service, so it must be in the node service's own
image; standalone mode runs it in the FUSE pods' image, which the node service cannot look into."""

from __future__ import annotations

import os
import shutil

FLAG = "--fuse-binary"


def fuse_binary_problem(program: str) -> str | None:
    """Why ``program`` (a path, or a name looked up on PATH) cannot be executed; None if it can."""
    path = program if "/" in program else shutil.which(program)
    if path is None:
        found = f"{program} is not on PATH ({os.environ.get('PATH', '')})"
    elif not os.path.isfile(path):
        found = f"{path} does not exist"
    elif not os.access(path, os.X_OK):
        found = f"{path} is not executable"
    else:
        return None
    return f"{FLAG} {found}: install the FUSE program (curvine-fuse) in this image or point {FLAG} at it"
