"""A real kubelet node (hack/localcluster/realnodes.py) on the session's local cluster: a real busybox
container runs on it, ``kubectl logs`` and ``kubectl exec`` reach it through the API server, and deleting the
pod leaves no container, shim, mount or network interface behind.

The node is started here unless the cluster already has one (``make up`` starts one),
and stopped again at the end of the module when started here. Skipped, saying why, on a cluster
hack/localcluster/ did not start (this test inspects the node's host) or when a real node cannot
be built here."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import socketserver
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

import localcluster
from localcluster import realnodes
from tests.e2e.fluid import kubectl
from tests.e2e.wait import eventually


@dataclass
class Node:
    cluster: localcluster.Cluster
    node: realnodes.RealNode
    started_in: float | None  # seconds from start to Ready, when this module started it


def why_no_real_node() -> str | None:
    if os.geteuid() != 0:
        return "a real node needs root (containerd, runc, mounts, a bridge)"
    if shutil.which("go") is None:
        return "building a real node's binaries (hack/build-bins.sh node) needs Go >= 1.26"
    problems = realnodes.missing_prerequisites()
    return "a real node cannot run here: " + "; ".join(problems) if problems else None


@pytest.fixture(scope="module")
def real_node(kubeconfig: Path) -> Iterator[Node]:
    cluster = localcluster.Cluster.load(kubeconfig.parent)
    if cluster is None:
        pytest.skip(
            f"KUBECONFIG names a cluster hack/localcluster/ did not start ({kubeconfig}): this test "
            "inspects a real node's host (containers, shims, mounts); run it without KUBECONFIG, or on "
            "make up's cluster"
        )
    existing = realnodes.RealNode.load(kubeconfig.parent / realnodes.NODES_DIR / f"{realnodes.NAME_PREFIX}0")
    if existing is not None and realnodes.running(cluster, existing):
        yield Node(cluster, existing, None)
        return
    reason = why_no_real_node()
    if reason:
        pytest.skip(reason)
    bins = realnodes.node_bins()
    t0 = time.monotonic()
    node = realnodes.start(cluster, 0, bins)
    try:
        yield Node(cluster, node, time.monotonic() - t0)
    finally:
        realnodes.stop(cluster, node)


def busybox_pod(name: str, marker: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {realnodes.REAL_NODE_KEY: "true"},
            "tolerations": [{"key": realnodes.REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "busybox",
                    "image": realnodes.busybox_image("1.35.0"),
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", f"echo {marker}; exec sleep 3600"],
                }
            ],
        },
    }


def shims(node: realnodes.RealNode) -> list[int]:
    """The node's runc shims: their command line names its containerd socket."""
    out = subprocess.run(
        ["pgrep", "-f", f"containerd-shim-runc-v2 .*{node.socket}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return [int(p) for p in out.stdout.split()]


def mounts_under(node: realnodes.RealNode, *words: str) -> list[str]:
    with open("/proc/self/mountinfo") as table:
        points = [line.split()[4] for line in table]
    return [p for p in points if p.startswith(node.dir + "/") and any(w in p for w in words)]


def runc_containers(node: realnodes.RealNode) -> list[str]:
    runc = realnodes._runc(node)
    out = subprocess.run(
        [runc, "--root", str(node.runc_root / "k8s.io"), "list", "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.split()


def test_the_real_node_is_a_ready_kubelet_on_containerd(real_node: Node, core: client.CoreV1Api) -> None:
    status = core.read_node(real_node.node.name).status
    assert status.node_info.kubelet_version.startswith("v1.")
    assert status.node_info.container_runtime_version.startswith("containerd://2.")
    assert any(c.type == "Ready" and c.status == "True" for c in status.conditions)
    # The rest of the suite keeps landing on kwok nodes: the real node takes only pods that ask for it.
    # node-lifecycle takes its not-ready taint off a moment after the node turns Ready.
    eventually(
        lambda: (
            [(t.key, t.effect) for t in core.read_node(real_node.node.name).spec.taints]
            == [(realnodes.REAL_NODE_KEY, "NoSchedule")]
        ),
        "the real node's taints: its own alone",
        timeout=30,
    )
    if real_node.started_in is not None:
        print(f"real node start to Ready: {real_node.started_in:.1f}s")


def test_a_busybox_pod_runs_answers_logs_and_exec_and_leaves_nothing_when_deleted(
    real_node: Node, core: client.CoreV1Api, namespace: str, kubeconfig: Path
) -> None:
    node, marker = real_node.node, f"hello-{secrets.token_hex(4)}"
    core.create_namespaced_pod(namespace, busybox_pod("busybox", marker))
    pod = eventually(
        lambda: (p := core.read_namespaced_pod("busybox", namespace)).status.phase == "Running" and p,
        "the busybox pod Running on the real node",
        timeout=90,
    )
    assert pod.spec.node_name == node.name
    uid = pod.metadata.uid

    # Through the API server to the kubelet on 127.0.0.1, by the node's name.
    eventually(
        lambda: marker in kubectl(kubeconfig, "-n", namespace, "logs", "busybox"), "the pod's log line"
    )
    out = kubectl(
        kubeconfig, "-n", namespace, "exec", "busybox", "--", "sh", "-c", "echo $((6 * 7)); hostname"
    )
    assert out.split() == ["42", "busybox"]

    # A real container: runc runs it and the sandbox, a shim serves them, its volumes are mounted.
    assert len(runc_containers(node)) >= 2
    assert shims(node)
    assert mounts_under(node, uid), "the pod's service account token volume is not mounted"

    core.delete_namespaced_pod("busybox", namespace)
    eventually(lambda: not core.list_namespaced_pod(namespace).items, "the pod gone", timeout=60)
    eventually(lambda: not runc_containers(node), "no container left in runc", timeout=30)
    eventually(lambda: not shims(node), "no shim left", timeout=30)
    assert not mounts_under(node, uid, "rootfs", "shm", "netns")
    veths = subprocess.run(
        ["ip", "-o", "link", "show", "master", node.bridge], capture_output=True, text=True, check=False
    )
    assert "veth" not in veths.stdout


@contextlib.contextmanager
def host_loopback_listener(secret: str) -> Iterator[tuple[int, list[str]]]:
    """A TCP server of the test's own on the host's 127.0.0.1: it answers each connection with
    ``secret`` and records the peer's address. Yields its port and the peers."""
    peers: list[str] = []

    class Answer(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            peers.append(self.client_address[0])
            self.request.sendall(secret.encode() + b"\n")

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Answer) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield server.server_address[1], peers
        finally:
            server.shutdown()


# What a pod does to send packets to the host's 127.0.0.1 (the CVE-2020-8558 pattern): its own loopback
# address off, 127.0.0.0/8 routed through the bridge's host address, and route_localnet on its eth0 so
# that it accepts the host's answers from 127.0.0.1 (a container's /proc/sys is writable only when it
# is privileged; the pod is still in a network namespace of its own).
LOOPBACK_ROUTE = """
ip addr del 127.0.0.1/8 dev lo
ip route add 127.0.0.0/8 via {bridge_ip} dev eth0
sysctl -w net.ipv4.conf.eth0.route_localnet=1
"""

# Three connections at once, each bounded by nc's connect timeout, their answers printed by section.
LOOPBACK_PROBE = """
cd /tmp
nc -w 10 127.0.0.1 {listener} </dev/null >listener 2>&1 &
printf 'GET /version HTTP/1.0\r\n\r\n' | nc -w 10 127.0.0.1 {etcd} >etcd 2>&1 &
printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 10 {cluster_ip} 443 >service 2>&1 &
wait
for f in listener etcd service; do echo "== $f"; cat $f; done
"""


def sections(out: str) -> dict[str, str]:
    """``== name`` headed sections of LOOPBACK_PROBE's output, by name."""
    found: dict[str, str] = {}
    for part in out.split("== ")[1:]:
        name, _, text = part.partition("\n")
        found[name.strip()] = text
    return found


@contextlib.contextmanager
def without_kubelets_loopback_rule(bridge: str) -> Iterator[None]:
    """kubelet (v1.36) drops what pods send to 127.0.0.0/8 too, in a KUBE-FIREWALL chain of the whole
    host that it keeps for as long as it chooses to (its source says so) and not at all with
    ``makeIPTablesUtilChains: false``. An accept first in INPUT, for ``bridge`` alone, stands for such a
    kubelet: what keeps the pods off is then the node's own rule."""
    rule = ["INPUT", "-i", bridge, "-d", "127.0.0.0/8", "-m", "comment", "--comment",
            "kubectl-fluid e2e: kubelet's KUBE-FIREWALL out of the way", "-j", "ACCEPT"]  # fmt: skip
    subprocess.run(["iptables", "-w", "5", "-I", *rule], check=True)
    try:
        yield
    finally:
        subprocess.run(["iptables", "-w", "5", "-D", *rule], check=True)


def loopback_drops(node: realnodes.RealNode) -> int:
    """Packets the node's own raw chain has dropped (its counters)."""
    listed = subprocess.run(
        ["iptables", "-w", "5", "-t", "raw", "-L", realnodes.chain(node), "-n", "-v", "-x"],
        capture_output=True,
        text=True,
        check=False,
    )
    return sum(int(line.split()[0]) for line in listed.stdout.splitlines() if " DROP " in line)


def test_a_pod_on_the_real_node_reaches_the_kubernetes_service_but_not_the_hosts_loopback(
    real_node: Node, core: client.CoreV1Api, namespace: str, kubeconfig: Path
) -> None:
    """The host's 127.0.0.1 (etcd in plain HTTP, the kubelet, the test's own listener) is not the
    pods': the node's bridge has route_localnet for the Service's DNAT, and the node's own chain drops
    whatever its pods address to 127.0.0.0/8, with or without kubelet's host-wide rule."""
    node, secret = real_node.node, f"secret-{secrets.token_hex(4)}"
    pod = busybox_pod("prober", "x")
    [container] = pod["spec"]["containers"]
    container["securityContext"] = {"privileged": True}
    core.create_namespaced_pod(namespace, pod)
    eventually(
        lambda: core.read_namespaced_pod("prober", namespace).status.phase == "Running",
        "the prober pod Running on the real node",
        timeout=90,
    )
    exec_sh = ("-n", namespace, "exec", "prober", "--", "sh", "-c")
    kubectl(kubeconfig, *exec_sh, LOOPBACK_ROUTE.format(bridge_ip=node.bridge_ip))
    cluster_ip = core.read_namespaced_service("kubernetes", "default").spec.cluster_ip
    with host_loopback_listener(secret) as (port, peers), without_kubelets_loopback_rule(node.bridge):
        probe = LOOPBACK_PROBE.format(
            listener=port, etcd=real_node.cluster.ports["etcd"], cluster_ip=cluster_ip
        )
        answers = sections(kubectl(kubeconfig, *exec_sh, probe))

    # The DNAT path to the API server on 127.0.0.1 stays open: a TLS server's answer to plain HTTP.
    assert "Client sent an HTTP request to an HTTPS server" in answers["service"], answers
    assert secret not in answers["listener"], (
        f"a pod reached the test's listener on the host's 127.0.0.1:{port}: {answers}"
    )
    assert peers == []
    assert "etcdserver" not in answers["etcd"], f"a pod reached etcd on the host's 127.0.0.1: {answers}"
    assert "timed out" in answers["listener"], answers
    assert "timed out" in answers["etcd"], answers
    assert loopback_drops(node) > 0, "the pod's packets were not dropped by the node's own chain"


def rules_naming(bridge: str) -> list[str]:
    """This host's iptables lines (chains and rules, every table) that name ``bridge``: a node's chains
    carry its bridge's name."""
    lines = []
    for table in ("raw", "mangle", "nat", "filter"):
        listed = subprocess.run(
            ["iptables", "-w", "5", "-t", table, "-S"], capture_output=True, text=True, check=True
        )
        lines += [f"{table}: {line}" for line in listed.stdout.splitlines() if bridge in line]
    return lines


def test_down_leaves_no_container_shim_mount_bridge_rule_cgroup_or_netns(
    real_node: Node, tmp_path: Path
) -> None:
    # A cluster of its own, as `LOCALCLUSTER_REAL_NODES=1 make up` starts it, stopped with a pod running.
    state = tmp_path / "own"
    cluster = localcluster.up(state, 0, None)
    try:
        [node] = realnodes.ensure(cluster, 1)
        kubeconfig = cluster.kubeconfig
        kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(busybox_pod("left-running", "x")))
        kubectl(kubeconfig, "wait", "--for=condition=Ready", "pod/left-running", "--timeout=90s")
        assert shims(node)
        assert mounts_under(node, "netns"), (
            "the pod's network namespace is not bind-mounted under the node's folder"
        )
        rules = rules_naming(node.bridge)
        chain = realnodes.chain(node)
        # Each chain entered from its hook by the bridge's packets: the Service's DNAT, the loopback guard,
        # what the node's pods may send through the host (podnetwork.py).
        assert f"nat: -A PREROUTING -i {node.bridge} -j {chain}" in rules, rules
        assert f"raw: -A PREROUTING -i {node.bridge} -j {chain}" in rules, rules
        assert f"filter: -A FORWARD -i {node.bridge} -j {chain}" in rules, rules
        # The three chains and their jumps; one rule in the nat and raw ones, two in the filter one.
        assert len(rules) == 10, rules
        # `make up` again over the running node puts its rules back as they were, none twice.
        realnodes.ensure(cluster, 1)
        assert rules_naming(node.bridge) == rules
    finally:
        localcluster.down(state)
    assert not shims(node)
    # Nor any process of the node's (containerd, kubelet, shims, the pod's sleep in its cgroup).
    left = subprocess.run(["pgrep", "-af", node.dir], capture_output=True, text=True, check=False)
    assert not left.stdout, left.stdout
    with open("/proc/self/mountinfo") as table:
        table_text = table.read()
    assert node.dir not in table_text
    assert str(state.resolve()) not in table_text
    links = subprocess.run(
        ["ip", "-o", "link", "show", node.bridge], capture_output=True, text=True, check=False
    )
    assert links.returncode != 0, links.stdout
    assert rules_naming(node.bridge) == [], "the node's iptables rules are left behind"
    assert not list(Path("/sys/fs/cgroup").glob(f"*/{node.cgroup_root.strip('/')}"))
    assert not Path(node.dir).exists()
    assert not Path(node.record).exists()
    assert not [p for p in cluster.procs if p.alive()]


def namespace_processes(view: str) -> dict[int, list[bytes]]:
    """pid → argv of every process in mount namespace ``view`` (a /proc/PID/ns/mnt link)."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "ns" / "mnt") == view:
                found[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
    return found


def in_namespace(view: str) -> list[str]:
    """The command lines of every process in mount namespace ``view``."""
    return [b" ".join(argv).decode(errors="replace") for argv in namespace_processes(view).values()]


def test_make_ups_real_node_mounts_a_fluid_volume_through_the_local_csi_node_service(
    real_node: Node, tmp_path: Path
) -> None:
    """make up's real node: the product's CSI node service runs as a local process in the node's own
    mount namespace (product.ensure_real_node_csi), registers with the node's kubelet itself, and a
    real container gets a Fluid volume from it (the FUSE stand-in's data); make down stops it and the
    FUSE it started, leaving nothing in that namespace or mounted."""
    from kubectl_fluid.api import names
    from localcluster import product

    state = tmp_path / "own"
    cluster = localcluster.up(state, 0, None)
    try:
        product.install(cluster)
        [node] = realnodes.ensure(cluster, 1)
        product.ensure_real_node_csi(cluster, None)
        [containerd] = [p for p in cluster.procs if p.name == f"containerd-{node.name}"]
        view = os.readlink(f"/proc/{containerd.pid}/ns/mnt")
        kc = cluster.kubeconfig
        eventually(
            lambda: (
                names.CSI_DRIVER
                in kubectl(kc, "get", "csinode", node.name, "-o", "jsonpath={.spec.drivers[*].name}")
            ),
            "the node's kubelet listing the driver its local node service registered",
            timeout=60,
        )
        masters = "127.0.0.1:8995"
        data = state / "curvine-data" / names.cluster_id(masters) / "vol"
        data.mkdir(parents=True)
        (data / "hello").write_text("from the host\n")
        csi = {"driver": names.CSI_DRIVER, "volumeHandle": "vol", "volumeAttributes": {
            names.PARAM_MASTER_ADDRS: masters, names.PARAM_CURVINE_PATH: "/vol"}}  # fmt: skip
        volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "vol"}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
            "claimRef": {"namespace": "default", "name": "vol"}, "csi": csi}}  # fmt: skip
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "vol"}, "spec": {
            "accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": "vol",
            "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
        pod = busybox_pod("vol", "x")
        spec: dict[str, Any] = pod["spec"]  # type: ignore[assignment]
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "vol"}}]
        body = {"apiVersion": "v1", "kind": "List", "items": [volume, claim, pod]}
        kubectl(kc, "apply", "-f", "-", stdin=json.dumps(body))
        kubectl(kc, "wait", "--for=condition=Ready", "pod/vol", "--timeout=120s")
        assert kubectl(kc, "exec", "vol", "--", "cat", "/data/hello") == "from the host\n"
        kubectl(kc, "exec", "vol", "--", "sh", "-c", "echo from the pod > /data/back")
        assert (data / "back").read_text() == "from the pod\n"
        assert any("csi.standin.fusestandin" in c for c in in_namespace(view)), in_namespace(view)
    finally:
        localcluster.down(state)
    assert in_namespace(view) == []
    with open("/proc/self/mountinfo") as table:
        assert str(state.resolve()) not in table.read()
    assert not [p for p in cluster.procs if p.alive()]


@pytest.fixture(scope="module")
def product_image(real_node: Node) -> str:
    """The product's image, built without Docker and imported into the real node, by the name and
    pull policy the manifests use."""
    if shutil.which("mmdebstrap") is None:
        pytest.skip("building the product's image needs mmdebstrap: apt-get install -y mmdebstrap")
    from images import product

    t0 = time.monotonic()
    archive = product.build()
    built = time.monotonic() - t0
    realnodes.import_archive(realnodes.node_bins(), real_node.node, archive)
    print(f"product image: {archive.stat().st_size >> 20} MiB, built or found in {built:.0f}s, "
          f"imported in {time.monotonic() - t0 - built:.0f}s")  # fmt: skip
    return "kubectl-fluid:latest"


def product_pod(name: str, image: str, command: str) -> dict[str, object]:
    pod = busybox_pod(name, "unused")
    [container] = pod["spec"]["containers"]
    container.update(image=image, imagePullPolicy="IfNotPresent", command=["sh", "-c", command])
    return pod


def test_the_products_image_built_without_docker_runs_on_the_real_node(
    real_node: Node, product_image: str, core: client.CoreV1Api, namespace: str, kubeconfig: Path
) -> None:
    from images import product

    pod = product_pod("product", product_image, "id -u; fluid-csi --help; exec sleep 3600")
    core.create_namespaced_pod(namespace, pod)
    eventually(
        lambda: core.read_namespaced_pod("product", namespace).status.phase == "Running",
        "the product's image Running on the real node",
        timeout=120,
    )

    def logs() -> str:
        return kubectl(kubeconfig, "-n", namespace, "logs", "product")

    log = eventually(lambda: "usage: fluid-csi" in (out := logs()) and out, "fluid-csi's usage in the log")
    # The Dockerfile's non-root default user.
    assert log.split()[0] == str(product.UID)
    out = kubectl(kubeconfig, "-n", namespace, "exec", "product", "--", "python", "-c",
                  "import csi.proto.csi_pb2_grpc, controller.main, webhook.main, webhook.serving;"
                  " print('ok')")  # fmt: skip
    assert out.strip() == "ok"


# Run inside an app container: what an in-cluster client does (the ServiceAccount's token and CA, the
# kubernetes Service by its DNS name), a headless Service's pod by its short name, and the outside.
IN_CLUSTER_PROBE = """
import errno, json, socket, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
print(socket.gethostbyname("kubernetes.default.svc"))
print(socket.gethostbyname("peer-0.peers"))
ctx = ssl.create_default_context(cafile=sa + "/ca.crt")
review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
req = urllib.request.Request(
    "https://kubernetes.default.svc/apis/authentication.k8s.io/v1/selfsubjectreviews",
    data=json.dumps(review).encode(), method="POST",
    headers={"Authorization": "Bearer " + open(sa + "/token").read(), "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, context=ctx, timeout=10))["status"]["userInfo"]["username"])
try:
    socket.getaddrinfo("deb.debian.org", 443)
    print("resolved-outside")
except socket.gaierror:
    print("no-outside-name")
try:
    socket.create_connection(("192.0.2.1", 443), timeout=3)
    print("reached-outside")
except OSError as e:
    print("no-route" if e.errno == errno.ENETUNREACH else "other:" + repr(e))
"""


def test_a_pod_on_the_real_node_reaches_the_api_server_and_resolves_cluster_names(
    real_node: Node, product_image: str, core: client.CoreV1Api, namespace: str, kubeconfig: Path
) -> None:
    # A headless Service and a pod named as a StatefulSet names its pods (hostname + subdomain).
    core.create_namespaced_service(namespace, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "peers"},
        "spec": {"clusterIP": "None", "selector": {"app": "peer"}, "ports": [{"name": "p", "port": 9}]},
    })  # fmt: skip
    peer = product_pod("peer-0", product_image, "exec sleep 3600")
    peer["metadata"] = {"name": "peer-0", "labels": {"app": "peer"}}
    peer["spec"].update(hostname="peer-0", subdomain="peers")  # type: ignore[attr-defined]
    core.create_namespaced_pod(namespace, peer)
    core.create_namespaced_pod(namespace, product_pod("client", product_image, "exec sleep 3600"))

    def running(name: str) -> bool:
        return bool(core.read_namespaced_pod(name, namespace).status.phase == "Running")

    for name in ("peer-0", "client"):
        eventually(functools.partial(running, name), f"{name} Running on the real node", timeout=120)
    peer_ip = core.read_namespaced_pod("peer-0", namespace).status.pod_ip
    cluster_ip = core.read_namespaced_service("kubernetes", "default").spec.cluster_ip

    def probe() -> list[str]:
        return kubectl(
            kubeconfig, "-n", namespace, "exec", "client", "--", "python", "-c", IN_CLUSTER_PROBE
        ).split()

    # The headless name resolves once the EndpointSlice lists the pod Ready.
    out = eventually(lambda: (o := probe())[1] == peer_ip and o, "peer-0.peers resolving to the pod")
    assert out == [
        cluster_ip,
        peer_ip,
        f"system:serviceaccount:{namespace}:default",
        "no-outside-name",
        "no-route",
    ]
