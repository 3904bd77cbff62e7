"""ClusterIP Services on a cluster of three real nodes (hack/localcluster/serviceproxy.py, the rules of
servicerules.py): a client pod on every node reaches a Deployment's Service by its ClusterIP and by its
DNS name, spread over both backends on two nodes; a UDP port reaches its endpoint with the client's own
address; endpoint changes are followed within a second or so (the figures are printed); a proxy
killed -9 is started again by ``make up``'s ensure, which replaces what it left; ``down`` leaves no
chain of the cluster's behind.

The cluster is the module's own (it reads and changes this host's iptables), tainted real nodes as
``LOCALCLUSTER_REAL_NODES=3 make up`` starts them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

import localcluster
from localcluster import realnodes, serviceproxy, servicerules
from localcluster.state import cluster_tag
from tests.e2e.fluid import kubectl
from tests.e2e.test_real_node import why_no_real_node
from tests.e2e.wait import eventually

NODES = 3
NS = "store"
REQUEST = 'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 3 {target} 80'
# The answer, or why there was none (nc's own words on stderr), and never a failed exec.
HTTP_GET = REQUEST + " 2>&1; true"


@dataclass
class Bed:
    state: Path
    kubeconfig: Path
    nodes: list[realnodes.RealNode]
    tag: str
    core: client.CoreV1Api
    discovery: client.DiscoveryV1Api

    def cluster(self) -> localcluster.Cluster:
        loaded = localcluster.Cluster.load(self.state)
        assert loaded is not None
        return loaded

    def proxy(self) -> localcluster.Proc:
        [proc] = [p for p in self.cluster().procs if p.name == serviceproxy.PROC]
        return proc

    def ask(self, client_pod: str, target: str) -> str:
        return kubectl(
            self.kubeconfig, "-n", NS, "exec", client_pod, "--", "sh", "-c", HTTP_GET.format(target=target)
        )


def cluster_lines(tag: str) -> list[str]:
    """This host's iptables lines (chains and rules, every table) of the cluster's Service chains."""
    out = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if servicerules.entry_chain(tag) in line]


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_no_real_node()
    if reason:
        pytest.skip(reason)
    state = tmp_path_factory.mktemp("services")
    cluster = localcluster.up(state, 0, None)
    tag = cluster_tag(state)
    try:
        t0 = time.monotonic()
        nodes = realnodes.ensure(cluster, NODES)
        print(f"{NODES} real nodes and the service proxy up in {time.monotonic() - t0:.1f}s")
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        yield Bed(state, cluster.kubeconfig, nodes, tag, client.CoreV1Api(api), client.DiscoveryV1Api(api))
    finally:
        localcluster.down(state)
    assert cluster_lines(tag) == [], "down left the cluster's Service chains behind"


def on_real_nodes(spec: dict[str, Any]) -> dict[str, Any]:
    toleration = {"key": realnodes.REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}
    return {"terminationGracePeriodSeconds": 1, "tolerations": [toleration], **spec}


def busybox(command: list[str], **extra: Any) -> dict[str, Any]:
    image = realnodes.busybox_of(realnodes.node_bins())
    return {"name": "c", "image": image, "imagePullPolicy": "Never", "command": command, **extra}


def objects() -> list[dict[str, Any]]:
    """busybox httpd behind Services ``web`` and ``gone`` (two replicas, never on one node), and a
    client pod on each node."""
    serve = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"
    anti = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    web = busybox(["sh", "-c", serve], readinessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": 1})
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": on_real_nodes(
            {
                "nodeSelector": {realnodes.REAL_NODE_KEY: "true"},
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}},
                "containers": [web],
            }
        ),
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    services = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        }
        for name in ("web", "gone")
    ]
    clients = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"client-{i}"},
            "spec": on_real_nodes(
                {"nodeName": f"{realnodes.NAME_PREFIX}{i}", "containers": [busybox(["sleep", "3600"])]}
            ),
        }
        for i in range(NODES)
    ]
    return [deployment, *services, *clients]


@pytest.fixture(scope="module")
def web(bed: Bed) -> str:
    """The objects made and Ready; the web Service's ClusterIP."""
    kc = bed.kubeconfig
    kubectl(kc, "create", "namespace", NS)
    eventually(lambda: bed.core.read_namespaced_service_account("default", NS), "the default ServiceAccount")
    body = {"apiVersion": "v1", "kind": "List", "items": objects()}
    kubectl(kc, "-n", NS, "apply", "-f", "-", stdin=json.dumps(body))
    kubectl(kc, "-n", NS, "wait", "--for=condition=Ready", "pod", "--all", "--timeout=120s")
    return str(bed.core.read_namespaced_service("web", NS).spec.cluster_ip)


def backends(bed: Bed) -> set[str]:
    pods = bed.core.list_namespaced_pod(NS, label_selector="app=web").items
    return {str(p.metadata.name) for p in pods}


def test_a_client_on_every_node_reaches_the_service_by_its_cluster_ip_and_its_name(
    bed: Bed, web: str
) -> None:
    pods = bed.core.list_namespaced_pod(NS, label_selector="app=web").items
    assert len({p.spec.node_name for p in pods}) == 2, "the two backends share a node"
    names = backends(bed)
    for i in range(NODES):
        for target in (web, f"web.{NS}.svc.cluster.local"):
            answer = bed.ask(f"client-{i}", target)
            assert "200 OK" in answer, (i, target, answer)
            assert answer.split()[-1] in names, answer
    # Spread over both backends (each new connection takes one at random: 2 x 2^-20 to see one alone),
    # from a client beside one of them: the answer of a backend on the client's own bridge comes back
    # over the bridge, through this host's conntrack (bridged frames pass iptables here).
    beside = f"client-{pods[0].spec.node_name.removeprefix(realnodes.NAME_PREFIX)}"
    loop = f"for n in $(seq 20); do {REQUEST.format(target=web)} | tail -1; done"
    seen = kubectl(bed.kubeconfig, "-n", NS, "exec", beside, "--", "sh", "-c", loop).split()
    assert set(seen) == names, seen
    print(f"20 connections from {beside}: {', '.join(f'{n} {seen.count(n)}' for n in sorted(names))}")


def test_a_udp_port_reaches_its_endpoint_with_the_clients_own_address(bed: Bed, web: str) -> None:
    """A Service without a selector whose EndpointSlice names a UDP listener of the test's own on the
    last node's bridge address: busybox has no UDP server, and its nslookup is the UDP client."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind((bed.nodes[-1].bridge_ip, 0))
    listener.settimeout(20)
    port = listener.getsockname()[1]
    dns = {"name": "dns", "port": 53, "targetPort": port, "protocol": "UDP"}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "udp"}, "spec": {"ports": [dns]}}
    endpoints = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                 "metadata": {"name": "udp-host", "labels": {servicerules.SERVICE_NAME_LABEL: "udp"}},
                 "addressType": "IPv4", "ports": [{"name": "dns", "port": port, "protocol": "UDP"}],
                 "endpoints": [{"addresses": [bed.nodes[-1].bridge_ip]}]}  # fmt: skip
    body = {"apiVersion": "v1", "kind": "List", "items": [service, endpoints]}
    kubectl(bed.kubeconfig, "-n", NS, "apply", "-f", "-", stdin=json.dumps(body))
    ip = bed.core.read_namespaced_service("udp", NS).spec.cluster_ip
    eventually(lambda: any(f"-d {ip}/32 -p udp" in line for line in cluster_lines(bed.tag)), "the UDP rule")
    got: list[tuple[bytes, tuple[str, int]]] = []
    receiver = threading.Thread(target=lambda: got.append(listener.recvfrom(512)))
    receiver.start()
    try:
        query = f"nslookup -timeout=2 -retry=1 probe.example {ip} >/dev/null 2>&1; true"
        kubectl(bed.kubeconfig, "-n", NS, "exec", "client-0", "--", "sh", "-c", query)
        receiver.join(20)
    finally:
        listener.close()
    client_ip = bed.core.read_namespaced_pod("client-0", NS).status.pod_ip
    assert got, "the query did not reach the endpoint"
    [(_, (peer, _))] = got
    assert peer == client_ip, "the query reached the endpoint from another address than the client's"


def first_time(checks: dict[str, Callable[[], bool]], timeout: float) -> dict[str, float]:
    """Seconds until each check first held, all polled together."""
    t0, seen = time.monotonic(), dict[str, float]()
    while len(seen) < len(checks):
        for name, check in checks.items():
            if name not in seen and check():
                seen[name] = time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise AssertionError(
                f"timed out after {timeout:.0f}s; held: {seen}, not: {set(checks) - set(seen)}"
            )
        time.sleep(0.02)
    return seen


def test_endpoint_changes_are_followed_within_seconds(bed: Bed, web: str) -> None:
    def ready() -> int:
        slices = bed.discovery.list_namespaced_endpoint_slice(
            NS, label_selector=f"{servicerules.SERVICE_NAME_LABEL}=web"
        )
        return len([e for s in slices.items for e in s.endpoints or [] if e.conditions.ready is not False])

    def dnats() -> int:
        nat = subprocess.run(
            ["iptables", "-w", "5", "-t", "nat", "-S"], capture_output=True, text=True, check=True
        )
        [chain] = [line.split()[-1] for line in nat.stdout.splitlines() if f"-d {web}/32" in line] or [""]
        return len([line for line in nat.stdout.splitlines() if chain and line.startswith(f"-A {chain} ")])

    def scale(replicas: int) -> None:
        kubectl(bed.kubeconfig, "-n", NS, "scale", "deployment/web", f"--replicas={replicas}")

    # The API and the rules polled together every 20 ms (an exec takes longer), then the client.
    scale(0)
    t0 = time.monotonic()
    down = first_time({"api": lambda: ready() == 0, "rules": lambda: dnats() == 0}, 60)
    eventually(lambda: "Connection refused" in bed.ask("client-1", web), "a client refused", timeout=30)
    down["refused"] = time.monotonic() - t0
    scale(2)
    t0 = time.monotonic()
    up = first_time({"api": lambda: ready() == 2, "rules": lambda: dnats() == 2}, 90)
    eventually(lambda: "200 OK" in bed.ask("client-2", web), "a client answered", timeout=30)
    up["answers"] = time.monotonic() - t0
    log = (bed.state / "logs" / f"{serviceproxy.PROC}.log").read_text().splitlines()
    writes = [json.loads(line)["ms"] for line in log if '"synced"' in line]
    print(
        f"scaled to 0: no ready endpoint in the API after {down['api']:.2f}s, the rules {down['rules']:.2f}s "
        f"({down['rules'] - down['api']:+.2f}s after the API), a client refused at {down['refused']:.2f}s"
    )
    print(
        f"scaled to 2: both ready in the API after {up['api']:.2f}s, the rules {up['rules']:.2f}s "
        f"({up['rules'] - up['api']:+.2f}s after the API), a client answered at {up['answers']:.2f}s"
    )
    median = sorted(writes)[len(writes) // 2]
    print(f"the proxy's {len(writes)} writes (iptables-save, compute, iptables-restore): median {median} ms")
    assert down["rules"] - down["api"] < 5
    assert up["rules"] - up["api"] < 5


def test_a_proxy_killed_9_is_started_again_and_replaces_what_it_left(bed: Bed, web: str) -> None:
    old = bed.proxy()
    os.kill(old.pid, signal.SIGKILL)
    os.waitpid(old.pid, 0)  # started by this process (realnodes.ensure), so reaped here
    left = cluster_lines(bed.tag)
    assert left, "a proxy killed -9 cannot have taken its rules away"
    gone_ip = bed.core.read_namespaced_service("gone", NS).spec.cluster_ip
    assert any(f"-d {gone_ip}/32" in line for line in left)
    # A Service deleted while no proxy runs: its chain is stale when the next one starts.
    bed.core.delete_namespaced_service("gone", NS)

    realnodes.ensure(bed.cluster(), NODES)  # what a second `make up` runs
    new = bed.proxy()
    assert new.pid != old.pid
    assert new.alive()

    def without_gone() -> list[str] | None:
        now = cluster_lines(bed.tag)
        return None if any(f"-d {gone_ip}/32" in line for line in now) else now

    lines = eventually(
        without_gone,
        "the deleted Service's rules gone",
        timeout=10,
    )
    jumps = [line for line in lines if line.endswith(f"-j {servicerules.entry_chain(bed.tag)}")]
    assert jumps == [
        f"-A FORWARD -i {servicerules.bridges(bed.tag)} -j {servicerules.entry_chain(bed.tag)}",
        f"-A PREROUTING -i {servicerules.bridges(bed.tag)} -j {servicerules.entry_chain(bed.tag)}",
    ], jumps
    entry = servicerules.entry_chain(bed.tag)
    chains = {line.split()[0][1:] for line in lines if line.startswith(":")}
    ports = {line.split()[-1] for line in lines if line.startswith(f"-A {entry} ") and "DNAT" not in line}
    ports.discard("icmp-port-unreachable")
    assert len(ports) == 2, lines  # web's and udp's
    assert chains == {entry, *ports}, lines
    assert "200 OK" in bed.ask("client-0", web)
    rss = next(
        line for line in Path(f"/proc/{new.pid}/status").read_text().splitlines() if line.startswith("VmRSS")
    )
    print(f"the service proxy: {rss.split()[1]} kB RSS with {len(backends(bed))} endpoints")
