"""The product on the shape of a real cluster: three real kubelet + containerd nodes, the product
deployed with ``kubectl apply -k manifests/`` from its image, as users run it.

- Pods of one node reach pods of another by IP and by a headless Service's DNS names; nothing a pod
  sends leaves this machine.
- Clientless: a Mooncake master on one node, one worker on each other node (the Dataset's Exclusive
  placement: a third worker finds no node), apps injected with ``kubectl fluid inject --wait`` on the
  master's node put and get a value, every byte of which crosses nodes (the apps lend no memory).
- FUSE: one ReadWriteMany claim of the sample StorageClass, served by the sample Curvine cluster's
  pods, used by pods on two nodes: one FUSE mount per node, each with its own pods; a file written on
  one node is read on the other; deleting one node's pods stops only that node's FUSE.
- Node loss: a node's kubelet and containerd killed -9 (hack/localcluster/nodeloss.py); the Node goes
  NotReady, the controller marks its FuseMounts Unknown and ``kubectl fluid mounts`` says so, the other
  nodes read through their own FUSE and talk to Mooncake; started again, the node is Ready, its
  FuseMounts Ready again, its pod reads on without a restart.
- ``kubectl drain`` of a node with an app on a FUSE volume: the app is evicted, the FUSE pod's eviction
  refused by its budget until the last unstage stops it, the drain completes, nothing is left mounted.

A cluster of its own (tests/e2e/users_cluster.py, three nodes). Skipped, saying why, where a real node
cannot run or the images cannot be built."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import localcluster
from demo.apps import APP, CONFIG_MAP, app_deployment, curvine_claim, master_metrics, sourced
from kubectl_fluid.api import names
from localcluster import nodeloss, podnetwork, realnodes
from tests.e2e.fluid import MANIFESTS, kubectl, kubectl_binary
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.test_real_node_product import ready
from tests.e2e.users_cluster import users_cluster, why_no_users_cluster
from tests.e2e.wait import eventually

NODES = [f"{realnodes.NAME_PREFIX}{i}" for i in range(3)]
SYSTEM = "fluid-system"
NS = "default"
DS = "spread"
KEY = "crossing"
CLAIM = "shared"
SAMPLES = MANIFESTS / "samples"
BUSYBOX = realnodes.busybox_image("1.35.0")


@dataclass
class Bed:
    cluster: localcluster.Cluster
    figures: dict[str, str] = field(default_factory=dict)

    @property
    def kc(self) -> Path:
        return self.cluster.kubeconfig

    def node(self, name: str) -> realnodes.RealNode:
        node = realnodes.RealNode.load(self.cluster.state_dir / realnodes.NODES_DIR / name)
        assert node is not None, f"no record of {name}"
        return node


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_no_users_cluster()
    if reason:
        pytest.skip(reason)
    from images import mooncake

    t0 = time.monotonic()
    with users_cluster(tmp_path_factory.mktemp("three-nodes"), mooncake.build, nodes=3) as cluster:
        bed = Bed(cluster)
        bed.figures["cluster of three nodes up, images imported"] = f"{time.monotonic() - t0:.0f} s"
        yield bed


def kget(bed: Bed, *args: str) -> Any:
    """``kubectl get -o json ARGS``, as the loose JSON it is."""
    return json.loads(kubectl(bed.kc, "get", "-o", "json", *args))


def pinned(pod: dict[str, Any], node: str) -> dict[str, Any]:
    pod["spec"]["nodeSelector"] = {names.LABEL_HOSTNAME: node}
    return pod


def busybox_pod(name: str, command: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"test": "three-nodes"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "c",
                    "image": BUSYBOX,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", command],
                }
            ],
            **spec,
        },
    }


def apply(bed: Bed, *objects: dict[str, Any]) -> None:
    kubectl(
        bed.kc,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )


def sh(bed: Bed, pod: str, script: str, container: str | None = None) -> str:
    which = ["-c", container] if container else []
    return kubectl(bed.kc, "-n", NS, "exec", pod, *which, "--", "sh", "-c", script)


def running(bed: Bed, name: str, namespace: str = NS) -> dict[str, Any]:
    pod: dict[str, Any] = kget(bed, "-n", namespace, "pod", name)
    assert ready(pod), f"{name}: {pod.get('status', {}).get('phase')} on {pod['spec'].get('nodeName')}"
    return pod


def test_the_default_install_runs_a_csi_node_on_each_of_the_three_nodes(bed: Bed) -> None:
    listed = kget(bed, "nodes")["items"]
    assert sorted(n["metadata"]["name"] for n in listed) == NODES
    t0 = time.monotonic()
    kubectl(bed.kc, "apply", "-k", str(MANIFESTS))
    for workload in ("daemonset/fluid-csi-node", "deployment/fluid-controller", "deployment/fluid-webhook"):
        kubectl(bed.kc, "-n", SYSTEM, "rollout", "status", workload, "--timeout=300s")
    bed.figures["the default install rolled out on three nodes"] = f"{time.monotonic() - t0:.0f} s"
    pods = kget(bed, "-n", SYSTEM, "pods", "-l", "app.kubernetes.io/name=fluid-csi-node")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == NODES
    # The webhook serves from its pods' addresses: every node's pods are routed to by the API server.
    eventually(
        lambda: all(
            h["clientConfig"].get("caBundle")
            for h in kget(bed, "mutatingwebhookconfiguration", "fluid-pod-admission-webhook")["webhooks"]
        ),
        "the webhook's caBundle bootstrapped from its pod",
        timeout=60,
    )


def test_pods_on_different_nodes_reach_each_other_by_ip_and_by_headless_dns(bed: Bed) -> None:
    serve = "mkdir -p /w && echo served-on-$NODE > /w/index.html && exec httpd -f -p 8080 -h /w"
    pods = []
    for i, node in enumerate(NODES):
        pod = pinned(busybox_pod(f"web-{i}", serve, hostname=f"web-{i}", subdomain="webs"), node)
        pod["metadata"]["labels"]["app"] = "webs"
        pod["spec"]["containers"][0]["env"] = [{"name": "NODE", "value": node}]
        pods.append(pod)
    headless = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "webs", "namespace": NS},
        "spec": {"clusterIP": "None", "selector": {"app": "webs"}, "ports": [{"port": 8080}]},
    }
    apply(bed, headless, *pods)
    ips = {}
    for i in range(3):
        ips[i] = eventually(partial(running, bed, f"web-{i}"), f"web-{i} Running", timeout=120)["status"][
            "podIP"
        ]
    get_page = 'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 3 {} 8080 | tail -1'
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            by_ip = sh(bed, f"web-{i}", get_page.format(ips[j])).strip()
            assert by_ip == f"served-on-{NODES[j]}", (i, j, by_ip)
            name = f"web-{j}.webs.{NS}.svc.cluster.local"
            by_name = eventually(
                lambda n=name, frm=f"web-{i}": sh(bed, frm, get_page.format(n)).strip(),  # type: ignore[misc]
                f"{name} from web-{i}",
                timeout=30,
            )
            assert by_name == f"served-on-{NODES[j]}", (i, j, by_name)

    def rtt(frm: int, to: str) -> str:
        out = sh(bed, f"web-{frm}", f"ping -c 20 -i 0.2 -q {to} | tail -1")
        match = re.search(r"= [0-9.]+/([0-9.]+)/", out)
        assert match, out
        return f"{float(match.group(1)) * 1000:.0f} µs"

    bed.figures["pod-to-pod round trip, across nodes (ping avg)"] = rtt(0, ips[1])
    # Baseline: the same pod to its own node's side of the bridge (one hop, no forwarding).
    bed.figures["pod to its node's bridge address, same node (ping avg)"] = rtt(
        0, bed.node(NODES[0]).bridge_ip
    )
    # Nothing else: no route out of the pod, and the host forwards a node's pods to the cluster's only.
    outside = sh(bed, "web-0", "ping -c 1 -W 1 192.0.2.1 2>&1 || true")
    assert "Network is unreachable" in outside, outside
    for node in NODES:
        rules = bed.node(node)
        listed = kubectl_rules(podnetwork.chain(rules))
        assert f"-d {podnetwork.pod_range(rules)}" in listed, listed
        assert listed.rstrip().endswith("-j DROP"), listed
    # Bare pods: a drain (below) takes none without --force.
    kubectl(bed.kc, "-n", NS, "delete", "pod", "web-0", "web-1", "web-2", "--wait=false")


def kubectl_rules(chain: str) -> str:
    out = subprocess.run(["iptables", "-w", "5", "-S", chain], capture_output=True, text=True, check=True)
    return out.stdout


def spread_dataset() -> list[dict[str, Any]]:
    """The mooncake sample's Dataset with Exclusive placement whose workers keep off the first node,
    and a runtime whose master is on that node, with two workers."""
    hostname = names.LABEL_HOSTNAME
    dataset = {
        "apiVersion": "data.fluid.io/v1alpha1",
        "kind": "Dataset",
        "metadata": {"name": DS, "namespace": NS},
        "spec": {
            "placement": "Exclusive",
            "accessModes": ["ReadWriteMany"],
            "mounts": [{"name": "mc", "mountPoint": "mooncakefs:///"}],
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": hostname, "operator": "NotIn", "values": [NODES[0]]}]}
                    ]
                }
            },
        },
    }
    runtime = {
        "apiVersion": "data.fluid.io/v1alpha1",
        "kind": "CacheRuntime",
        "metadata": {"name": DS, "namespace": NS},
        "spec": {
            "runtimeClassName": "mooncake",
            "master": {"replicas": 1, "nodeSelector": {hostname: NODES[0]}},
            "worker": {
                "replicas": 2,
                "tieredStore": {
                    "levels": [{"processMemory": {"quota": "1Gi"}, "high": "0.95", "low": "0.7"}]
                },
            },
        },
    }
    return [dataset, runtime]


def replicas(bed: Bed, workers: int) -> None:
    patch = json.dumps({"spec": {"worker": {"replicas": workers}}})
    kubectl(bed.kc, "-n", NS, "patch", "cacheruntime", DS, "--type=merge", "-p", patch)


def workers(bed: Bed) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = kget(bed, "-n", NS, "pods", "-l", f"{names.LABEL_DATASET}={NS}-{DS}")[
        "items"
    ]
    return [p for p in listed if not p["metadata"].get("deletionTimestamp")]


def test_mooncake_master_on_one_node_a_worker_on_each_other_and_apps_put_and_get_across_nodes(
    bed: Bed,
) -> None:
    kubectl(bed.kc, "apply", "-f", str(SAMPLES / "cacheruntimeclass-mooncake.yaml"))
    apply(bed, *spread_dataset())
    master = eventually(partial(running, bed, f"{DS}-master-0"), "the master Running", timeout=180)
    assert master["spec"]["nodeName"] == NODES[0]

    master_ip = str(master["status"]["podIP"])
    eventually(
        lambda: (
            sorted(p["spec"]["nodeName"] for p in workers(bed) if ready(p)) == NODES[1:]
            and master_metrics(master_ip).get("segment_total_capacity_bytes") == 2 << 30
        ),
        "a worker on each of the two other nodes, their 1 GiB segments mounted at the master",
        timeout=180,
    )
    # A third worker finds no node: the Dataset keeps workers off the master's node, Exclusive
    # placement keeps two off one node. Asked for by scaling up, so no serving worker is deleted (a
    # deleted one's segment stays at the master until its lease ends, and a put there times out).
    replicas(bed, 3)

    def third_refused() -> str | None:
        pending = [p["metadata"]["name"] for p in workers(bed) if p["status"].get("phase") == "Pending"]
        if len(pending) != 1:
            return None
        events = kubectl(
            bed.kc, "-n", NS, "get", "events", "--field-selector", f"involvedObject.name={pending[0]}"
        )
        return events if "didn't match pod anti-affinity rules" in events else None

    eventually(third_refused, "the third worker Pending: no node for it", timeout=60)
    replicas(bed, 2)
    eventually(lambda: len(workers(bed)) == 2, "back to two workers", timeout=60)
    nodes_of = sorted(p["spec"]["nodeName"] for p in workers(bed))
    assert nodes_of == NODES[1:], nodes_of

    kubectl(bed.kc, "create", "configmap", CONFIG_MAP, "-n", NS, f"--from-file={APP}")
    app = app_deployment("app", NS, DS, KEY)
    app["spec"]["replicas"] = 2
    app["spec"]["template"]["spec"]["nodeSelector"] = {names.LABEL_HOSTNAME: NODES[0]}
    apply(bed, app)
    t0 = time.monotonic()
    ok(kubectl_fluid(bed.kc, "inject", "deploy/app", "--dataset", DS, "-n", NS, "--wait", timeout=300))
    bed.figures["inject --wait of two app pods"] = f"{time.monotonic() - t0:.1f} s"

    def app_pods() -> list[str] | None:
        listed = kget(bed, "-n", NS, "pods", "-l", "app=app")["items"]
        up = [
            p["metadata"]["name"]
            for p in listed
            if ready(p)
            and not p["metadata"].get("deletionTimestamp")
            and p["metadata"].get("annotations", {}).get(names.ANNOTATION_DATASET)
        ]
        return sorted(up) if len(up) == 2 else None

    found = eventually(app_pods, "two injected app pods Ready", timeout=60)
    assert found is not None
    writer, reader = found
    value = f"put on {NODES[0]}, held on {' and '.join(NODES[1:])}"
    sh(bed, writer, sourced(DS, f"python /app/mooncake_app.py put {KEY} '{value}'"), container="app")
    assert (
        sh(bed, reader, sourced(DS, f"python /app/mooncake_app.py get {KEY}"), container="app")
        == value + "\n"
    )
    # The apps lend the store no memory: the value is in a worker's segment, on another node.
    metrics = master_metrics(master_ip)
    assert metrics.get("master_key_count") == 1, metrics
    assert metrics.get("segment_allocated_bytes", 0) > 0, metrics


def curvine_up(bed: Bed) -> None:
    kubectl(bed.kc, "apply", "-f", str(SAMPLES / "curvine-cluster.yaml"))
    for workload in ("statefulset/curvine-master", "statefulset/curvine-worker"):
        kubectl(bed.kc, "rollout", "status", "-n", NS, workload, "--timeout=300s")
    eventually(
        lambda: (
            "live_worker_num: 1"
            in kubectl(bed.kc, "exec", "-n", NS, "curvine-master-0", "--", "cv", "report")
        ),
        "the Curvine worker registered at its master",
        timeout=120,
    )
    kubectl(bed.kc, "apply", "-f", str(SAMPLES / "storageclass-curvine.yaml"))


def volume_pod(name: str, node: str) -> dict[str, Any]:
    pod = busybox_pod(name, f"echo {name} up; exec sleep 100000")
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": CLAIM}}]
    return pinned(pod, node)


def fusemounts(bed: Bed) -> dict[str, dict[str, Any]]:
    """The FuseMounts by node, as ``kubectl fluid mounts -o json`` lists them."""
    listed = json.loads(ok(kubectl_fluid(bed.kc, "mounts", "-o", "json")))
    items = listed["items"] if isinstance(listed, dict) else listed
    return {m["spec"]["nodeName"]: m for m in items}


def fuse_pods(bed: Bed) -> dict[str, str]:
    """node → the FUSE pod running there (not deleted)."""
    listed = kget(bed, "-n", SYSTEM, "pods", "-l", names.LABEL_MOUNT_KEY)["items"]
    return {
        p["spec"]["nodeName"]: p["metadata"]["name"]
        for p in listed
        if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    }


def targets(mount: dict[str, Any]) -> int:
    return sum(len(v.get("targets", [])) for v in mount.get("status", {}).get("volumes", []))


def test_one_rwx_claim_on_two_nodes_is_one_fuse_per_node_and_a_file_crosses(bed: Bed) -> None:
    curvine_up(bed)
    claim = curvine_claim(CLAIM, NS)
    t0 = time.monotonic()
    apply(bed, claim, volume_pod("a1", NODES[1]), volume_pod("a2", NODES[1]), volume_pod("b1", NODES[2]))
    for name in ("a1", "a2", "b1"):
        eventually(partial(running, bed, name), f"{name} Running with the claim", timeout=240)
    bed.figures["three pods on two nodes Running with one claim"] = f"{time.monotonic() - t0:.0f} s"

    def one_per_node() -> dict[str, dict[str, Any]] | None:
        found = fusemounts(bed)
        ready_ = {n: m for n, m in found.items() if m.get("status", {}).get("phase") == "Ready"}
        return found if sorted(ready_) == NODES[1:] and targets(found[NODES[1]]) == 2 else None

    mounts = eventually(one_per_node, "one Ready FuseMount on each of the two nodes", timeout=60)
    # Each node's mount counts its own: one staged volume each; two pods' targets on one, one on the other.
    assert [mounts[n]["status"]["refCount"] for n in NODES[1:]] == [1, 1], mounts
    assert [targets(mounts[n]) for n in NODES[1:]] == [2, 1]
    assert mounts[NODES[1]]["spec"]["mountKey"] == mounts[NODES[2]]["spec"]["mountKey"]
    assert sorted(fuse_pods(bed)) == NODES[1:]
    wide = ok(kubectl_fluid(bed.kc, "mounts", "-o", "wide"))
    assert all(n in wide for n in NODES[1:]), wide
    print(wide)

    text = f"written on {NODES[1]}"
    sh(bed, "a1", f"echo '{text}' > /data/crossing.txt")
    assert sh(bed, "b1", "cat /data/crossing.txt") == text + "\n"
    assert sh(bed, "a2", "cat /data/crossing.txt") == text + "\n"


def test_deleting_one_nodes_pods_stops_only_that_nodes_fuse(bed: Bed) -> None:
    kept = fuse_pods(bed)[NODES[2]]
    t0 = time.monotonic()
    kubectl(bed.kc, "-n", NS, "delete", "pod", "a1", "a2", "--wait=true")
    eventually(lambda: NODES[1] not in fuse_pods(bed), f"{NODES[1]}'s FUSE pod gone", timeout=120)
    eventually(lambda: NODES[1] not in fusemounts(bed), f"{NODES[1]}'s FuseMount gone", timeout=60)
    bed.figures["a node's FUSE stopped after its last pod's deletion"] = f"{time.monotonic() - t0:.1f} s"
    assert fuse_pods(bed).get(NODES[2]) == kept
    assert sh(bed, "b1", "cat /data/crossing.txt").startswith("written on")
    node = bed.node(NODES[1])
    key = fusemounts(bed)[NODES[2]]["spec"]["mountKey"]
    left = [p for p in realnodes.namespace_mounts(bed.cluster, node) if key in p]
    assert left == [], left


def node_ready(bed: Bed, name: str) -> str:
    conditions = kget(bed, "node", name)["status"].get("conditions", [])
    return next((c["status"] for c in conditions if c["type"] == "Ready"), "")


def phase(bed: Bed, node: str) -> str | None:
    mount = fusemounts(bed).get(node)
    return mount.get("status", {}).get("phase") if mount else None


def test_a_lost_node_goes_notready_its_fuse_mounts_unknown_the_others_read_on_and_it_comes_back(
    bed: Bed,
) -> None:
    lost = bed.node(NODES[1])
    apply(bed, volume_pod("c1", NODES[1]))
    eventually(partial(running, bed, "c1"), "c1 Running with the claim", timeout=120)
    eventually(lambda: phase(bed, NODES[1]) == "Ready", f"{NODES[1]}'s FuseMount Ready", timeout=60)

    t0 = time.monotonic()
    nodeloss.lose(bed.cluster, lost)
    eventually(lambda: node_ready(bed, NODES[1]) != "True", f"{NODES[1]} NotReady", timeout=120, interval=1)
    bed.figures["node lost (kubelet, containerd killed -9) → Node NotReady"] = (
        f"{time.monotonic() - t0:.0f} s"
    )
    mount = eventually(
        lambda: (m := fusemounts(bed).get(NODES[1])) and m["status"].get("phase") == "Unknown" and m,
        f"{NODES[1]}'s FuseMount Unknown",
        timeout=60,
        interval=0.5,
    )
    bed.figures["node lost → its FuseMounts Unknown"] = f"{time.monotonic() - t0:.0f} s"
    assert NODES[1] in mount["status"]["reason"], mount["status"]
    table = ok(kubectl_fluid(bed.kc, "mounts"))
    [row] = [line for line in table.splitlines() if NODES[1] in line]
    assert "Unknown" in row, table
    assert phase(bed, NODES[2]) == "Ready", table

    # The other nodes carry on: through their own FUSE, and with Mooncake.
    assert sh(bed, "b1", "cat /data/crossing.txt").startswith("written on")
    app = sorted(
        p["metadata"]["name"] for p in kget(bed, "-n", NS, "pods", "-l", "app=app")["items"] if ready(p)
    )
    value = f"put while {NODES[1]} is lost"
    sh(bed, app[0], sourced(DS, f"python /app/mooncake_app.py put after-loss '{value}'"), container="app")
    assert (
        sh(bed, app[-1], sourced(DS, "python /app/mooncake_app.py get after-loss"), container="app")
        == value + "\n"
    )

    t1 = time.monotonic()
    seconds = nodeloss.revive(bed.cluster, lost)
    bed.figures["node back: kubelet and containerd started → Node Ready"] = f"{seconds:.1f} s"
    eventually(lambda: phase(bed, NODES[1]) == "Ready", f"{NODES[1]}'s FuseMount Ready again", timeout=120)
    bed.figures["node back → its FuseMounts Ready again"] = f"{time.monotonic() - t1:.1f} s"
    # Its pod was never restarted, and reads through the same FUSE (exec answers once the new kubelet
    # has taken its pods up again: "pod does not exist" until then).
    read = eventually(
        lambda: sh(bed, "c1", "cat /data/crossing.txt"), "c1 read through kubectl exec", timeout=60
    )
    assert read.startswith("written on"), read
    # Ready again once the new kubelet has written the pod's status: the node controller set Ready
    # False while the node was lost, and exec answers before that status sync (CI saw it not yet).
    pod = eventually(partial(running, bed, "c1"), "c1 Ready again (the new kubelet's status)", timeout=60)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    # And it goes as any pod does: its volume unpublished and unstaged by the same node service, the
    # node's FUSE stopped.
    kubectl(bed.kc, "-n", NS, "delete", "pod", "c1", "--wait=true")
    eventually(lambda: NODES[1] not in fuse_pods(bed), f"{NODES[1]}'s FUSE pod gone after c1", timeout=120)


def test_drain_evicts_the_apps_waits_for_the_last_unstage_to_stop_the_fuse_and_leaves_nothing_mounted(
    bed: Bed,
) -> None:
    # Not the node of the sample Curvine's master: drained with the rest, its move would stall every
    # FUSE call on its address until curvine-fuse's RPC timeout (README, the CSI driver), and that
    # would be the figure.
    master = kget(bed, "-n", NS, "pod", "curvine-master-0")["spec"]["nodeName"]
    drained = next(n for n in NODES[1:] if n != master)
    # An app of a Deployment on the node (drain takes no bare pod without --force), then the bare pods
    # there go: the node's FUSE serves the Deployment's pod alone.
    app = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "reader", "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "reader"}},
            "template": {"metadata": {"labels": {"app": "reader"}}, "spec": volume_pod("x", drained)["spec"]},
        },
    }
    apply(bed, app)
    kubectl(bed.kc, "-n", NS, "rollout", "status", "deployment/reader", "--timeout=120s")
    listed = kget(bed, "-n", NS, "pods", "-l", "test=three-nodes")["items"]
    bare = [p["metadata"]["name"] for p in listed if p["spec"].get("nodeName") == drained]
    if bare:
        kubectl(bed.kc, "-n", NS, "delete", "pod", *bare, "--wait=true")
    fuse = fuse_pods(bed)[drained]
    key = fusemounts(bed)[drained]["spec"]["mountKey"]
    owner = kget(bed, "-n", SYSTEM, "pod", fuse)["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o.get("controller")) for o in owner] == [("Node", drained, True)]
    budget = kget(bed, "-n", SYSTEM, "pdb", fuse)
    assert budget["spec"]["minAvailable"] == 1

    t0 = time.monotonic()
    done = kubectl_run(
        bed, "drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=240s"
    )
    seconds = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    bed.figures["kubectl drain of a node with an app on a FUSE volume"] = f"{seconds:.1f} s"
    print(done.stdout, done.stderr)
    # The FUSE pod's eviction was refused while the app still used the volume, and retried.
    # (drain then reports it "evicted" if its last try found it terminating, nothing if it found it gone).
    assert f"evicting pod {SYSTEM}/{fuse}" in done.stdout, done.stdout
    assert "disruption budget" in done.stderr, done.stderr
    assert drained not in fuse_pods(bed)
    assert drained not in fusemounts(bed)
    left = [p for p in realnodes.namespace_mounts(bed.cluster, bed.node(drained)) if key in p]
    assert left == [], left
    kubectl(bed.kc, "uncordon", drained)


def kubectl_run(bed: Bed, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [kubectl_binary(), f"--kubeconfig={bed.kc}", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_zz_figures(bed: Bed) -> None:
    """The cost of the three nodes: each node's processes' memory (kubelet, containerd, coredns), as
    measured now, with the product and the tests' pods running."""
    for node in NODES:
        total = 0
        for proc in bed.cluster.procs:
            if proc.name.endswith(f"-{node}") and proc.alive():
                total += rss_kib(proc.pid)
        bed.figures[f"{node}: kubelet + containerd + coredns RSS"] = f"{total >> 10} MiB"
    print("\n".join(f"{k}: {v}" for k, v in bed.figures.items()))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0
