"""The data-path bench's pure parts (bench_datapath.py runs them): the one program both sides run, the
reading of its answer, where on the node the app's volume is the same FUSE, and the ratios.

The program (``PROGRAM``, run as ``python3 -c PROGRAM OP PATH ARGS...``) times itself and prints one
JSON line, so neither ``kubectl exec`` nor ``nsenter`` is counted; the app pod (the product's image) and
the node (this host) both have Debian bookworm's python3 3.11.2 and findutils, so each side runs the same
interpreter and the same ``find``. Reads start with the file's pages dropped from the page cache
(``POSIX_FADV_DONTNEED`` on that file alone: nothing global on a shared machine), so they reach the FUSE.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from csi.fuse.mounts import MountInfo, parse_mountinfo

PROGRAM = """
import json, os, random, subprocess, sys, time
op, path, args = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
MIB, PER_DIR = 1 << 20, 100  # PER_DIR: files of the stat tree in each of its directories

def dropped(p):
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

def tree(n):
    return [f"{path}/d{i // PER_DIR}/f{i % PER_DIR}" for i in range(n)]

if op == "write":
    if os.path.exists(path):
        os.unlink(path)
        os.sync()  # the unlink's work done before the clock starts
    block, amount = memoryview(os.urandom(MIB)), args[0] * MIB
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(args[0]):
        done = 0
        while done < MIB:
            done += os.write(fd, block[done:])
    os.fsync(fd)
    os.close(fd)
elif op == "read":
    dropped(path)
    buf, amount = bytearray(MIB), 0
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            amount += n
elif op == "rand":
    count, seed = args
    rng = random.Random(seed)
    blocks = os.stat(path).st_size // 4096
    offsets = [rng.randrange(blocks) * 4096 for _ in range(count)]
    dropped(path)
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    t0 = time.perf_counter()
    for offset in offsets:
        os.pread(fd, 4096, offset)
    os.close(fd)
    amount = count
elif op == "tree":
    t0 = time.perf_counter()
    for d in range((args[0] + PER_DIR - 1) // PER_DIR):
        os.makedirs(f"{path}/d{d}", exist_ok=True)
    for p in tree(args[0]):
        open(p, "w").close()
    amount = args[0]
elif op == "stat":
    names = tree(args[0])
    t0 = time.perf_counter()
    for p in names:
        os.stat(p)
    amount = len(names)
elif op == "find":
    # find's binary and libraries read once first: the timed spawn then costs the same on the
    # container's overlay as on the node's disk (cold, after the dentries' drop, it did not).
    subprocess.run(["find", "--version"], stdout=subprocess.DEVNULL, check=True)
    t0 = time.perf_counter()
    listed = subprocess.run(["find", path], stdout=subprocess.PIPE, check=True).stdout
    amount = listed.count(b"\\n")
else:
    sys.exit(f"unknown op {op}")
print(json.dumps({"op": op, "seconds": time.perf_counter() - t0, "amount": amount}))
"""


@dataclass(frozen=True)
class Timed:
    """One run of the program: what it did, in how long, and how much (bytes, reads, files, entries)."""

    op: str
    seconds: float
    amount: float

    @property
    def rate(self) -> float:
        return self.amount / self.seconds if self.seconds > 0 else 0.0


def parse(output: str) -> Timed:
    """The program's answer: its last line (an exec may print a warning above it)."""
    lines = [line for line in output.strip().splitlines() if line.startswith("{")]
    if not lines:
        raise ValueError(f"no answer from the data-path program in {output[-500:]!r}")
    got = json.loads(lines[-1])
    return Timed(str(got["op"]), float(got["seconds"]), float(got["amount"]))


@dataclass(frozen=True)
class SameFuse:
    """The app's volume and the node's mount it is a bind of: one superblock (one FUSE, no layer of
    ours between), and the node path that reaches the app's directory."""

    app: MountInfo
    node: MountInfo
    node_path: str  # the app's directory as the node sees it, through ``node``


def same_fuse(app_mountinfo: str, node_mountinfo: str, app_dir: str, binds_under: str) -> SameFuse:
    """The node's mount of the filesystem the app sees at ``app_dir``: same device, a FUSE, its root
    at or above the app's, outside ``binds_under`` (kubelet's pods folder, where the publish binds are);
    of those the FUSE's own mount (the shallowest root: a bind of a directory has a deeper one), the
    first made (lowest mount id) among equals. ValueError when there is none: the app's volume is not
    the node's FUSE (a layer between them, or no FUSE at all)."""
    at = [m for m in parse_mountinfo(app_mountinfo) if m.mount_point == app_dir]
    if not at:
        raise ValueError(f"nothing is mounted at {app_dir} in the app's mount table")
    app = at[-1]  # the one on top
    if not app.fs_type.startswith("fuse"):
        raise ValueError(f"{app_dir} in the app is {app.fs_type} ({app.source}), not a FUSE")
    under = binds_under.rstrip("/") + "/"
    candidates = [
        m
        for m in parse_mountinfo(node_mountinfo)
        if m.device == app.device
        and m.fs_type == app.fs_type
        and _within(app.root, m.root)
        and not f"{m.mount_point}/".startswith(under)
    ]
    if not candidates:
        raise ValueError(f"no mount of the node is the app's {app_dir} ({app.fs_type} {app.device})")
    node = min(candidates, key=lambda m: (m.root.rstrip("/").count("/"), m.mount_id))
    rest = app.root[len(node.root.rstrip("/")) :].strip("/")
    return SameFuse(app, node, f"{node.mount_point.rstrip('/')}/{rest}".rstrip("/") or "/")


def _within(path: str, root: str) -> bool:
    return root in ("/", path) or path.startswith(root.rstrip("/") + "/")


def cgroup_procs(proc_cgroup: str, proc_mounts: str) -> list[str]:
    """The ``cgroup.procs`` files that put a process where ``proc_cgroup`` (a /proc/PID/cgroup) says:
    for each of its lines, the hierarchy mounted with its controllers (``proc_mounts``, /proc/mounts) and
    the line's path beneath it. The node's side runs there, in the app container's cgroups, so that the
    path to the FUSE is the only difference between the two sides (not the CPU weight of a pod's QoS)."""
    mounted: list[tuple[set[str], str]] = []
    for line in proc_mounts.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[2] in ("cgroup", "cgroup2"):
            controllers = set(fields[3].split(",")) if fields[2] == "cgroup" else set()
            mounted.append((controllers, fields[1]))
    out = []
    for line in proc_cgroup.splitlines():
        _, listed, path = line.split(":", 2)
        wanted = set(listed.split(",")) if listed else set()
        found = [m for names, m in mounted if (wanted <= names if wanted else not names)]
        if found:
            out.append(f"{found[0].rstrip('/')}/{path.strip('/')}/cgroup.procs".replace("//", "/"))
    return out


def median_rate(runs: Sequence[Timed]) -> float:
    return statistics.median(t.rate for t in runs)
