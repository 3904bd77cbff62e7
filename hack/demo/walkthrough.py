"""``make demo``: both data paths of kubectl-fluid on the local cluster, narrated, with real traffic,
on real nodes as a user runs them.

0. The cluster is shaped as a user's (hack/localcluster/userscluster.py): three real kubelet +
   containerd nodes (``LOCALCLUSTER_REAL_NODES=N`` for another number), the product's image imported
   into each. kubectl-fluid is deployed as users deploy it, ``kubectl apply -k
   manifests/``: the controller, the webhook (its certificate bootstrapped from its pod), the CSI
   controller with csi-provisioner, and the CSI node DaemonSet, which registers with kubelet itself.
1. Clientless: the mooncake samples (CacheRuntimeClass, Dataset, CacheRuntime), whose master and
   worker run as real pods from the Mooncake image. An app Deployment is injected with
   ``kubectl fluid inject --wait``; inside its container a shell sources runtime.sh and puts a value
   through Mooncake; a second replica gets it back at its start (its log) and through ``kubectl exec``.
   The narration says which node runs what: the value crosses nodes on its way.
2. FUSE as Fluid runs it (hack/demo/datasetfuse.py): Curvine's own CacheRuntimeClass, Dataset and
   CacheRuntime; its master elects itself, its worker registers; two pods on two nodes mount the
   Dataset's PVC, each node gets the label and the runtime's client pod (Curvine's curvine-fuse), a
   file crosses nodes; the label and clients stay after the apps (OnRuntimeDeleted); a pod is left
   running. Applied before the clientless part, whose minute covers the master's 35 s probe delay.
   Its Dataset mounts a real S3 bucket (hack/demo/cacheufs.py: moto's server on this host, seeded
   first); after the part above, the cache does its job: the UFS mounted and sized, a pod steered to
   the worker's node, a cold read from S3, ``kubectl fluid load`` with its progress, a read after it
   that S3 never sees.
3. The CSI driver's own FUSE, for a StorageClass's volumes (Curvine's own CSI contract): the sample
   Curvine cluster (a master and a worker, real pods from Curvine's image), then a PVC of the sample
   ``curvine`` StorageClass (csi-provisioner → CreateVolume, a directory made in that Curvine)
   mounted by two busybox pods, each on its own node. Each node runs one FUSE pod of Curvine's own
   curvine-fuse from Curvine's image (``kubectl fluid mounts``: one mount per node); a file written on
   one node is read on the other, and in Curvine itself (``cv fs ls`` in the master); a FUSE pod is
   deleted and the running containers read the file again through its replacement; once both pods
   are gone the FUSE pods are gone and nothing of the volume stays mounted on any node; a last pod
   mounts the volume again and is left running.

Everything stays afterwards for exploring: the demo's namespace, the sample Curvine cluster and
StorageClass. The next ``make demo`` deletes them first and starts afresh; ``make down`` stops it all.

Every pod is a real container on a real node; everything printed is the output of what ran. Exits
non-zero at the first step that does not do what it says.
"""

from __future__ import annotations

import argparse
import re
import secrets
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from demo import cacheufs, datasetfuse
from demo.apps import APP, CONFIG_MAP, app_deployment, curvine_claim, master_metrics, sourced, volume_pod
from demo.narration import (
    REPO,
    SAMPLES,
    Cluster,
    DemoError,
    eventually,
    in_namespace,
    pod_ready,
    ready,
    say,
    step,
)
from kubectl_fluid.api import names
from localcluster import realnodes as realnode

NS = "fluid-demo"
DS = "demo"
SYSTEM = "fluid-system"
APP_NAME = "demo-app"
KEY = "greeting"
# The sample Curvine cluster, as users apply it (in `default`, which its addresses name).
CURVINE_SAMPLE = SAMPLES / "curvine-cluster.yaml"
CURVINE_NS = "default"
CURVINE_MASTER = "curvine-master-0"
CLAIM = "shared"
LEFT_RUNNING = "reader"
# What the last lines suggest trying, each on what the demo left.
NEXT = (
    "kubectl fluid datasets -A",
    "kubectl fluid mounts -o wide",
    f"kubectl exec -n {NS} {LEFT_RUNNING} -- cat /data/hello.txt",
    f"kubectl get dataset,dataload -n {NS}",
    f"kubectl exec -n {NS} {cacheufs.READER} -- ls -l /data/{cacheufs.MOUNT}/train",
    f"kubectl fluid load {cacheufs.NAME} /{cacheufs.MOUNT}/train -n {NS} --wait",
)


# ------------------------------------------------------------------ deploy


def deploy(k: Cluster) -> None:
    step("kubectl-fluid deployed as users deploy it: its image is on each node, its manifests applied")
    k.run("get", "nodes", "-o", "wide")
    k.run("apply", "-k", str(REPO / "manifests"))
    # kubectl's own progress lines while each workload rolls out (the first start takes a minute:
    # every container waits for its startupProbe).
    for workload in ("deployment/fluid-controller", "deployment/fluid-webhook",
                     "deployment/fluid-csi-controller", "daemonset/fluid-csi-node"):  # fmt: skip
        try:
            k.run("rollout", "status", "-n", SYSTEM, workload, "--timeout=300s")
        except DemoError:
            why_not_rolled_out(k, workload)
            raise

    def bootstrapped() -> bool:
        hooks = k.get_json("mutatingwebhookconfiguration", "fluid-pod-admission-webhook")["webhooks"]
        return all(h["clientConfig"].get("caBundle") for h in hooks)

    eventually(bootstrapped, "the webhook's caBundle, written by its pod", timeout=120)
    say("the webhook bootstrapped its certificate and wrote its CA into its configuration")
    for node in k.nodes:
        drivers = eventually(
            lambda n=node: k.get_json("csinode", n)["spec"].get("drivers"),  # type: ignore[misc]
            f"the CSI driver registered with kubelet on {node}",
        )
        say(f"kubelet on {node} registered CSI driver(s): {', '.join(d['name'] for d in drivers)}")
    k.run("get", "pods", "-n", SYSTEM, "-o", "wide")


def why_not_rolled_out(k: Cluster, workload: str) -> None:
    """What a rollout that timed out is waiting for: its pods, their last events and log lines (the
    previous container's too), so a failed demo explains itself."""
    name = workload.split("/", 1)[1]
    step(f"{workload} did not roll out: its pods, events and logs")
    k.run("get", "pods", "-n", SYSTEM, "-l", f"app.kubernetes.io/name={name}", "-o", "wide", check=False)
    k.run("describe", "pods", "-n", SYSTEM, "-l", f"app.kubernetes.io/name={name}", check=False,
          shown=lambda line: not line.startswith("  ") or "Warning" in line or "Normal" in line)  # fmt: skip
    for previous in ("", "--previous"):
        k.run("logs", "-n", SYSTEM, "-l", f"app.kubernetes.io/name={name}", "--tail=40", "--prefix",
              *([previous] if previous else []), check=False)  # fmt: skip


# ------------------------------------------------------------------ clientless


def clientless(k: Cluster) -> None:
    step("Clientless data path: the Mooncake samples, master and worker as real pods")
    k.run("apply", "-f", str(SAMPLES / "cacheruntimeclass-mooncake.yaml"))
    k.apply(*in_namespace(SAMPLES / "dataset-mooncake.yaml", NS))
    master = eventually(lambda: pod_ready(k, NS, f"{DS}-master-0"), "the Mooncake master Ready", 240)
    worker = eventually(lambda: pod_ready(k, NS, f"{DS}-worker-0"), "the Mooncake worker Ready", 240)
    eventually(
        lambda: k.get_json("dataset", DS, "-n", NS).get("status", {}).get("phase") == "Bound",
        f"Dataset {DS} Bound",
    )
    # The runtime's Ready condition follows its pods' readiness, a moment after them.
    eventually(lambda: ready(k.get_json("cacheruntime", DS, "-n", NS)), f"CacheRuntime {DS} Ready")
    k.run("get", "dataset,cacheruntime", DS, "-n", NS)
    k.run("get", "pods", "-n", NS, "-l", f"{names.LABEL_CACHERUNTIME_NAME}={DS}", "-o", "wide")
    master_ip = str(master["status"]["podIP"])
    segment = eventually(
        lambda: master_metrics(master_ip).get("segment_total_capacity_bytes"),
        "the worker's segment mounted at the master",
        timeout=120,
    )
    say(
        f"the worker on {worker['spec']['nodeName']} found the master on {master['spec']['nodeName']} by its"
        f" DNS name and gave it a {int(segment) >> 20} MiB segment"
    )

    step("The runtime config the controller rendered, as a pod will source it")
    k.run("fluid", "config", "show", DS, "-n", NS)

    step("An app Deployment, then `kubectl fluid inject` to give its pods the dataset's config")
    k.run("create", "configmap", CONFIG_MAP, "-n", NS, f"--from-file={APP}")
    k.apply(app_deployment(APP_NAME, NS, DS, KEY))
    k.run("fluid", "inject", f"deploy/{APP_NAME}", "--dataset", DS, "-n", NS, "--wait")
    [writer] = eventually(lambda: app_pods(k), "the injected app pod Ready", timeout=120)
    say(f"the injected part of pod {writer}, as the webhook admitted it:")
    k.run(
        "get", "pod", writer, "-n", NS, "-o",
        "jsonpath={range .spec.containers[0].env[*]}env   {.name}={.value}{'\\n'}{end}"
        "{range .spec.containers[0].volumeMounts[*]}mount {.mountPath} ({.name}){'\\n'}{end}",
    )  # fmt: skip

    step(f"Inside {writer}: source runtime.sh, then put a value through Mooncake")
    exec_app(k, writer, 'getent hosts "${MASTER_NAME}-0.${MASTER_SERVICE_NAME}"')
    value = f"hello from {writer} {secrets.token_hex(3)}"
    exec_app(k, writer, f"python /app/{APP.name} put {KEY} {shlex.quote(value)}")
    keys = eventually(lambda: master_metrics(master_ip).get("master_key_count"), "the key at the master", 30)
    say(f"the master now holds {keys:.0f} key(s)")

    step("A second replica gets the value back: at its start (its log), and through kubectl exec")
    k.run("scale", "-n", NS, f"deploy/{APP_NAME}", "--replicas=2")
    both: list[str] = eventually(lambda: (ps := app_pods(k))[1:] and ps, "a second app pod Ready", 120)
    reader = both[1]
    eventually(
        lambda: value in k.run("logs", "-n", NS, reader, "-c", "app", show=False),
        f"{reader}'s log showing the value",
    )
    k.run("logs", "-n", NS, reader, "-c", "app", shown=not_glog)
    got = exec_app(k, reader, f"python /app/{APP.name} get {KEY}").strip()
    if got != value:
        raise DemoError(f"{reader} read back {got!r}, expected {value!r}")
    say(f"read back through Mooncake: {got!r}")
    where = {p: k.get_json("pod", p, "-n", NS)["spec"]["nodeName"] for p in (writer, reader)}
    say(
        f"put on {where[writer]}, got on {where[reader]}, held in the worker's memory on"
        f" {worker['spec']['nodeName']}: the apps lend Mooncake none of theirs"
    )


def app_pods(k: Cluster) -> list[str]:
    """The app's Ready pods that carry the dataset's config, oldest first."""
    listed = k.get_json("pods", "-n", NS, "-l", f"app={APP_NAME}")["items"]
    live = [
        p
        for p in listed
        if not p["metadata"].get("deletionTimestamp")
        and ready(p)
        and names.runtime_config_volume(DS) in [v["name"] for v in p["spec"].get("volumes", [])]
    ]
    return [p["metadata"]["name"] for p in sorted(live, key=lambda p: p["metadata"]["creationTimestamp"])]


def exec_app(k: Cluster, pod: str, command: str) -> str:
    """``command`` in a shell of the app container that sourced the dataset's runtime.sh."""
    return k.run("exec", "-n", NS, pod, "-c", "app", "--", "sh", "-c", sourced(DS, command), shown=not_glog)


# Mooncake's client library logs through glog to stderr; the demo shows what the app itself says.
GLOG_LINE = re.compile(r"^(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ |WARNING: Logging before InitGoogleLogging)")


def not_glog(line: str) -> bool:
    return not GLOG_LINE.match(line)


# ------------------------------------------------------------------ FUSE


def curvine(k: Cluster) -> None:
    step(
        "The CSI driver's own FUSE, for a StorageClass's volumes (Curvine's own CSI contract):"
        " the sample Curvine cluster"
    )
    k.run("apply", "-f", str(CURVINE_SAMPLE))
    for workload in ("statefulset/curvine-master", "statefulset/curvine-worker"):
        k.run("rollout", "status", "-n", CURVINE_NS, workload, "--timeout=300s")
    k.run("get", "pods", "-n", CURVINE_NS, "-l", "app.kubernetes.io/part-of=curvine", "-o", "wide")
    eventually(
        lambda: "live_worker_num: 1" in cv(k, "report", show=False),
        "the worker registered at the master",
        120,
    )
    cv(k, "report", shown=lambda line: line.split(":")[0].strip() in datasetfuse.REPORTED)


def cv(k: Cluster, *args: str, show: bool = True, shown: Callable[[str], bool] = lambda line: True) -> str:
    """Curvine's own CLI in the master's pod (its configuration names the cluster)."""
    return k.run("exec", "-n", CURVINE_NS, CURVINE_MASTER, "--", "cv", *args, show=show, shown=shown)


def reader_nodes(k: Cluster) -> dict[str, str]:
    """reader-a and reader-b, each on a node of its own where the cluster has two."""
    return {"reader-a": k.nodes[0], "reader-b": k.nodes[-1]}


def fuse(k: Cluster) -> None:
    placed = reader_nodes(k)
    step(
        "One PVC of the sample StorageClass, a pod on each of two nodes,"
        " one FUSE pod per node running curvine-fuse"
    )
    # A StorageClass's parameters are immutable: one of another version of the sample goes first.
    k.run("delete", "storageclass", "curvine", "--ignore-not-found", show=False)
    k.run("apply", "-f", str(SAMPLES / "storageclass-curvine.yaml"))
    busybox = k.busybox
    k.apply(claim(), *(volume_pod(name, NS, CLAIM, busybox, node) for name, node in placed.items()))
    eventually(
        lambda: k.get_json("pvc", CLAIM, "-n", NS).get("status", {}).get("phase") == "Bound",
        f"PVC {CLAIM} Bound (csi-provisioner → CreateVolume, a directory made in Curvine)",
    )
    k.run("get", "pvc", CLAIM, "-n", NS)
    for name in ("reader-a", "reader-b"):
        eventually(lambda n=name: pod_ready(k, NS, n), f"pod {name} Running with its volume", 180)  # type: ignore[misc]
    propagation = "jsonpath={.spec.containers[0].volumeMounts[0].mountPropagation}"
    given = {
        n: k.run("get", "pod", n, "-n", NS, "-o", propagation, show=False) for n in ("reader-a", "reader-b")
    }
    if set(given.values()) != {"HostToContainer"}:
        raise DemoError(f"the webhook did not give the pods' /data mount HostToContainer: {given}")
    say("neither pod wrote mountPropagation: the webhook gave both /data mounts HostToContainer")

    def a_mount_per_node() -> list[dict[str, Any]] | None:
        items = [i for i in standalone_mounts(k) if i["spec"]["nodeName"] in placed.values()]
        ready_ = [i for i in items if i.get("status", {}).get("phase") == "Ready"]
        targets = [t for i in ready_ for v in i["status"].get("volumes", []) for t in v.get("targets", [])]
        return items if len(ready_) == len(set(placed.values())) and len(targets) == 2 else None

    mounts = eventually(a_mount_per_node, "a Ready FuseMount on each pod's node, with both pods' targets")
    # What must be unmounted at the end: the key's FUSE and its volumes' sources, the pods' targets.
    marks = [
        mounts[0]["spec"]["mountKey"],
        *(k.get_json("pod", n, "-n", NS)["metadata"]["uid"] for n in placed),
    ]
    k.run("fluid", "mounts")
    k.run("fluid", "mounts", "-o", "wide")
    say(
        f"one mount key, {len(mounts)} FUSE mount(s): "
        + ", ".join(f"{m['spec']['nodeName']} with {m['status']['refCount']} staged volume" for m in mounts)
    )
    fuse_pod = next(iter(fuse_pods(k).values()))
    k.run("get", "pods", "-n", SYSTEM, "-l", names.LABEL_MOUNT_KEY, "-o", "wide")
    program = "jsonpath={.spec.containers[0].image} {.spec.containers[0].command[0]}"
    served = k.run("get", "pod", fuse_pod, "-n", SYSTEM, "-o", program)
    say(f"the FUSE pod runs {served.split()[1]} of {served.split()[0]}: Curvine's own client, not a stand-in")
    text = shared_file(k, placed)
    recovery(k, text, placed)
    teardown(k, marks)
    left_running(k, busybox, text)


def shared_file(k: Cluster, placed: dict[str, str]) -> str:
    step(
        f"A file written in reader-a's container on {placed['reader-a']} is read in reader-b's on"
        f" {placed['reader-b']}, and is in Curvine itself"
    )
    text = f"written in reader-a at {time.strftime('%H:%M:%S')}"
    k.run("exec", "-n", NS, "reader-a", "--", "sh", "-c", f"echo {shlex.quote(text)} > /data/hello.txt")
    seen = k.run("exec", "-n", NS, "reader-b", "--", "cat", "/data/hello.txt").strip()
    if seen != text:
        raise DemoError(f"reader-b read {seen!r}, expected {text!r}")
    volume = k.get_json("pvc", CLAIM, "-n", NS)["spec"]["volumeName"]
    curvine_path = k.get_json("pv", volume)["spec"]["csi"]["volumeAttributes"][names.PARAM_CURVINE_PATH]
    listed = cv(k, "fs", "ls", curvine_path)
    if "hello.txt" not in listed:
        raise DemoError(f"hello.txt is not in Curvine's {curvine_path}: {listed!r}")
    return text


def teardown(k: Cluster, marks: list[str]) -> None:
    step("Deleting both pods: targets unpublished, the volume unstaged, each node's FUSE pod stopped")
    k.run("delete", "pod", "reader-a", "reader-b", "-n", NS, "--wait=true")
    eventually(lambda: not fuse_pods(k), "the FUSE pods gone", timeout=120)
    eventually(lambda: not standalone_mounts(k), "the FuseMounts of the CSI node's own FUSE gone")
    k.run("fluid", "mounts")
    nodes = realnode.recorded(k.cluster)
    left: list[str] = []

    def nothing_left() -> bool:
        with open("/proc/self/mountinfo") as table:
            seen = [line.split()[4] for line in table]
        for node in nodes:
            seen += realnode.namespace_mounts(k.cluster, node)
        left[:] = [p for p in seen if any(m in p for m in marks)]
        return not left

    try:
        eventually(nothing_left, "nothing of the volume mounted, on the host or in any node", timeout=60)
    except DemoError as err:
        raise DemoError(f"{err}; still mounted: {left}") from None
    say(f"no FUSE mount and no bind mount left on any of the {len(nodes)} nodes")


def left_running(k: Cluster, busybox: str, text: str) -> None:
    step("The volume mounted again by a pod left running for you: the file is still in Curvine")
    k.apply(volume_pod(LEFT_RUNNING, NS, CLAIM, busybox, k.nodes[len(k.nodes) // 2]))
    eventually(lambda: pod_ready(k, NS, LEFT_RUNNING), f"pod {LEFT_RUNNING} Running with its volume", 180)
    again = k.run("exec", "-n", NS, LEFT_RUNNING, "--", "cat", "/data/hello.txt").strip()
    if again != text:
        raise DemoError(f"{LEFT_RUNNING} read {again!r}, expected {text!r}")
    k.run("fluid", "mounts")


def claim() -> dict[str, Any]:
    return curvine_claim(CLAIM, NS)


def recovery(k: Cluster, text: str, placed: dict[str, str]) -> None:
    node = placed["reader-a"]
    step(
        f"The FUSE pod on {node} is deleted: the node service starts another, the running containers read on"
    )
    [(old, name)] = [(uid, pod) for uid, pod in fuse_pods(k).items() if fuse_node(k, pod) == node]
    t0 = time.monotonic()
    k.run("delete", "pod", "-n", SYSTEM, name, "--wait=false")
    eventually(lambda: (now := fuse_pods(k)) and old not in now, "the FUSE pod replaced", timeout=120)
    for name in ("reader-a", "reader-b"):
        eventually(
            lambda n=name: (
                k.run("exec", "-n", NS, n, "--", "cat", "/data/hello.txt", show=False).strip() == text
            ),  # type: ignore[misc]
            f"{name} reading the file again",
            timeout=120,
        )
    say(f"both containers read the file again {time.monotonic() - t0:.1f}s after the delete, not restarted:")
    k.run("get", "pods", "-n", NS, "reader-a", "reader-b")


def fuse_pods(k: Cluster) -> dict[str, str]:
    """uid → name of the FUSE pods running and not deleted (a replacement has the same name)."""
    listed = k.get_json("pods", "-n", SYSTEM, "-l", names.LABEL_MOUNT_KEY)["items"]
    return {
        p["metadata"]["uid"]: p["metadata"]["name"]
        for p in listed
        if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    }


def standalone_mounts(k: Cluster) -> list[dict[str, Any]]:
    """The FuseMounts of the CSI node's own FUSE (not the Dataset's, whose FUSE is its client)."""
    return [i for i in k.get_json("fusemounts")["items"] if i["spec"].get("mode") != names.CLIENT_MODE]


def fuse_node(k: Cluster, pod: str) -> str:
    return str(k.get_json("pod", pod, "-n", SYSTEM)["spec"]["nodeName"])


# ------------------------------------------------------------------ main


def fresh_start(k: Cluster) -> None:
    """The previous demo's objects go first (they stay after a demo, for exploring): Curvine's
    Dataset's apps and clients, its namespace, then the sample Curvine cluster and StorageClass (the
    namespace's volumes go before their Curvine, so DeleteVolume still finds it)."""
    if k.run("get", "namespace", NS, "--ignore-not-found", "-o", "name", show=False).strip():
        k.run("delete", "pod", cacheufs.READER, "-n", NS, "--ignore-not-found", "--wait=true", show=False)
        datasetfuse.take_down(k, NS)
        k.run("delete", "namespace", NS, "--wait=true", "--timeout=300s", show=False)
    # A label left by a demo stopped midway (nothing else removes it once the runtime is gone) would
    # start the next demo's client before any pod asks for it.
    k.run("label", "nodes", "--all", f"{datasetfuse.label(NS)}-", show=False)

    def volumes_left() -> list[str]:
        listed = k.get_json("pv")["items"]
        return [p["metadata"]["name"] for p in listed if p["spec"].get("storageClassName") == "curvine"]

    # DeleteVolume removes each claim's directory in Curvine: it must run before Curvine goes.
    eventually(lambda: not volumes_left(), "the previous demo's volumes deleted", timeout=180)
    gone = ("--ignore-not-found", "--wait=true", "--timeout=300s")
    k.run("delete", "-f", str(CURVINE_SAMPLE), *gone, show=False)
    k.run("delete", "storageclass", "curvine", "--ignore-not-found", show=False)
    k.run("create", "namespace", NS)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--state-dir", type=Path, default=REPO / ".dev")
    args = p.parse_args(argv)
    state_dir = args.state_dir.resolve()
    t0 = time.monotonic()
    try:
        k = Cluster(state_dir / "kubeconfig", state_dir)
        deploy(k)
        fresh_start(k)
        s3 = cacheufs.prepare(k, NS)
        datasetfuse.apply(k, NS, cacheufs.mounts(s3))
        clientless(k)
        datasetfuse.narrate(k, NS)
        cacheufs.narrate(k, NS, s3)
        curvine(k)
        fuse(k)
    except DemoError as err:
        print(f"\ndemo failed: {err}", file=sys.stderr)
        return 1
    step(
        f"Done in {time.monotonic() - t0:.0f}s. Everything stays up for you to explore (the next `make demo`"
        " starts afresh, `make down` stops it all). Try:"
    )
    say(f"export KUBECONFIG={k.kubeconfig}")
    for command in NEXT:
        say(command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
