"""A real node's pure parts (hack/localcluster/realnodes.py): its private names, the containerd, CNI and
kubelet configuration this machine needs, the node identity from the cluster CA, the API server's hosts
file."""

from __future__ import annotations

import ipaddress
import json
import tomllib
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from hypothesis import given, settings
from hypothesis import strategies as st

import localcluster
from kubectl_fluid.api import names
from localcluster import podnetwork, realnodes
from localcluster.controlplane import SERVICE_CIDR, private_hosts
from localcluster.pki import sign_leaf, write_pki
from localcluster.state import HOSTS_FILE

PORTS = {"kubelet": 41001, "healthz": 41002}


def node(tmp_path: Path, index: int = 0) -> realnodes.RealNode:
    return realnodes.plan(tmp_path, index, PORTS, "192.0.2.2")


def test_names_are_private_to_the_state_dir_and_fit_linux(tmp_path: Path) -> None:
    a, b, a1 = node(tmp_path / "a"), node(tmp_path / "b"), node(tmp_path / "a", 1)
    assert a.name == "real-node-0"
    assert a1.name == "real-node-1"
    # Two clusters side by side, or two nodes of one, never share a bridge, cgroup or subnet.
    assert len({a.bridge, b.bridge, a1.bridge}) == 3
    assert len({a.cgroup_root, b.cgroup_root, a1.cgroup_root}) == 3
    assert len({a.dir, b.dir, a1.dir}) == 3
    assert all(len(n.bridge) <= 15 for n in (a, b, a1))  # IFNAMSIZ
    nets = [ipaddress.ip_network(n.subnet) for n in (a, a1)]
    assert not nets[0].overlaps(nets[1])
    assert all(n.is_private and n.prefixlen == 24 for n in nets)


def test_sockets_fit_linux_unix_path_limit_whatever_the_state_dir(tmp_path: Path) -> None:
    # sun_path holds 108 bytes with the NUL; kubelet's deepest socket is the CSI driver's registration.
    n = node(tmp_path / ("deep" * 30))
    assert len(f"{n.socket}.ttrpc") <= 107
    assert len(f"{n.kubelet_root}/plugins_registry/{names.CSI_DRIVER}-reg.sock") <= 107
    assert Path(n.dir).parent == realnodes.DATA_DIR
    # The record stays in the state dir, where `down` finds it.
    assert Path(n.record) == (tmp_path / ("deep" * 30)).resolve() / "realnodes" / "real-node-0"


def test_node_record_round_trips(tmp_path: Path) -> None:
    n = node(tmp_path)
    n.save()
    assert realnodes.RealNode.load(Path(n.record)) == n
    assert (Path(n.record) / "data").readlink() == n.root
    assert realnodes.RealNode.load(tmp_path / "nowhere") is None


def test_containerd_is_private_to_the_node_and_set_for_this_machine(tmp_path: Path) -> None:
    n = node(tmp_path)
    config = tomllib.loads(realnodes.containerd_config(n, Path("/bins"), "localhost/kubectl-fluid/pause:v1"))
    assert config["version"] == 3
    assert config["imports"] == []
    assert "io.containerd.nri.v1.nri" in config["disabled_plugins"]
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]
    # No CAP_SYS_RESOURCE here: without this every sandbox fails in runc's nsexec.
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["netns_mounts_under_state_dir"] is True
    assert runtime["cdi_spec_dirs"] == []
    runc = runtime["containerd"]["runtimes"]["runc"]["options"]
    assert runc["BinaryName"] == "/bins/runc"
    assert config["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"].endswith("pause:v1")
    # Everything containerd writes or listens on is under the node's folder.
    assert config["grpc"]["address"] == str(n.socket)
    assert config["ttrpc"]["address"] == f"{n.socket}.ttrpc"
    paths = [
        config["root"],
        config["state"],
        runc["Root"],
        runtime["cni"]["conf_dir"],
        config["plugins"]["io.containerd.internal.v1.opt"]["path"],
    ]
    assert all(p.startswith(n.dir + "/") for p in paths), paths
    assert config["plugins"]["io.containerd.grpc.v1.cri"]["stream_server_address"] == "127.0.0.1"


def test_cni_bridge_has_no_gateway_and_no_masquerade(tmp_path: Path) -> None:
    n = node(tmp_path)
    bridge, loopback = realnodes.cni_config(n)["plugins"]
    assert (bridge["type"], loopback["type"]) == ("bridge", "loopback")
    assert bridge["bridge"] == n.bridge
    assert bridge["isGateway"] is False
    assert bridge["ipMasq"] is False
    assert bridge["ipam"]["ranges"] == [[{"subnet": n.subnet, "gateway": n.bridge_ip}]]
    assert bridge["ipam"]["dataDir"].startswith(n.dir + "/")


def test_pods_route_only_the_service_range_and_the_clusters_pods_to_the_host(tmp_path: Path) -> None:
    # The bridge's own address is the host's side; pods get no default route, only the Service range
    # (where the node's DNAT rule answers the kubernetes Service) and the cluster's /16 (the other
    # nodes' pods) through the host. isGateway stays off: the bridge plugin would turn on the host's
    # ip_forward with it.
    n = node(tmp_path)
    bridge = realnodes.cni_config(n)["plugins"][0]
    assert bridge["ipam"]["routes"] == [
        {"dst": SERVICE_CIDR, "gw": n.bridge_ip},
        {"dst": podnetwork.pod_range(n), "gw": n.bridge_ip},
    ]
    assert bridge["isGateway"] is False
    assert ipaddress.ip_address(n.bridge_ip) in ipaddress.ip_network(n.subnet)


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet="abcdefgh/", min_size=1, max_size=40), st.integers(min_value=0, max_value=9))
def test_bridge_address_is_a_host_of_the_nodes_subnet(tail: str, index: int) -> None:
    n = realnodes.plan(Path("/tmp") / tail.strip("/"), index, PORTS, "192.0.2.2")
    net = ipaddress.ip_network(n.subnet)
    ip = ipaddress.ip_address(n.bridge_ip)
    assert ip in net
    assert ip not in (net.network_address, net.broadcast_address)


def test_pods_resolve_cluster_names_through_the_nodes_coredns(tmp_path: Path) -> None:
    n = node(tmp_path)
    assert realnodes.kubelet_config(n, tmp_path / "ca.crt")["clusterDNS"] == [n.bridge_ip]
    corefile = realnodes.corefile(n, tmp_path / "kubeconfig")
    words = [line.split() for line in corefile.splitlines() if line.strip()]
    assert ["bind", n.bridge_ip] in words  # its own bridge only, never the host's other addresses
    assert ["kubernetes", "cluster.local", "in-addr.arpa", "ip6.arpa", "{"] in words
    assert ["kubeconfig", str(tmp_path / "kubeconfig")] in words
    # Nothing forwarded: a name outside the cluster gets no answer from outside this machine.
    assert not any(w[0] == "forward" for w in words)


def test_the_kubernetes_service_is_routed_to_the_api_server_from_this_bridge_only(tmp_path: Path) -> None:
    a, b = node(tmp_path / "a"), node(tmp_path / "b")
    add = realnodes.service_rules(a, "10.96.0.1", 6443)
    assert all(rule[:2] == ["-t", "nat"] for rule in add)
    jump = [r for r in add if "PREROUTING" in r]
    assert jump == [["-t", "nat", "-A", "PREROUTING", "-i", a.bridge, "-j", realnodes.chain(a)]]
    dnat = [r for r in add if "DNAT" in r]
    assert len(dnat) == 1
    rule = dnat[0]
    assert rule[rule.index("-d") + 1] == "10.96.0.1/32"
    assert rule[rule.index("--dport") + 1] == "443"
    assert rule[rule.index("--to-destination") + 1] == "127.0.0.1:6443"
    assert not any("MASQUERADE" in r or "SNAT" in r for r in add)
    # Two nodes (two clusters side by side) never share a chain; iptables allows 28 characters.
    assert realnodes.chain(a) != realnodes.chain(b)
    assert len(realnodes.chain(a)) <= 28
    remove = realnodes.service_rules_removal(a)
    assert ["-t", "nat", "-D", "PREROUTING", "-i", a.bridge, "-j", realnodes.chain(a)] in remove
    assert remove[-1] == ["-t", "nat", "-X", realnodes.chain(a)]


def test_pods_reach_the_hosts_loopback_only_through_the_services_dnat(tmp_path: Path) -> None:
    # route_localnet on the bridge (the Service's DNAT needs it) lets a pod route anything to the
    # host's 127.0.0.0/8, etcd's plain HTTP included (CVE-2020-8558): the node's own chain drops it.
    a, b = node(tmp_path / "a"), node(tmp_path / "b")
    add = realnodes.loopback_guard_rules(a)
    # The raw table: before conntrack and the DNAT, where the Service's packets still carry the
    # ClusterIP, so the drop needs no exception for them; before any filter rule of the host's.
    assert all(rule[:2] == ["-t", "raw"] for rule in add)
    # The chain is made before anything jumps to it; entered by this bridge's packets alone, first: no
    # host-wide chain, as for the Service.
    assert add[0] == ["-t", "raw", "-N", realnodes.chain(a)]
    assert add[-1] == ["-t", "raw", "-I", "PREROUTING", "-i", a.bridge, "-j", realnodes.chain(a)]
    [drop] = [r for r in add if "DROP" in r]
    assert drop[2:4] == ["-A", realnodes.chain(a)]
    assert drop[drop.index("-d") + 1] == "127.0.0.0/8"
    # Whatever the source, the protocol or the state: from the bridge, nothing to 127.0.0.0/8 is legit.
    assert not {"-s", "-p", "conntrack"} & set(drop)
    assert realnodes.loopback_guard_rules(b) != add
    # Undone in the other order: the jump, then the chain's rule, then the chain.
    assert realnodes.loopback_guard_removal(a) == [
        ["-t", "raw", "-D", "PREROUTING", "-i", a.bridge, "-j", realnodes.chain(a)],
        ["-t", "raw", "-F", realnodes.chain(a)],
        ["-t", "raw", "-X", realnodes.chain(a)],
    ]


def test_kubelet_serves_loopback_only_and_carries_what_this_machine_forces(tmp_path: Path) -> None:
    n = node(tmp_path)
    config = realnodes.kubelet_config(n, tmp_path / "ca.crt")
    assert config["address"] == config["healthzBindAddress"] == "127.0.0.1"
    assert (config["port"], config["healthzPort"], config["readOnlyPort"]) == (41001, 41002, 0)
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["authentication"]["x509"]["clientCAFile"] == str(tmp_path / "ca.crt")
    assert config["authorization"]["mode"] == "Webhook"
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == n.cgroup_root
    assert config["oomScoreAdj"] == 0
    assert config["failSwapOn"] is False
    assert config["containerRuntimeEndpoint"] == f"unix://{n.socket}"
    assert config["podLogsDir"].startswith(n.dir + "/")
    assert config["registerWithTaints"] == [
        {"key": realnodes.REAL_NODE_KEY, "value": "true", "effect": "NoSchedule"}
    ]


def test_an_untainted_node_takes_every_pod_as_a_users_node_does(tmp_path: Path) -> None:
    # A cluster whose only node is real: the product's manifests, unchanged, schedule onto it.
    n = realnodes.plan(tmp_path, 0, PORTS, "192.0.2.2", tainted=False)
    assert "registerWithTaints" not in realnodes.kubelet_config(n, tmp_path / "ca.crt")
    n.save()
    assert realnodes.RealNode.load(Path(n.record)) == n


def test_kubelet_identity_is_a_node_of_the_cluster_ca(tmp_path: Path) -> None:
    write_pki(tmp_path)
    cert_pem, _ = sign_leaf(tmp_path, "system:node:real-node-0", "system:nodes")
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate(cert_pem)
    cert.verify_directly_issued_by(ca)
    # The Node authorizer admits exactly this shape: CN system:node:NAME, O system:nodes.
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == [
        "system:node:real-node-0"
    ]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:nodes"
    ]
    # The API server calls kubelets (exec, logs) with a certificate of its own, as a cluster admin.
    client = x509.load_pem_x509_certificate((tmp_path / "apiserver-kubelet-client.crt").read_bytes())
    client.verify_directly_issued_by(ca)
    assert [a.value for a in client.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:masters"
    ]


def test_node_kubeconfig_uses_the_node_certificate(tmp_path: Path) -> None:
    n = node(tmp_path)
    config = realnodes.node_kubeconfig("https://127.0.0.1:6443", tmp_path / "pki", n)
    json.dumps(config)
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    assert config["users"][0]["user"]["client-certificate"] == str(n.root / "pki" / "kubelet.crt")


def test_api_server_hosts_file_keeps_the_nodes_names_across_restarts(tmp_path: Path) -> None:
    cluster = localcluster.Cluster(state_dir=tmp_path)
    argv = private_hosts(cluster)
    hosts = tmp_path / HOSTS_FILE
    assert argv[:2] == ["unshare", "--mount"]
    assert argv[-1] == str(hosts)
    assert hosts.read_text() == Path("/etc/hosts").read_text()
    with open(hosts, "a") as f:
        f.write("127.0.0.1 real-node-0\n")
    private_hosts(cluster)  # restart_storage starts the API server again
    assert hosts.read_text().endswith("127.0.0.1 real-node-0\n")


def test_busybox_version_from_its_banner() -> None:
    banner = "BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.\nBusyBox is copyrighted"
    assert realnodes.busybox_version(banner) == "1.35.0"
    with pytest.raises(ValueError, match="not a busybox banner"):
        realnodes.busybox_version("sh: busybox: not found")


def test_node_ip_is_the_first_global_ipv4_address() -> None:
    out = (
        "2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever\n"
        "3: eth1    inet 198.51.100.7/24 scope global eth1\n"
    )
    assert realnodes.host_address(out) == "192.0.2.2"
    with pytest.raises(SystemExit, match="no global IPv4 address"):
        realnodes.host_address("")


def test_make_ups_default_node_is_skipped_saying_why_where_the_host_cannot_run_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A host without the node's tools, for real: a PATH where none of them is.
    monkeypatch.setenv("PATH", str(tmp_path))
    assert realnodes.ensure(None, 1, required=False) == []  # type: ignore[arg-type]
    said = capsys.readouterr()
    assert "no real node: " in said.out + said.err
    assert "ip not found: apt-get install -y iproute2" in said.out + said.err
    assert "LOCALCLUSTER_REAL_NODES=0" in said.out + said.err
    # Asked for by name, the same host is an error: the caller wanted a node.
    with pytest.raises(SystemExit, match=r"error: .*ip not found"):
        realnodes.ensure(None, 1, required=True)  # type: ignore[arg-type]


def test_make_ups_default_node_is_skipped_when_its_binaries_do_not_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failed() -> Path:
        raise SystemExit("error: building the real node's binaries failed (see the lines above)")

    monkeypatch.setattr(realnodes, "missing_prerequisites", list)
    monkeypatch.setattr(realnodes, "node_bins", failed)
    assert realnodes.ensure(None, 1, required=False) == []  # type: ignore[arg-type]
    said = capsys.readouterr()
    assert "no real node: error: building the real node's binaries failed" in said.out + said.err
    with pytest.raises(SystemExit, match="binaries failed"):
        realnodes.ensure(None, 1, required=True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        ([], None, (1, False)),  # make up: one node, left out (said why) where the host cannot run one
        ([], "0", (0, True)),
        ([], "2", (2, True)),
        (["--real-nodes", "3"], "0", (3, True)),  # the flag over the variable
    ],
)
def test_make_up_starts_one_real_node_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    env: str | None,
    expected: tuple[int, bool],
) -> None:
    from localcluster import __main__ as cli

    seen: list[tuple[int, bool]] = []

    def ensure(_cluster: object, count: int, required: bool) -> list[realnodes.RealNode]:
        seen.append((count, required))
        return []

    monkeypatch.setattr(cli, "up", lambda *_: None)
    monkeypatch.setattr(realnodes, "ensure", ensure)
    if env is None:
        monkeypatch.delenv("LOCALCLUSTER_REAL_NODES", raising=False)
    else:
        monkeypatch.setenv("LOCALCLUSTER_REAL_NODES", env)
    assert cli.main(["up", "--state-dir", str(tmp_path), *argv]) == 0
    assert seen == [expected]


def test_a_nodes_mounts_leave_out_another_nodes_folder() -> None:
    """The host's mounts propagate into a node's namespace: another cluster's node (make demo beside
    make test) must not count as what this node left mounted."""
    mine = "/var/lib/kubectl-fluid/aaaaaa-0"
    points = [
        "/",
        "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv/mount",
        f"{mine}/kubelet/pods/u1/volumes/kubernetes.io~csi/pv/mount",
        "/var/lib/kubectl-fluid/bbbbbb-0/kubelet/pods/u2/volumes/kubernetes.io~csi/pv/mount",
        "/var/lib/kubectl-fluid/aaaaaa-01/kubelet",
    ]
    assert realnodes.own_points(points, mine) == points[:3]
