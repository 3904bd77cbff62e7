"""``make demo``'s FUSE path as Fluid runs it (SPEC §7: the FUSE of a Dataset's PVC is its runtime's
client): Curvine's own CacheRuntimeClass, Dataset and CacheRuntime (manifests/samples/curvine-fluid/,
Curvine's files but for the image and this machine's settings; the Dataset mounts the demo's S3
bucket, hack/demo/cacheufs.py, in place of Curvine's own namespace), whose master and worker run Curvine's
image in Curvine's own layout. Two app pods on two nodes mount the Dataset's PVC: NodeStage labels
each node ``fluid.io/f-{ns}-{name}``, the runtime's client DaemonSet starts a client pod there
(Curvine's curvine-fuse at the runtime's target path), and the CSI node binds beneath it. A file
written on one node is read on the other and listed by Curvine's CLI; ``kubectl fluid mounts`` shows
mode client. Once the apps are gone the label and the client stay (Curvine's Dataset sets no
cleanPolicy: upstream's default, OnRuntimeDeleted), so the pod left running for exploring finds its
client already there.

Split in two because the master's readiness probe waits 35 s (Curvine's class): ``apply`` starts the
runtime before the clientless part, ``narrate`` takes it up after.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import Any

from demo.apps import volume_pod
from demo.narration import SAMPLES, Cluster, DemoError, eventually, in_namespace, pod_ready, say, step
from kubectl_fluid.api import names

CURVINE_FLUID = SAMPLES / "curvine-fluid"
CLASS, DATASET = CURVINE_FLUID / "cacheruntimeclass.yaml", CURVINE_FLUID / "dataset.yaml"
NAME = "curvine-demo"  # Curvine's Dataset and CacheRuntime; the Dataset's PVC has its name
MASTER = f"{NAME}-master-0"
CONF = "/app/curvine/conf/curvine-cluster.toml"  # where Curvine's scripts write its configuration
CV = "/app/curvine/bin/cv"  # Curvine's CLI in Curvine's layout
# The lines of `cv report` shown: the master, the worker and what it brings.
REPORTED = ("active_master", "capacity", "available", "live_worker_num", "live_worker_list")
APPS = ("app-a", "app-b")
LEFT_RUNNING = "app"
SYSTEM = "fluid-system"
FILE = "/data/from-app-a.txt"


def apply(k: Cluster, namespace: str, mounts: list[dict[str, Any]]) -> None:
    """Curvine's files, the Dataset's ``mounts`` the demo's UFS (hack/demo/cacheufs.py)."""
    step("FUSE data path as Fluid runs it: Curvine's own CacheRuntimeClass, Dataset and CacheRuntime")
    k.run("apply", "-f", str(CLASS))
    docs = in_namespace(DATASET, namespace)
    for doc in docs:
        if doc["kind"] == "Dataset":
            doc["spec"]["mounts"] = mounts
    k.apply(*docs)
    say(
        "Curvine's master waits 35 s for its readiness probe (Curvine's class):"
        " the clientless part runs meanwhile"
    )


def narrate(k: Cluster, namespace: str) -> None:
    runtime_ready(k, namespace)
    placed = dict(zip(APPS, (k.nodes[0], k.nodes[-1]), strict=True))
    labelled = apps_mount(k, namespace, placed)
    text = shared_file(k, namespace, placed)
    apps_gone(k, namespace, labelled)
    left_running(k, namespace, placed["app-a"], text)


def runtime_ready(k: Cluster, namespace: str) -> None:
    step(f"Curvine's runtime {NAME}: its master elects itself, its worker registers")
    k.run("wait", "-n", namespace, "--for=condition=Ready", f"cacheruntime/{NAME}", "--timeout=300s")
    k.run("get", "dataset,cacheruntime", NAME, "-n", namespace)
    k.run("get", "pods", "-n", namespace, "-l", f"{names.LABEL_CACHERUNTIME_NAME}={NAME}", "-o", "wide")
    eventually(
        lambda: "live_worker_num: 1" in cv(k, namespace, "report", show=False), "the worker registered", 120
    )
    report = cv(k, namespace, "report", shown=lambda line: line.split(":")[0].strip() in REPORTED)
    if MASTER not in report:
        raise DemoError(f"the active master is not {MASTER}: {report!r}")
    say(f"the master elected itself ({MASTER}), one worker registered with its capacity")
    k.run("get", "daemonset", f"{NAME}-client", "-n", namespace, "-o", "wide")
    say(f"its client DaemonSet runs nowhere yet: no node carries {label(namespace)}")


def apps_mount(k: Cluster, namespace: str, placed: dict[str, str]) -> list[str]:
    """The two apps Running with the Dataset's PVC; the nodes labelled for the client."""
    step(
        f"Two pods mount the Dataset's PVC {NAME}, on {' and '.join(placed.values())}:"
        " each node gets its client"
    )
    k.apply(*(volume_pod(app, namespace, NAME, k.busybox, node) for app, node in placed.items()))
    for app in APPS:
        eventually(lambda a=app: pod_ready(k, namespace, a), f"pod {app} Running with its volume", 240)  # type: ignore[misc]
    k.run("get", "nodes", "-L", label(namespace))
    labelled = labelled_nodes(k, namespace)
    if labelled != sorted(set(placed.values())):
        raise DemoError(f"the nodes labelled {label(namespace)}: {labelled}, not {sorted(placed.values())}")
    clients = client_pods(k, namespace)
    k.run("get", "pods", "-n", namespace, "-l", names.client_pod_selector(NAME), "-o", "wide")
    if sorted(clients.values()) != labelled:
        raise DemoError(f"the client pods run on {sorted(clients.values())}, not on {labelled}")
    say(
        f"NodeStage labelled {' and '.join(labelled)}; the runtime's client pod started on each"
        " and mounted Curvine"
    )
    mounts = eventually(
        lambda: client_mounts(k, namespace, ready_on=labelled), "a Ready client-mode FuseMount per node"
    )
    k.run("fluid", "mounts", "-o", "wide")
    own = k.get_json("pods", "-n", SYSTEM, "-l", names.LABEL_MOUNT_KEY)["items"]
    if own:
        raise DemoError(f"the CSI node started FUSE pods of its own: {[p['metadata']['name'] for p in own]}")
    say(
        f"{len(mounts)} mount(s) of mode client, each served by its node's client pod; no FUSE pod of the"
        " CSI node's own runs"
    )
    return labelled


def shared_file(k: Cluster, namespace: str, placed: dict[str, str]) -> str:
    step(
        f"A file written in app-a on {placed['app-a']} is read in app-b on {placed['app-b']},"
        " and is in Curvine"
    )
    text = f"written in app-a at {time.strftime('%H:%M:%S')}"
    k.run("exec", "-n", namespace, "app-a", "--", "sh", "-c", f"echo {shlex.quote(text)} > {FILE}")
    seen = k.run("exec", "-n", namespace, "app-b", "--", "cat", FILE).strip()
    if seen != text:
        raise DemoError(f"app-b read {seen!r}, expected {text!r}")
    listed = cv(k, namespace, "fs", "ls", "/")
    if FILE.rsplit("/", 1)[1] not in listed:
        raise DemoError(f"{FILE} is not in Curvine's /: {listed!r}")
    return text


def apps_gone(k: Cluster, namespace: str, labelled: list[str]) -> None:
    step("Both pods deleted: their volumes unstaged, the label and the clients stay")
    k.run("delete", "pod", *APPS, "-n", namespace, "--wait=true")
    eventually(lambda: not client_mounts(k, namespace), "the client-mode FuseMounts gone", timeout=120)
    k.run("get", "nodes", "-L", label(namespace))
    k.run("get", "pods", "-n", namespace, "-l", names.client_pod_selector(NAME), "-o", "wide")
    if labelled_nodes(k, namespace) != labelled or sorted(client_pods(k, namespace).values()) != labelled:
        raise DemoError("the label or the client pods did not stay after the apps were deleted")
    say(
        "Curvine's Dataset sets no cleanPolicy: upstream's default, OnRuntimeDeleted, keeps each node's"
        " label and client for the runtime's life (OnDemand would take both with the last volume)"
    )


def left_running(k: Cluster, namespace: str, node: str, text: str) -> None:
    step(f"A pod left running for you on {node}: its node's client is there already")
    t0 = time.monotonic()
    k.apply(volume_pod(LEFT_RUNNING, namespace, NAME, k.busybox, node))
    eventually(lambda: pod_ready(k, namespace, LEFT_RUNNING), f"pod {LEFT_RUNNING} Running", 120)
    say(f"{LEFT_RUNNING} Ready {time.monotonic() - t0:.1f}s after its apply")
    again = k.run("exec", "-n", namespace, LEFT_RUNNING, "--", "cat", FILE).strip()
    if again != text:
        raise DemoError(f"{LEFT_RUNNING} read {again!r}, expected {text!r}")


def take_down(k: Cluster, namespace: str) -> None:
    """The previous demo's Dataset apps, then its clients, while Curvine's master still runs: a client's
    preStop unmounts its FUSE (a stat of it asks the master). Deleting the namespace at once would
    stop the master with the clients, whose preStop then hangs and leaves a dead mount on the node."""
    apps = (*APPS, LEFT_RUNNING)
    k.run("delete", "pod", *apps, "-n", namespace, "--ignore-not-found", "--wait=true", show=False)
    k.run("label", "nodes", "--all", f"{label(namespace)}-", show=False)
    eventually(lambda: not any_client_pod(k, namespace), "the previous demo's client pods gone", timeout=120)


def any_client_pod(k: Cluster, namespace: str) -> bool:
    return bool(k.get_json("pods", "-n", namespace, "-l", names.client_pod_selector(NAME))["items"])


def label(namespace: str) -> str:
    return names.fuse_node_label(namespace, NAME)


def labelled_nodes(k: Cluster, namespace: str) -> list[str]:
    listed = k.get_json("nodes", "-l", f"{label(namespace)}={names.TRUE}")["items"]
    return sorted(n["metadata"]["name"] for n in listed)


def client_pods(k: Cluster, namespace: str) -> dict[str, str]:
    """name → node of the runtime's client pods that are Ready and not deleted."""
    listed = k.get_json("pods", "-n", namespace, "-l", names.client_pod_selector(NAME))["items"]
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in listed
        if not p["metadata"].get("deletionTimestamp") and p.get("status", {}).get("phase") == "Running"
    }


def client_mounts(k: Cluster, namespace: str, ready_on: list[str] | None = None) -> list[dict[str, Any]]:
    """The client-mode FuseMounts of the Dataset; with ``ready_on``, empty until each of those nodes
    has a Ready one."""
    found = [
        fm
        for fm in k.get_json("fusemounts")["items"]
        if fm["spec"].get("mode") == names.CLIENT_MODE
        and (fm["spec"].get("dataset") or {}).get("name") == NAME
        and (fm["spec"].get("dataset") or {}).get("namespace") == namespace
    ]
    if ready_on is None:
        return found
    ready_ = sorted(fm["spec"]["nodeName"] for fm in found if fm.get("status", {}).get("phase") == "Ready")
    return found if ready_ == sorted(ready_on) else []


def cv(
    k: Cluster, namespace: str, *args: str, show: bool = True, shown: Callable[[str], bool] = lambda _: True
) -> str:
    """Curvine's own CLI in the master's pod, with the configuration Curvine's scripts wrote."""
    return k.run("exec", "-n", namespace, MASTER, "--", CV, *args, "--conf", CONF, show=show, shown=shown)
