"""``make demo``'s cache doing its job (issue 31): Curvine's Dataset mounts a real S3 bucket, moto's
S3 server run as a process of this host on the first node's bridge (``localcluster/peers/s3ufs.py``,
recorded with the cluster's processes, so it stays up after the demo and ``make down`` stops it).

``prepare`` starts and seeds it, and gives Curvine's Dataset its mount (the credentials from a
Secret, as Fluid users write them) before the Dataset is applied. ``narrate``, once the rest of the
Dataset's part has run: mountUFS's mount and reportSummary's UFS total on the Dataset; an app pod
named to no node, which the webhook steers to the node of Curvine's worker; a cold read from S3; a
DataLoad of the whole Dataset with ``kubectl fluid load --wait`` and its progress; a read after it,
which S3's own request log shows never reached S3. The reader stays for exploring.
"""

from __future__ import annotations

import hashlib
import random
import subprocess
import time
from typing import Any

from demo.apps import volume_pod
from demo.narration import Cluster, DemoError, eventually, pod_ready, say, step
from kubectl_fluid.api import names
from localcluster import realnodes as realnode
from localcluster.peers import s3ufs

NAME = "curvine-demo"  # Curvine's Dataset and CacheRuntime (hack/demo/datasetfuse.py)
BUCKET, PREFIX, SECRET = "fluid-ufs", "data", "s3-credentials"
MOUNT = "s3data"  # the mount's name, so its path in the Dataset: /s3data, under the PVC's /data
READER = "s3-reader"
COLD, LOADED = "train/shard-0.bin", "train/shard-1.bin"
_rng = random.Random(31)  # the same bytes every demo, so a surprise can be reproduced
FILES = {
    "README.txt": b"a training set in S3, cached by Curvine through kubectl-fluid\n",
    COLD: _rng.randbytes(48 << 20),
    LOADED: _rng.randbytes(48 << 20),
}


def prepare(k: Cluster, namespace: str) -> s3ufs.S3Server:
    step(
        "A real UFS: moto's S3 server on this host, where the nodes' pods reach it,"
        " seeded with a training set"
    )
    host = first_bridge(k)
    t0 = time.monotonic()
    s3 = s3ufs.recorded(k.cluster, host)
    s3.put(BUCKET)
    for key, data in FILES.items():
        s3.put(BUCKET, f"{PREFIX}/{key}", data)
    say(f"S3 at {s3.endpoint} ({time.monotonic() - t0:.1f}s to start and seed), bucket {BUCKET}:")
    for key, data in FILES.items():
        say(f"  s3://{BUCKET}/{PREFIX}/{key:<20} {size(len(data)):>10}  sha256 {sha(data)[:16]}…")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": namespace},
        "stringData": {"access": "demo-access-key", "secret": "demo-secret-key"},
    }
    k.apply(secret)
    return s3


def mounts(s3: s3ufs.S3Server) -> list[dict[str, Any]]:
    """The Dataset's mounts: the bucket's prefix as Fluid users write an S3 mount, its keys from the
    Secret (``encryptOptions``)."""
    return [
        {
            "name": MOUNT,
            "mountPoint": f"s3://{BUCKET}/{PREFIX}",
            "options": {"endpoint_url": s3.endpoint, "region_name": s3ufs.REGION, "path_style": "true"},
            "encryptOptions": [
                {"name": option, "valueFrom": {"secretKeyRef": {"name": SECRET, "key": option}}}
                for option in ("access", "secret")
            ],
        }
    ]


def narrate(k: Cluster, namespace: str, s3: s3ufs.S3Server) -> None:
    ufs_mounted(k, namespace)
    node = placed_near_the_cache(k, namespace)
    cold = timed_read(k, namespace, s3, COLD, "cold")
    load(k, namespace)
    after = timed_read(k, namespace, s3, LOADED, "loaded")
    say(
        f"{size(len(FILES[COLD]))} read in {cold:.2f}s from S3, {after:.2f}s from the cache"
        f" ({cold / after:.1f} times as fast), on {node}"
    )


def ufs_mounted(k: Cluster, namespace: str) -> None:
    step(
        f"The Dataset's UFS: Curvine's mountUFS mounted s3://{BUCKET}/{PREFIX} at /{MOUNT},"
        " reportSummary sized it"
    )
    total = f"{sum(len(v) for v in FILES.values()) / (1 << 20):.2f}MiB"

    def summarised() -> bool:
        status = k.get_json("dataset", NAME, "-n", namespace).get("status") or {}
        return status.get("ufsTotal") == total

    eventually(summarised, f"the Dataset's UFS total {total} (reportSummary)", timeout=150)
    k.run("get", "dataset", NAME, "-n", namespace)
    k.run(
        "get", "dataset", NAME, "-n", namespace, "-o",
        "jsonpath={range .status.conditions[?(@.type=='UpdateReady')]}"
        "{.type}={.status} {.message}{'\\n'}{end}",
    )  # fmt: skip
    master = names.master_pod_name(NAME)
    conf = "/app/curvine/conf/curvine-cluster.toml"
    k.run("exec", "-n", namespace, master, "--", "/app/curvine/bin/cv", "mount", "--conf", conf)


def placed_near_the_cache(k: Cluster, namespace: str) -> str:
    worker = k.get_json("pod", f"{NAME}-worker-0", "-n", namespace)["spec"]["nodeName"]
    step(
        f"A pod reading the Dataset, named to no node: the webhook steers it to {worker},"
        " where Curvine's worker caches"
    )
    label = names.cache_node_label(namespace, NAME)
    k.run("get", "nodes", "-L", label)
    k.apply(volume_pod(READER, namespace, NAME, k.busybox, node=None))
    k.run(
        "get", "pod", READER, "-n", namespace, "-o",
        "jsonpath={.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution}{'\\n'}",
    )  # fmt: skip
    eventually(lambda: pod_ready(k, namespace, READER), f"pod {READER} Running with the Dataset's PVC", 240)
    k.run("get", "pod", READER, "-n", namespace, "-o", "wide")
    node = str(k.get_json("pod", READER, "-n", namespace)["spec"]["nodeName"])
    if node != worker:
        raise DemoError(f"{READER} runs on {node}, not on {worker}, the node labelled {label}")
    say(f"the webhook added a preference for {label}; the scheduler chose {node}")
    k.run("exec", "-n", namespace, READER, "--", "ls", "-lR", f"/data/{MOUNT}")
    return node


def timed_read(k: Cluster, namespace: str, s3: s3ufs.S3Server, key: str, which: str) -> float:
    """``key`` read in full in the reader (timed there: no exec round trip in the figure), its sha256
    checked, and how many GETs of it S3 answered meanwhile (moto's request log)."""
    path, object_key = f"/data/{MOUNT}/{key}", f"{PREFIX}/{key}"
    if which == "cold":
        step(f"A cold read of {key}: Curvine has none of it, S3 serves it")
    else:
        step(f"A read of {key} after the load: the cache serves it, S3 is not asked")
    gets = s3.gets(BUCKET, object_key)
    # busybox's date has no %N: the kernel's uptime (10 ms steps) around the read.
    script = (
        f'a=$(cut -d" " -f1 /proc/uptime); sha256sum "{path}"; b=$(cut -d" " -f1 /proc/uptime); echo "$a $b"'
    )
    out = k.run("exec", "-n", namespace, READER, "--", "sh", "-c", script)
    line, stamps = out.strip().splitlines()
    if line.split()[0] != sha(FILES[key]):
        raise DemoError(f"{path} read back with sha256 {line.split()[0]}, S3 holds {sha(FILES[key])}")
    start, end = (float(t) for t in stamps.split())
    asked = s3.gets(BUCKET, object_key) - gets
    say(
        f"read in {end - start:.2f}s, sha256 as in S3; S3 answered {asked} GET(s) of s3://{BUCKET}/{object_key}"
    )
    if which == "cold" and asked == 0:
        raise DemoError(f"the cold read of {key} asked S3 nothing: was it cached before?")
    if which == "loaded" and asked:
        raise DemoError(
            f"the read of {key} after the load asked S3 {asked} time(s): the load did not cache it"
        )
    return max(end - start, 0.01)


def load(k: Cluster, namespace: str) -> None:
    step(
        "`kubectl fluid load`: a DataLoad of the whole Dataset, run by Curvine's own script,"
        " with its progress"
    )
    command = ["fluid", "load", NAME, "-n", namespace, "--wait", "--timeout=300s"]
    print(f"$ kubectl {' '.join(command)}", flush=True)
    # Streamed, not captured: its progress lines (its stderr) are shown as they come, in the demo's
    # output with the rest.
    done = subprocess.run([k.kubectl_bin, *command], env=k.env, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        k.run("get", "dataload", "-n", namespace, check=False)
        raise DemoError(f"kubectl fluid load exited {done.returncode}")
    k.run("get", "dataload", "-n", namespace)

    def cached() -> bool:
        states = (k.get_json("dataset", NAME, "-n", namespace).get("status") or {}).get("cacheStates") or {}
        return str(states.get("cachedPercentage", "")).rstrip("%") == "100.0"

    eventually(cached, "the Dataset 100.0% cached (reportSummary, asked as the load ended)", timeout=60)
    k.run("get", "dataset", NAME, "-n", namespace)


def first_bridge(k: Cluster) -> str:
    """The host's address on the first node's bridge: the nodes' pods reach this host there."""
    nodes = realnode.recorded(k.cluster)
    if not nodes:
        raise DemoError("no real node is running")
    return nodes[0].bridge_ip


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} B"
