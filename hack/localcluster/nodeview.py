#!/usr/bin/env python3
"""A real node's own view of the host's file system: the paths a user's node has and the product's
manifests name as hostPaths (/var/lib/kubelet, /var/lib/fluid-csi, /var/lib/curvine-standin, and
/runtime-mnt, where a runtime's client pods mount its FUSE) are, in
a mount namespace of the node's, bind mounts of directories in the node's folder. containerd runs in
that namespace (and so runc, every container and its hostPaths), kubelet joins it; the host's own
/var/lib is never written, and two clusters on this host never share those directories.

    python hack/localcluster/nodeview.py ROOT SOURCE=TARGET... -- COMMAND...

run as ``unshare --mount --propagation unchanged -- python hack/localcluster/nodeview.py ...``: in the new
namespace, every mount but ROOT and those beneath it becomes a slave (nothing mounted in the node's
namespace reaches the host, while the host's mounts still reach it), each SOURCE (beneath ROOT) is
bound at its TARGET, then COMMAND is executed. ROOT is a shared mount on the host (realnodes.py makes
it so): the binds join its peer group, so what kubelet, the CSI driver and the FUSE pods mount under
/var/lib/kubelet in the namespace also shows under ROOT on the host, where ``down`` unmounts it, and
kubelet finds its root dir shared, as Bidirectional mount propagation needs.

Standard library only: it runs before anything of the project is importable.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys


def unescape(field: str) -> str:
    """A mountinfo path: the kernel writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def points_to_enslave(mountinfo: str, keep: str) -> list[str]:
    """Every mount point of ``mountinfo`` except ``keep`` and those beneath it, parents first."""
    keep = keep.rstrip("/")
    points = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        point = unescape(fields[4])
        if point == keep or point.startswith(keep + "/"):
            continue
        points.append(point)
    return sorted(set(points), key=lambda p: (p.count("/"), p))


def parse(argv: list[str]) -> tuple[str, list[tuple[str, str]], list[str]]:
    """``ROOT SOURCE=TARGET... -- COMMAND...``; a SOURCE outside ROOT would be private to the node's
    namespace (kubelet's volumes under it would never reach the host, nor ``down``'s unmounting)."""
    if "--" not in argv:
        raise SystemExit("usage: nodeview.py ROOT SOURCE=TARGET... -- COMMAND...")
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1 :]
    if not head or not command:
        raise SystemExit("usage: nodeview.py ROOT SOURCE=TARGET... -- COMMAND...")
    root, binds = head[0].rstrip("/"), []
    for pair in head[1:]:
        source, sep, target = pair.partition("=")
        if not sep or not source.startswith(root + "/") or not target.startswith("/"):
            raise SystemExit(f"error: {pair!r}: want SOURCE=TARGET, SOURCE beneath {root}, TARGET absolute")
        binds.append((source, target))
    return root, binds, command


def _mount(*args: str) -> None:
    run = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"error: mount {' '.join(args)}: {run.stderr.strip()}")


def mounted_points() -> set[str]:
    with open("/proc/self/mountinfo") as table:
        return {unescape(line.split()[4]) for line in table if len(line.split()) >= 5}


def enslave(points: list[str]) -> None:
    """Make each of ``points`` a slave, non-recursively (ROOT, beneath /, keeps its peer group; a
    private mount stays private). A point that vanished since the table was read is skipped: another
    cluster's node on this host unmounts its containers' mounts whenever it likes, and its copies in
    this fresh namespace go with them (seen: "mount point does not exist", a node's start failing)."""
    for point in points:
        run = subprocess.run(["mount", "--make-slave", point], capture_output=True, text=True, check=False)
        if run.returncode != 0 and point in mounted_points():
            raise SystemExit(f"error: mount --make-slave {point}: {run.stderr.strip()}")


def main(argv: list[str]) -> None:
    root, binds, command = parse(argv)
    with open("/proc/self/mountinfo") as table:
        points = points_to_enslave(table.read(), root)
    enslave(points)
    for source, target in binds:
        os.makedirs(source, exist_ok=True)
        # The host's own directory stays empty: it is only the mount point.
        os.makedirs(target, exist_ok=True)
        _mount("--bind", source, target)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
