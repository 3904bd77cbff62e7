"""The data path adds nothing (issue 33): on a real node, through the real curvine-fuse, an app pod reading
and writing through its volume's bind beside the same FUSE read directly on the node, in one run.

Two FUSEs, both in one private cluster of one real node (tests/e2e/users_cluster.py; the product from
its image, ``kubectl apply -k manifests/`` unchanged):

- the client of a Curvine CacheRuntime: Curvine's own class, Dataset and CacheRuntime
  (manifests/samples/curvine-fluid/, as test_real_node_curvine_fluid.py runs them; the client's CPU
  limit, 200m in Curvine's file, taken off so that a GiB does not take minutes: both sides share the
  client, so the ratio is the same either way), the app mounting the Dataset's PVC;
- the CSI node service's FUSE pod of a static PV on a host Curvine (StorageClass parameters as volume
  attributes, as test_real_node_curvine.py does).

The node's side is the mount the app's volume is a bind of: the same superblock, found by its device in
the node's mount table (datapathio.same_fuse, which fails when the app's volume is anything else: an
extra FUSE, a copy), read in the node's mount namespace by the same program and interpreter as in the app
pod (the product's image), from inside the app container's cgroups (datapathio.cgroup_procs): the path to
the FUSE is all that differs, not the CPU weight the pod's QoS class gives it. Tests alternate app and
node, the first side swapped each round (an even number of rounds), so both share the machine's noise: a
sequential write (fsync'd) and read of a 1 GiB file, 20,000 random 4 KiB reads at seeded offsets in it,
``stat`` of 10,000 files and ``find`` of their tree (``sync`` before each run, and dentries and inodes
dropped before each of these two: bench_datapath.settle). Each row is the app's rate (higher is better)
beside the node's, goal >= 0.97x; the ratios as a grouped bar chart, data-path.svg.

Needs root, a real node and Curvine's binaries and source (else it says why and returns); about 8 to 10
minutes (a users cluster, Curvine's runtime Ready, the rounds), so it runs only when named:
``make bench ONLY=datapath``, or ``python -m tests.bench.bench_datapath``.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench import svg
from tests.bench.datapathio import PROGRAM, SameFuse, Timed, cgroup_procs, median_rate, parse, same_fuse
from tests.bench.report import Report, ratio_at_least

APPS, SYSTEM = "default", "fluid-system"
POD = "datapath"
ROUNDS = 4  # even: each side goes first as often as the other
SIZE_MIB = 1024
RANDOM_READS = 20_000
FILES = 10_000
SEED = 33
GOAL = 0.97
HOST = "host, FUSE directly"  # the node is this host: read in its mount namespace
# test -> (the program's op, the row's unit, the rate's divisor: bytes/s to MB/s)
TESTS: dict[str, tuple[str, str, float]] = {
    "seq write 1 GiB": ("write", "MB/s", 1e6),
    "seq read 1 GiB": ("read", "MB/s", 1e6),
    "random 4 KiB reads": ("rand", "reads/s", 1.0),
    "stat 10,000 files": ("stat", "files/s", 1.0),
    "find of the tree": ("find", "entries/s", 1.0),
}
Side = Callable[..., Timed]


def why_not() -> str | None:
    from tests.e2e.test_real_node_curvine_fluid import why_not as why_no_curvine_fluid

    return why_no_curvine_fluid()


def run(report: Report) -> None:
    reason = why_not()
    if reason:
        print(f"[bench] data path figures skipped: {reason}")
        return
    from tests.e2e.users_cluster import users_cluster

    with tempfile.TemporaryDirectory(prefix="fdp-") as tmp, users_cluster(Path(tmp) / "c") as cluster:
        measure(report, cluster, Path(tmp))


def measure(report: Report, cluster: Any, tmp: Path) -> None:
    from localcluster import realnodes
    from tests.e2e.fluid import MANIFESTS, kubectl

    kc = cluster.kubeconfig
    [node] = realnodes.recorded(cluster)
    t0 = time.monotonic()
    kubectl(kc, "apply", "-k", str(MANIFESTS))
    kubectl(kc, "-n", SYSTEM, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=5m")
    kubectl(kc, "-n", SYSTEM, "rollout", "status", "daemonset/fluid-csi-node", "--timeout=300s")
    claims = {"Curvine runtime's client": runtime_claim(kc), "CSI FUSE pod": static_claim(cluster, node, tmp)}
    mounts = {fuse: f"/data{i}" for i, fuse in enumerate(claims)}
    apply(kc, app_pod({mounts[fuse]: claim for fuse, claim in claims.items()}, node.name))
    kubectl(kc, "-n", APPS, "wait", "--for=condition=Ready", f"pod/{POD}", "--timeout=300s")
    print(f"[bench] data path bed up in {time.monotonic() - t0:.0f}s", flush=True)

    ratios: dict[str, dict[str, float]] = {test: {} for test in TESTS}
    for fuse, app_dir in mounts.items():
        runs = one_fuse(cluster, node, fuse, app_dir)
        for test, (op, unit, per) in TESTS.items():
            app, base = median_rate(runs[op]["app"]) / per, median_rate(runs[op]["node"]) / per
            paired = sorted(a.rate / n.rate for a, n in zip(runs[op]["app"], runs[op]["node"], strict=True))
            print(f"[bench] {fuse}: {test}: app/node per round {paired[0]:.2f} to {paired[-1]:.2f}")
            report.add(f"data path, {fuse}: {test}, app pod through its bind", app, unit, HOST, base,
                       goal=ratio_at_least(GOAL))  # fmt: skip
            ratios[test][fuse] = app / base if base else 0.0
    title = "data path: app pod through its bind / the FUSE on the node"
    report.picture("data-path.svg", svg.bars(title, ratios, "app / node", GOAL))


def one_fuse(cluster: Any, node: Any, fuse: str, app_dir: str) -> dict[str, dict[str, list[Timed]]]:
    """The rounds on one FUSE: the app pod at ``app_dir``, the node at the mount it is a bind of."""
    from localcluster import realnodes
    from tests.e2e.fluid import kubectl

    kc = cluster.kubeconfig
    app_table = kubectl(kc, "-n", APPS, "exec", POD, "--", "cat", "/proc/self/mountinfo")
    with open(f"/proc/{containerd_pid(cluster, node.name)}/mountinfo") as table:
        found = same_fuse(app_table, table.read(), app_dir, f"{realnodes.KUBELET_ROOT}/pods")
    say_mounts(fuse, found)
    work = f"datapath-{secrets.token_hex(3)}"
    kubectl(kc, "-n", APPS, "exec", POD, "--", "mkdir", "-p", f"{app_dir}/{work}")
    with open(f"/proc/{app_pid(kc)}/cgroup") as container, open("/proc/self/mounts") as table:
        procs = cgroup_procs(container.read(), table.read())

    def app(op: str, path: str, *args: object) -> Timed:
        return parse(kubectl(kc, "-n", APPS, "exec", POD, "--", "python3", "-c", PROGRAM, op,
                             f"{app_dir}/{work}/{path}", *map(str, args)))  # fmt: skip

    def join() -> None:
        for cgroup in procs:
            Path(cgroup).write_text(f"{os.getpid()}\n")

    def host(op: str, path: str, *args: object) -> Timed:
        where = f"{found.node_path}/{work}/{path}"
        argv = realnodes.in_node(
            cluster, node, ["/usr/bin/python3", "-c", PROGRAM, op, where, *map(str, args)]
        )
        return parse(subprocess.run(argv, capture_output=True, text=True, check=True, preexec_fn=join).stdout)

    made = app("tree", "tree", FILES)
    print(f"[bench] {fuse}: {FILES} files made by the app in {made.seconds:.1f}s", flush=True)
    return rounds({"app": app, "node": host})


def rounds(sides: dict[str, Side]) -> dict[str, dict[str, list[Timed]]]:
    """Every test ROUNDS times on each side, alternating, the side that goes first swapped each round."""
    runs: dict[str, dict[str, list[Timed]]] = {op: {s: [] for s in sides} for op, _, _ in TESTS.values()}
    # Each side's file written once untimed first: the first round's writes (new files) were 1 s or 3 s
    # apart from the later ones (overwrites) and favoured whichever side wrote first.
    for name, side in sides.items():
        settle("write")
        side("write", f"{name}.bin", SIZE_MIB)
    for r in range(ROUNDS):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for op, _, _ in TESTS.values():
            for name in order:
                args: tuple[object, ...] = {
                    "write": (f"{name}.bin", SIZE_MIB),
                    "read": (f"{name}.bin",),
                    "rand": (f"{name}.bin", RANDOM_READS, SEED + r),
                    "stat": ("tree", FILES),
                    "find": ("tree",),
                }[op]
                settle(op)
                timed = sides[name](op, *args)
                runs[op][name].append(timed)
                print(f"[bench]   round {r} {name} {op}: {timed.seconds:.2f}s ({timed.rate:.4g}/s)")
    return runs


def app_pid(kc: Path) -> int:
    """The app container's first process (its ``sleep``), by the pod's UID in its cgroup."""
    from tests.e2e.fluid import kubectl

    uid = kubectl(kc, "-n", APPS, "get", "pod", POD, "-o", "jsonpath={.metadata.uid}").strip()
    for entry in Path("/proc").iterdir():
        try:
            sleeps = entry.name.isdigit() and (entry / "comm").read_text().strip() == "sleep"
            if sleeps and uid in (entry / "cgroup").read_text().replace("_", "-"):
                return int(entry.name)
        except OSError:
            continue
    raise RuntimeError(f"no process of pod {POD} ({uid}) on this host")


def settle(op: str) -> None:
    """Before each run: what the previous one left dirty written out (``sync``: else the second writer
    of a round competed with the first's writeback, 2x slower, whichever side it was); before a
    ``stat`` or ``find`` the kernel's dentries and inodes dropped too (2: not the page cache), since
    both sides look up one superblock's names and the second would find the first's lookups cached."""
    subprocess.run(["sync"], check=True)
    if op in ("stat", "find"):
        Path("/proc/sys/vm/drop_caches").write_text("2\n")


def say_mounts(fuse: str, found: SameFuse) -> None:
    for side, m in (("app", found.app), ("node", found.node)):
        print(f"[bench] {fuse}, {side}: {m.mount_point} ({m.fs_type} {m.device} root {m.root}) "
              f"{','.join(m.options)}", flush=True)  # fmt: skip
    print(f"[bench] {fuse}: the node reads {found.node_path}", flush=True)


def containerd_pid(cluster: Any, node: str) -> int:
    [containerd] = [p for p in cluster.procs if p.name == f"containerd-{node}"]
    return int(containerd.pid)


def apply(kc: Path, *objects: dict[str, Any]) -> None:
    from tests.e2e.fluid import kubectl

    body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    kubectl(kc, "apply", "-f", "-", stdin=json.dumps(body))


def runtime_claim(kc: Path) -> str:
    """Curvine's class, Dataset and CacheRuntime, the client's CPU unlimited; the Dataset's PVC once
    the runtime is Ready."""
    import yaml

    from tests.e2e.fluid import kubectl
    from tests.e2e.test_real_node_curvine_fluid import CLASS, DATASET, NAME

    kubectl(kc, "apply", "-f", str(CLASS))
    docs = [d for d in yaml.safe_load_all(DATASET.read_text()) if d]
    for doc in docs:
        if doc["kind"] == "CacheRuntime":
            doc["spec"]["client"]["resources"]["limits"].pop("cpu", None)
    apply(kc, *docs)
    kubectl(kc, "-n", APPS, "wait", "--for=condition=Ready", f"cacheruntime/{NAME}", "--timeout=300s")
    return NAME


def static_claim(cluster: Any, node: Any, tmp: Path) -> str:
    """A directory of a host Curvine and a static PV and claim of it, served by a FUSE pod."""
    from localcluster import product
    from localcluster.peers import curvinecluster
    from tests.e2e import test_real_node_curvine as csi_curvine

    layout = product.ensure_curvine(cluster)
    assert layout is not None
    with curvinecluster.mounted(layout, "/", tmp / "root"):
        (tmp / "root" / csi_curvine.DIRECTORY.lstrip("/")).mkdir(exist_ok=True)
    bed = csi_curvine.Bed(cluster, layout, "", node)
    apply(cluster.kubeconfig, *csi_curvine.static_volume(bed))
    return csi_curvine.CLAIM


def app_pod(claims: dict[str, str], node: str) -> dict[str, Any]:
    """The product's image (its python3 is the node's) as root, each claim at its path."""
    from images import product as product_image
    from kubectl_fluid.api import names

    mounts = [{"name": f"v{i}", "mountPath": path, "mountPropagation": "HostToContainer"}
              for i, path in enumerate(claims)]  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POD, "namespace": APPS},
        "spec": {
            "nodeSelector": {names.LABEL_HOSTNAME: node},
            "terminationGracePeriodSeconds": 1,
            "securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "containers": [
                {
                    "name": "app",
                    "image": product_image.NAME,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sleep", "infinity"],
                    # Burstable, as an app is: BestEffort's CPU weight (2) starves it on a loaded node.
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "volumeMounts": mounts,
                }
            ],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}}
                for i, claim in enumerate(claims.values())
            ],
        },
    }


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
    report = Report()
    run(report)
    report.print()
    if os.environ.get("BENCH_JSON"):  # alone, the figures and the picture only where asked
        report.write_json(Path(os.environ["BENCH_JSON"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
