#!/usr/bin/env python3
"""Real kubelet nodes joined to the local control plane (controlplane.py): a containerd with runc
and a kubelet per node, running real containers, everything private to the cluster.

    PYTHONPATH=hack python -m localcluster up                  # kwok nodes and one real node
    PYTHONPATH=hack python -m localcluster up --real-nodes 0   # kwok nodes only
    PYTHONPATH=hack python -m localcluster down                # stops them, leaves nothing behind

Each node ``real-node-N`` is recorded in ``{state}/realnodes/real-node-N/node.json`` and keeps
everything else in ``/var/lib/kubectl-fluid/{tag}-N/`` (``tag`` from the state dir's path, linked
from the record as ``data``): containerd's root, state and sockets, network namespaces and runc's
state; kubelet's root dir, certificates and pod logs; the CNI configuration and its IP allocations.
Not under the state dir itself because a unix socket's path has at most 107 bytes: kubelet's CSI
registration sockets under a state dir in pytest's temporary folders would pass that.

containerd and kubelet run in a mount namespace of the node's own (nodeview.py) where
/var/lib/kubelet (kubelet's root dir), /var/lib/fluid-csi and /var/lib/curvine-standin are the node's
directories: the paths of a user's node, which the product's manifests mount as hostPaths, private to
the node. The node's folder is a shared mount, so what is mounted there in the node's namespace shows
on the host too, where ``stop`` unmounts it.

Pods reach each other over a bridge of this machine with no default gateway and no masquerade: their
traffic never leaves it. The host's address on the bridge serves them cluster DNS (a CoreDNS per node,
``clusterDNS``) and the kubernetes Service (a DNAT rule of the node's own from its ClusterIP to the API
server on loopback); the API server calls webhooks at their pods' addresses (aggregator routing).
Nothing else of the host's loopback (etcd in plain HTTP, every other local listener): the DNAT needs
``route_localnet`` on the bridge, and a raw-table rule of the node's own drops whatever its pods
address to 127.0.0.0/8.
The node carries the taint ``kubectl-fluid.io/real-node=true:NoSchedule``, so the rest of the suite
keeps scheduling to kwok nodes; a pod for the real node tolerates it and selects the label of the same
name.

What this machine forced (measured in shared/reference/real-node.md): a cgroup v1 host
(``failCgroupV1: false``, the cgroupfs driver); no CAP_SYS_RESOURCE (containerd
``restrict_oom_score_adj``, kubelet ``oomScoreAdj: 0``); kubelet refuses a loopback node IP, so it
gets this host's address but serves on 127.0.0.1 only, and the API server, which dials a kubelet by
its node name, resolves that name through its private /etc/hosts (controlplane.private_hosts).

Binaries: ``hack/build-bins.sh node`` (kubelet, containerd, ctr, the runc shim, runc, pause, busybox,
cached by version); CNI plugins: Debian's containernetworking-plugins.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import images.oci
from localcluster import cgroups, controlplane, nodeview, podnetwork, state
from localcluster.mounts import release_node_mounts
from localcluster.pki import sign_leaf
from localcluster.state import Cluster, log

NODES_DIR = "realnodes"
NODE_FILE = "node.json"
# The archives imported into the node's containerd since it started (import_archive_once).
IMPORTED_FILE = "imported"
NAME_PREFIX = "real-node-"
# Label and taint: the real node runs only the pods that ask for it.
REAL_NODE_KEY = "kubectl-fluid.io/real-node"
CNI_BIN = Path("/usr/lib/cni")
IMAGE_REPO = "localhost/kubectl-fluid"
DATA_DIR = Path("/var/lib/kubectl-fluid")
READY_TIMEOUT = 90.0
NODE_PROCESSES = ("containerd", "kubelet", "coredns")
CLUSTER_DOMAIN = "cluster.local"
# The kubernetes Service's port (the API server's APIServerServicePort).
API_SERVICE_PORT = 443
KUBELET_ROOT = "/var/lib/kubelet"
# The host paths a user's node has and the product's manifests mount (kubelet's root dir, the CSI node
# service's state, the FUSE stand-in's data), each the node's own directory in its view (nodeview.py):
# two clusters on this host never share them, and kubelet hands the CSI driver the paths its hostPaths
# name, as on any node.
NODE_VIEW = {
    KUBELET_ROOT: "kubelet",
    "/var/lib/fluid-csi": "fluid-csi",
    "/var/lib/curvine-standin": "curvine-standin",
    # A runtime's client pods mount its FUSE at its target path (names.target_path), a hostPath with
    # Bidirectional propagation: it must be a shared mount, and each node's own.
    "/runtime-mnt": "runtime-mnt",
}


def pause_image(kube_version: str) -> str:
    return f"{IMAGE_REPO}/pause:{kube_version}"


def busybox_image(version: str) -> str:
    return f"{IMAGE_REPO}/busybox:{version}"


@dataclass
class RealNode:
    """What ``stop`` needs to undo a node, recorded in its folder before anything is started."""

    name: str
    dir: str
    bridge: str
    subnet: str
    cgroup_root: str
    kubelet_port: int
    healthz_port: int
    node_ip: str
    record: str  # the folder in the state dir that holds node.json
    # Tainted: only pods that ask for the node land there (beside kwok nodes). Untainted: a cluster
    # whose nodes are all real takes the product's manifests as they are.
    tainted: bool = True

    @property
    def root(self) -> Path:
        return Path(self.dir)

    @property
    def bridge_ip(self) -> str:
        """The host's address on the node's bridge (the subnet's first): pods reach the host there,
        on their own link, for DNS and the Service range."""
        return str(next(ipaddress.ip_network(self.subnet).hosts()))

    @property
    def socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def runc_root(self) -> Path:
        return self.root / "runc"

    def save(self) -> None:
        record = Path(self.record)
        record.mkdir(parents=True, exist_ok=True)
        (record / NODE_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")
        with contextlib.suppress(FileExistsError):
            (record / "data").symlink_to(self.dir)

    @classmethod
    def load(cls, folder: Path) -> RealNode | None:
        try:
            return cls(**json.loads((folder / NODE_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            return None


# ---------------------------------------------------------------- pure: names and configuration


def plan(state_dir: Path, index: int, ports: dict[str, int], node_ip: str, tainted: bool = True) -> RealNode:
    """A node's private names, derived from the state dir so that two clusters side by side never
    share a bridge, a subnet or a cgroup: ``kf`` + 6 hex digits + the index (Linux allows 15)."""
    tag = state.cluster_tag(state_dir)
    name = f"{NAME_PREFIX}{index}"
    return RealNode(
        name=name,
        dir=str(DATA_DIR / f"{tag}-{index}"),
        bridge=f"kf{tag}{index}",
        subnet=f"10.{100 + int(tag, 16) % 100}.{index}.0/24",
        cgroup_root=f"/kubectl-fluid-{tag}-{index}",
        kubelet_port=ports["kubelet"],
        healthz_port=ports["healthz"],
        node_ip=node_ip,
        record=str(state_dir.resolve() / NODES_DIR / name),
        tainted=tainted,
    )


def node_view(node: RealNode) -> list[tuple[str, str]]:
    """(the node's directory, the path it has in the node's view), for nodeview.py."""
    return [(str(node.root / sub), target) for target, sub in NODE_VIEW.items()]


def containerd_command(node: RealNode, bins: Path) -> list[str]:
    """containerd in a mount namespace of the node's own (its view of /var/lib), where runc and every
    container of the node run too."""
    binds = [f"{source}={target}" for source, target in node_view(node)]
    return [
        "unshare", "--mount", "--propagation", "unchanged", "--",
        sys.executable, nodeview.__file__, node.dir, *binds, "--",
        str(bins / "containerd"), f"--config={node.root / 'containerd' / 'config.toml'}",
    ]  # fmt: skip


def kubelet_command(node: RealNode, bins: Path, containerd_pid: int) -> list[str]:
    """kubelet in containerd's mount namespace: its root dir, the volumes it mounts and the hostPaths
    it checks are those runc gives the containers."""
    etc = node.root / "etc"
    return [
        "nsenter", f"--mount=/proc/{containerd_pid}/ns/mnt", "--",
        str(bins / "kubelet"),
        f"--config={etc / 'kubelet.json'}",
        f"--kubeconfig={etc / 'kubeconfig'}",
        f"--root-dir={KUBELET_ROOT}",
        f"--cert-dir={node.root / 'pki'}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.node_ip}",
        f"--node-labels={REAL_NODE_KEY}=true",
        "--v=1",
    ]  # fmt: skip


def containerd_config(node: RealNode, bin_dir: Path, pause: str) -> str:
    """containerd 2.x (config version 3), private to the node: no imports, no NRI, no CDI, netns
    bind mounts and runc's state under the node's folder, the sandbox image pinned to the local
    pause image (nothing is ever pulled)."""
    r = node.root / "containerd"
    return f"""version = 3
root = "{r / "root"}"
state = "{r / "state"}"
imports = []
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = "{node.socket}"

[ttrpc]
  address = "{node.socket}.ttrpc"

[metrics]
  address = ""

[plugins.'io.containerd.internal.v1.opt']
  path = "{r / "opt"}"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{pause}"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "{bin_dir / "runc"}"
        Root = "{node.runc_root}"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{CNI_BIN}"]
    conf_dir = "{node.root / "cni" / "net.d"}"
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def cni_config(node: RealNode) -> dict[str, Any]:
    """A bridge with no default gateway and no masquerade: pods talk to each other and to this host
    (the bridge's address, which the node gives the bridge itself), and route only the Service range
    and the other nodes' pods (podnetwork.py) to the host. ``isGateway`` stays off: with it the bridge
    plugin turns on the host's ip_forward."""
    return {
        "cniVersion": "1.0.0",
        "name": "kubectl-fluid",
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.bridge,
                "isGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": node.subnet, "gateway": node.bridge_ip}]],
                    "routes": [
                        {"dst": controlplane.SERVICE_CIDR, "gw": node.bridge_ip},
                        {"dst": podnetwork.pod_range(node), "gw": node.bridge_ip},
                    ],
                    "dataDir": str(node.root / "cni" / "ipam"),
                },
            },
            {"type": "loopback"},
        ],
    }


def kubelet_config(node: RealNode, ca: Path) -> dict[str, Any]:
    """KubeletConfiguration: served on 127.0.0.1 only, callers authenticated by the cluster CA and
    authorised by the API server; the settings this machine forces (module docstring)."""
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": "127.0.0.1",
        "port": node.kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": node.healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{node.socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup_root,
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "podLogsDir": str(node.root / "pod-logs"),
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [node.bridge_ip],
        "resolvConf": "/etc/resolv.conf",
        # The images are imported, never pulled: garbage-collecting one would break the next pod.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "serializeImagePulls": False,
        "maxPods": 110,
    }
    if node.tainted:
        config["registerWithTaints"] = [{"key": REAL_NODE_KEY, "value": "true", "effect": "NoSchedule"}]
    return config


def corefile(node: RealNode, kubeconfig: Path) -> str:
    """CoreDNS for the node's pods, on the node's bridge address only: the kubernetes plugin answers
    ``{svc}.{ns}.svc.cluster.local`` and a headless Service's ``{hostname}.{svc}`` from the API server.
    No ``forward``: names outside the cluster get no answer from outside this machine."""
    return f""".:53 {{
    bind {node.bridge_ip}
    errors
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
    loop
}}
"""


def chain(node: RealNode) -> str:
    """The node's own chain (``KF-`` + its bridge's name) in the nat table (service_rules) and in the
    raw table (loopback_guard_rules): two clusters side by side share this host's network
    namespace, so neither may own host-wide chains as kube-proxy does."""
    return f"KF-{node.bridge}"


def service_rules(node: RealNode, cluster_ip: str, api_port: int) -> list[list[str]]:
    """iptables arguments that send the kubernetes Service (``cluster_ip``:443), asked for from this
    node's bridge only, to the API server on 127.0.0.1 (with ``route_localnet`` on the bridge alone).
    No masquerade: the API server answers the pod's own address over the bridge."""
    return [
        ["-t", "nat", "-N", chain(node)],
        ["-t", "nat", "-A", chain(node), "-d", f"{cluster_ip}/32",
         "-p", "tcp", "--dport", str(API_SERVICE_PORT),
         "-m", "comment", "--comment", f"kubectl-fluid {node.name}: default/kubernetes",
         "-j", "DNAT", "--to-destination", f"127.0.0.1:{api_port}"],
        ["-t", "nat", "-A", "PREROUTING", "-i", node.bridge, "-j", chain(node)],
    ]  # fmt: skip


def service_rules_removal(node: RealNode) -> list[list[str]]:
    return _chain_removal(node, "nat")


def _chain_removal(node: RealNode, table: str) -> list[list[str]]:
    """Undo the node's chain in ``table``, entered from PREROUTING: the jump, its rules, the chain."""
    return [
        ["-t", table, "-D", "PREROUTING", "-i", node.bridge, "-j", chain(node)],
        ["-t", table, "-F", chain(node)],
        ["-t", table, "-X", chain(node)],
    ]


def loopback_guard_rules(node: RealNode) -> list[list[str]]:
    """iptables arguments that drop every packet this node's pods address to the host's 127.0.0.0/8:
    ``route_localnet`` on the bridge, which the Service's DNAT needs, would let a pod reach each
    loopback listener of this host, etcd's plain HTTP included (CVE-2020-8558). In the raw table, from
    this bridge only: before conntrack, the DNAT and routing, where the Service's packets still carry
    the ClusterIP (nothing to exempt), and before any filter rule of the host's. kubelet drops the same
    packets in its KUBE-FIREWALL, host-wide and for as long as kubelet keeps that rule; this one is the
    node's own and goes with it."""
    return [
        ["-t", "raw", "-N", chain(node)],
        ["-t", "raw", "-A", chain(node), "-d", "127.0.0.0/8",
         "-m", "comment", "--comment", f"kubectl-fluid {node.name}: no pod reaches the host's loopback",
         "-j", "DROP"],
        ["-t", "raw", "-I", "PREROUTING", "-i", node.bridge, "-j", chain(node)],
    ]  # fmt: skip


def loopback_guard_removal(node: RealNode) -> list[list[str]]:
    return _chain_removal(node, "raw")


def node_kubeconfig(server: str, pki: Path, node: RealNode) -> dict[str, Any]:
    cert = node.root / "pki"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}
        ],
        "users": [
            {
                "name": node.name,
                "user": {
                    "client-certificate": str(cert / "kubelet.crt"),
                    "client-key": str(cert / "kubelet.key"),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": node.name}}],
        "current-context": "local",
    }


def busybox_version(banner: str) -> str:
    """``1.35.0`` from ``BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.``"""
    match = re.match(r"BusyBox v([0-9][0-9A-Za-z.+-]*)", banner)
    if not match:
        raise ValueError(f"not a busybox banner: {banner[:80]!r}")
    return match.group(1)


def host_address(ip_output: str) -> str:
    """The first global IPv4 address in ``ip -4 -o addr show scope global``: kubelet refuses a
    loopback node IP."""
    for line in ip_output.splitlines():
        match = re.search(r"\binet ([0-9.]+)/", line)
        if match:
            return match.group(1)
    raise SystemExit("error: this host has no global IPv4 address; a real node needs one for its node IP")


# ---------------------------------------------------------------- I/O: build, start, stop


@functools.cache  # one build-bins check per process: its answer does not change while we run
def node_bins() -> Path:
    out = subprocess.run(
        ["bash", str(state.HACK / "build-bins.sh"), "node"],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit("error: building the real node's binaries failed (see the lines above)")
    return Path(out.stdout.strip().splitlines()[-1])


def missing_prerequisites() -> list[str]:
    """What a real node needs from this host beyond the Go-built binaries, each said with its fix."""
    problems = []
    if os.geteuid() != 0:
        problems.append("a real node needs root (containerd, runc, mounts, a bridge): run as root")
    for plugin in ("bridge", "host-local", "loopback"):
        if not (CNI_BIN / plugin).is_file():
            problems.append(
                f"CNI plugin {CNI_BIN / plugin} missing: apt-get install -y containernetworking-plugins"
            )
    for tool in ("ip", "unshare", "mount", "umount"):
        if shutil.which(tool) is None:
            problems.append(f"{tool} not found: apt-get install -y iproute2 util-linux mount")
    if shutil.which("iptables") is None:
        problems.append(
            "iptables not found (the node's Service and loopback rules): apt-get install -y iptables"
        )
    return problems


def ensure(cluster: Cluster, count: int, tainted: bool = True, required: bool = True) -> list[RealNode]:
    """``count`` real nodes, Ready: the ones already running are kept, missing ones started. Not
    ``required`` (``make up``'s default of one), a host that cannot have one (a missing package, the
    binaries failing to build) gets none and is told why and how to silence it; a node that fails to
    start is an error either way."""
    if count <= 0:
        return []
    problems = missing_prerequisites()
    if problems:
        if required:
            raise SystemExit("error: " + "; ".join(problems))
        log(f"no real node: {'; '.join(problems)} (LOCALCLUSTER_REAL_NODES=0 asks for none)")
        return []
    try:
        bins = node_bins()
    except SystemExit as failed:
        if required:
            raise
        log(f"no real node: {failed} (LOCALCLUSTER_REAL_NODES=0 asks for none)")
        return []
    nodes = []
    for index in range(count):
        existing = RealNode.load(cluster.state_dir / NODES_DIR / f"{NAME_PREFIX}{index}")
        if existing is not None and running(cluster, existing):
            log(f"real node {existing.name} already running")
            _guard_loopback(existing)  # put back as it is, or added to a node started before it existed
            nodes.append(existing)
            continue
        if existing is not None:
            stop(cluster, existing)
        nodes.append(start(cluster, index, bins, tainted))
    # Imported here: the package would otherwise hold the module `python -m` is about to run.
    from localcluster import serviceproxy

    serviceproxy.ensure(cluster)  # the cluster's ClusterIP Services, answered from every node
    return nodes


def running(cluster: Cluster, node: RealNode) -> bool:
    """Its containerd, kubelet and coredns are all recorded and alive."""
    names = [f"{c}-{node.name}" for c in NODE_PROCESSES]
    procs = [p for p in cluster.procs if p.name in names]
    return len(procs) == len(names) and all(p.alive() for p in procs)


def start(cluster: Cluster, index: int, bins: Path, tainted: bool = True) -> RealNode:
    t0 = time.monotonic()
    ip = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True, check=True
    )
    node = plan(
        cluster.state_dir,
        index,
        state.free_ports(["kubelet", "healthz"]),
        host_address(ip.stdout),
        tainted,
    )
    release_node_mounts(node.root)  # a stale node of a cluster that was not stopped
    node.save()  # first, so that `down` can undo a start that fails half-way
    try:
        _start(cluster, node, bins)
    except BaseException:
        stop(cluster, node)
        raise
    log(f"real node {node.name} Ready in {time.monotonic() - t0:.1f}s")
    return node


def _start(cluster: Cluster, node: RealNode, bins: Path) -> None:
    kube_version = subprocess.run(
        [str(bins / "kubelet"), "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    pause = pause_image(kube_version)
    for sub in (
        "containerd",
        "cni/net.d",
        "cni/ipam",
        *NODE_VIEW.values(),
        "etc",
        "pki",
        "pod-logs",
        "images",
    ):
        (node.root / sub).mkdir(parents=True, exist_ok=True)
    (node.root / "containerd" / "config.toml").write_text(containerd_config(node, bins, pause))
    (node.root / "cni" / "net.d" / "10-kubectl-fluid.conflist").write_text(
        json.dumps(cni_config(node), indent=2)
    )
    cgroups.make_root(node.cgroup_root)
    _guard_loopback(node)  # before route_localnet goes on with the bridge
    _make_bridge(node)
    _route_kubernetes_service(cluster, node)

    _share_root(node)
    log(f"starting containerd for real node {node.name}")
    env = {"PATH": f"{bins}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
    containerd = state.start(cluster, f"containerd-{node.name}", containerd_command(node, bins), env=env)
    state.wait_for(
        f"containerd of {node.name}",
        lambda: ctr(bins, node, "version").returncode == 0,
        cluster,
        30,
        [f"containerd-{node.name}"],
    )

    t_images = time.monotonic()
    images = import_images(bins, node, pause)
    log(f"imported {', '.join(images)} into {node.name} in {time.monotonic() - t_images:.1f}s")

    cert, key = sign_leaf(cluster.pki, f"system:node:{node.name}", "system:nodes")
    (node.root / "pki" / "kubelet.crt").write_bytes(cert)
    (node.root / "pki" / "kubelet.key").write_bytes(key)
    (node.root / "pki" / "kubelet.key").chmod(0o600)
    (node.root / "etc" / "kubeconfig").write_text(
        json.dumps(node_kubeconfig(cluster.server, cluster.pki, node), indent=2)
    )
    (node.root / "etc" / "kubelet.json").write_text(
        json.dumps(kubelet_config(node, cluster.pki / "ca.crt"), indent=2)
    )
    _start_dns(cluster, node, bins)
    # The API server reaches this kubelet (exec, logs) by the node's name: resolve it to loopback there.
    with open(cluster.state_dir / state.HOSTS_FILE, "a") as hosts:
        hosts.write(f"127.0.0.1 {node.name}\n")

    log(f"starting kubelet for real node {node.name}")
    state.start(cluster, f"kubelet-{node.name}", kubelet_command(node, bins, containerd.pid), env=env)
    state.wait_for(
        f"real node {node.name} Ready",
        lambda: node_ready(cluster, node.name),
        cluster,
        READY_TIMEOUT,
        [f"containerd-{node.name}", f"kubelet-{node.name}"],
    )


def _share_root(node: RealNode) -> None:
    """The node's folder as a shared mount of its own: its copy in the node's namespace is a peer, so
    what containerd and kubelet mount there (and beneath the views bound from it) shows on the host,
    where ``stop`` unmounts it; nothing else of the node's namespace does."""
    for args in (["--bind", node.dir, node.dir], ["--make-shared", node.dir]):
        run = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SystemExit(f"error: mount {' '.join(args)}: {run.stderr.strip()}")


def in_node(cluster: Cluster, node: RealNode, argv: list[str]) -> list[str]:
    """``argv`` run in the node's own mount namespace (containerd's), as kubelet is: the paths it
    sees are the node's (``make up`` runs the product's CSI node service there)."""
    [containerd] = [p for p in cluster.procs if p.name == f"containerd-{node.name}"]
    return ["nsenter", f"--mount=/proc/{containerd.pid}/ns/mnt", "--", *argv]


def recorded(cluster: Cluster) -> list[RealNode]:
    """The real nodes of ``cluster`` that are running, by name."""
    folder = cluster.state_dir / NODES_DIR
    nodes = [RealNode.load(sub) for sub in sorted(folder.iterdir())] if folder.is_dir() else []
    return [n for n in nodes if n is not None and running(cluster, n)]


def _namespace_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def _stop_namespace(namespace: str | None) -> None:
    """Every process left in the node's mount namespace (a local CSI node service and the FUSE
    programs it started, which outlive it by design): SIGTERM, then SIGKILL after 10 s."""
    if namespace is None or namespace == _namespace_of(os.getpid()):
        return

    def members() -> list[int]:
        pids = [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]
        return [pid for pid in pids if _namespace_of(pid) == namespace]

    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        left = members()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            time.sleep(0.05)
            left = [pid for pid in left if Path(f"/proc/{pid}").exists()]


def namespace_mounts(cluster: Cluster, node: RealNode) -> list[str]:
    """The mount points of the node's own namespace (containerd's), for checks that nothing is left.
    Another node's folder is left out: the host's mounts propagate into this namespace, so another
    cluster's node on this host (make demo beside make test) shows its pods' volumes here too."""
    [containerd] = [p for p in cluster.procs if p.name == f"containerd-{node.name}"]
    with open(f"/proc/{containerd.pid}/mountinfo") as table:
        return own_points([nodeview.unescape(line.split()[4]) for line in table], node.dir)


def own_points(points: list[str], node_dir: str) -> list[str]:
    """``points`` but those in another node's folder under DATA_DIR."""
    elsewhere = {p for p in points if p.startswith(f"{DATA_DIR}/") and not f"{p}/".startswith(f"{node_dir}/")}
    return [p for p in points if p not in elsewhere]


def _make_bridge(node: RealNode) -> None:
    """The node's bridge with the host's address on it, made before any pod (the CNI plugin then uses
    it as it is): CoreDNS binds there, and the host routes the pods' subnet (the API server calls
    webhooks at their pods' addresses). route_localnet on this bridge alone lets the Service rule
    hand its pods' packets to the API server on 127.0.0.1."""
    subprocess.run(["ip", "link", "delete", node.bridge], capture_output=True, check=False)  # a stale one
    prefix = ipaddress.ip_network(node.subnet).prefixlen
    for args in (
        ["link", "add", "name", node.bridge, "type", "bridge"],
        ["addr", "add", f"{node.bridge_ip}/{prefix}", "dev", node.bridge],
        ["link", "set", node.bridge, "up"],
    ):
        run = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SystemExit(f"error: ip {' '.join(args)}: {run.stderr.strip()}")
    Path(f"/proc/sys/net/ipv4/conf/{node.bridge}/route_localnet").write_text("1\n")
    podnetwork.enable_forwarding(node.bridge)


def _iptables(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", "5", *args], capture_output=True, text=True, check=False)


def _route_kubernetes_service(cluster: Cluster, node: RealNode) -> None:
    """The node's pods reach the kubernetes Service's ClusterIP (what in-cluster clients dial) through
    the node's own DNAT rule: kube-proxy would own host-wide chains that a second cluster on this host
    (the e2e tests run two at once) would overwrite."""
    path = "/api/v1/namespaces/default/services/kubernetes"
    # The API server makes the Service shortly after it starts serving.
    state.wait_for(
        "the kubernetes Service",
        lambda: state.api(cluster, "GET", path)[0] == 200,
        cluster,
        30,
        ["kube-apiserver"],
    )
    service = state.api(cluster, "GET", path)[1]
    api_port = int(cluster.server.rsplit(":", 1)[1])
    _replace_rules(service_rules_removal(node), service_rules(node, service["spec"]["clusterIP"], api_port))


def _guard_loopback(node: RealNode) -> None:
    """The node's pods reach nothing of the host's loopback but the Service (loopback_guard_rules), and
    nothing through this host but the cluster's pods (podnetwork.forward_rules)."""
    _replace_rules(loopback_guard_removal(node), loopback_guard_rules(node))
    _replace_rules(podnetwork.forward_removal(node), podnetwork.forward_rules(node))


def _replace_rules(removal: list[list[str]], add: list[list[str]]) -> None:
    """``removal`` first (the same rules of a node that was not stopped, or of this one: an error
    there means there was none), then ``add``: never twice the same rule."""
    for args in removal:
        _iptables(args)
    for args in add:
        run = _iptables(args)
        if run.returncode != 0:
            raise SystemExit(f"error: iptables {' '.join(args)}: {run.stderr.strip()}")


def _start_dns(cluster: Cluster, node: RealNode, bins: Path) -> None:
    corefile_path = node.root / "etc" / "Corefile"
    corefile_path.write_text(corefile(node, cluster.kubeconfig))
    log(f"starting coredns for real node {node.name} on {node.bridge_ip}")
    state.start(
        cluster, f"coredns-{node.name}", [str(bins / "coredns"), "-conf", str(corefile_path), "-quiet"]
    )

    def listening() -> bool:
        with socket.create_connection((node.bridge_ip, 53), timeout=1):
            return True

    state.wait_for(f"coredns of {node.name}", listening, cluster, 30, [f"coredns-{node.name}"])


def import_images(bins: Path, node: RealNode, pause: str) -> list[str]:
    """The pause and busybox images, written as OCI archives and imported into the node's containerd."""
    busybox = busybox_of(bins)
    archives = node.root / "images"
    images.oci.pause_image(bins / "pause", pause, archives / "pause.tar")
    images.oci.busybox_image(bins / "busybox", busybox, archives / "busybox.tar")
    for archive in ("pause.tar", "busybox.tar"):
        import_archive(bins, node, archives / archive)
    return [pause, busybox]


def busybox_of(bins: Path) -> str:
    """The busybox image's name (import_images), from the node's busybox binary's own banner."""
    banner = subprocess.run([str(bins / "busybox")], capture_output=True, text=True, check=False).stdout
    return busybox_image(busybox_version(banner))


def import_archive(bins: Path, node: RealNode, archive: Path) -> None:
    """An OCI archive (images/oci.py, images/product.py) into the node's containerd, for CRI."""
    run = ctr(bins, node, "images", "import", "--platform", "linux/amd64", str(archive))
    if run.returncode != 0:
        raise SystemExit(f"error: ctr images import {archive} into {node.name}: {run.stderr.strip()}")


def import_archive_once(bins: Path, node: RealNode, archive: Path) -> bool:
    """``import_archive``, unless this very archive (path, size, mtime) went into the node's running
    containerd before: a reused cluster's second ``make demo`` does not import 700 MiB again. The
    record goes with the node (``stop``); images are cached by content, so a changed image is another
    archive. Returns whether it imported."""
    seen = Path(node.record) / IMPORTED_FILE
    stat = archive.stat()
    entry = f"{archive} {stat.st_size} {stat.st_mtime_ns}"
    if seen.exists() and entry in seen.read_text().splitlines():
        return False
    import_archive(bins, node, archive)
    with seen.open("a") as record:
        record.write(entry + "\n")
    return True


def ctr(bins: Path, node: RealNode, *args: str) -> subprocess.CompletedProcess[str]:
    # ctr 2.x needs the socket as an absolute path.
    return subprocess.run(
        [str(bins / "ctr"), "--address", str(node.socket), "-n", "k8s.io", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def node_ready(cluster: Cluster, name: str) -> bool:
    status, body = state.api(cluster, "GET", f"/api/v1/nodes/{name}")
    return status == 200 and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in body.get("status", {}).get("conditions", [])
    )


def stop(cluster: Cluster, node: RealNode) -> None:
    """Stop kubelet, every container, containerd, coredns and the shims, remove the node's Service
    and loopback rules, then its mounts, network namespaces, bridge, cgroups and folder, and its Node
    object."""
    kubelet = [p for p in cluster.procs if p.name == f"kubelet-{node.name}"]
    state.stop(kubelet)
    # kubelet leaves its pods running when it stops; runc kills each container's processes and
    # removes its cgroup.
    for namespace in node.runc_root.glob("*"):
        listed = subprocess.run(
            [_runc(node), "--root", str(namespace), "list", "-q"], capture_output=True, text=True, check=False
        )
        for container in listed.stdout.split():
            subprocess.run(
                [_runc(node), "--root", str(namespace), "delete", "--force", container],
                capture_output=True,
                check=False,
            )
    # What the kernel did not take with the containers (cgroups.py: a FUSE server a stuck request of
    # its own container waits for).
    cgroups.kill_members(node.cgroup_root)
    containerd = [p for p in cluster.procs if p.name in (f"containerd-{node.name}", f"coredns-{node.name}")]
    # Read before containerd goes (a recorded pid is trusted only while alive, see state.Proc).
    live = [p.pid for p in containerd if p.name == f"containerd-{node.name}" and p.alive()]
    view = _namespace_of(live[0]) if live else None
    state.stop(containerd)
    _stop_namespace(view)
    for args in service_rules_removal(node) + loopback_guard_removal(node) + podnetwork.forward_removal(node):
        _iptables(args)
    # The shims (their command lines name the node's socket), then every mount under the node's folder
    # (rootfs overlays, shm, netns bind mounts, kubelet's volumes), deepest first, and the folder.
    release_node_mounts(node.root)
    with contextlib.suppress(OSError):
        DATA_DIR.rmdir()  # when no other node uses it
    shutil.rmtree(node.record, ignore_errors=True)
    subprocess.run(["ip", "link", "delete", node.bridge], capture_output=True, check=False)
    cgroups.remove_root(node.cgroup_root)
    cluster.procs = [p for p in cluster.procs if p not in kubelet + containerd]
    cluster.save()
    with contextlib.suppress(OSError, ValueError):
        state.api(cluster, "DELETE", f"/api/v1/nodes/{node.name}", timeout=2)
    log(f"real node {node.name} stopped")


def _runc(node: RealNode) -> str:
    # The runc containerd was told to use, from the node's own configuration.
    try:
        config = (node.root / "containerd" / "config.toml").read_text()
    except OSError:
        return "runc"
    match = re.search(r'BinaryName = "([^"]+)"', config)
    return match.group(1) if match else "runc"


def stop_all(cluster: Cluster) -> None:
    from localcluster import serviceproxy  # as in ensure

    serviceproxy.stop(cluster)
    folder = cluster.state_dir / NODES_DIR
    if not folder.is_dir():
        return
    for sub in sorted(folder.iterdir()):
        node = RealNode.load(sub)
        if node is not None:
            stop(cluster, node)
    shutil.rmtree(folder, ignore_errors=True)
