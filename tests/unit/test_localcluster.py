"""The local cluster driver's pure parts: PKI, kubeconfig, process identity, port picking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import localcluster
from localcluster.kwoknodes import FAKE_NODE_ANNOTATION, node_manifest
from localcluster.pki import write_kubeconfig, write_pki
from localcluster.state import free_ports, proc_start_time


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_pki_chains_to_the_ca_with_the_identities_kubernetes_reads(tmp_path: Path) -> None:
    write_pki(tmp_path)
    ca, server, admin = (load(tmp_path / f) for f in ("ca.crt", "apiserver.crt", "admin.crt"))
    ca_key = ca.public_key()
    assert isinstance(ca_key, ec.EllipticCurvePublicKey)
    for leaf in (server, admin):
        leaf.verify_directly_issued_by(ca)
    # The API server maps O= to groups: the admin must be in system:masters.
    orgs = [a.value for a in admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert orgs == ["system:masters"]
    assert (
        ExtendedKeyUsageOID.CLIENT_AUTH
        in admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    )
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kubernetes.default.svc" in sans.get_values_for_type(x509.DNSName)
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.96.0.1"}
    assert oct((tmp_path / "sa.key").stat().st_mode & 0o777) == "0o600"


def test_kubeconfig_points_at_the_recorded_port_and_pki(tmp_path: Path) -> None:
    cluster = localcluster.Cluster(state_dir=tmp_path, ports={"apiserver": 43210})
    write_kubeconfig(cluster)
    cfg = json.loads(cluster.kubeconfig.read_text())
    assert cfg["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:43210"
    assert cfg["users"][0]["user"]["client-key"] == str(tmp_path / "pki" / "admin.key")
    assert cfg["current-context"] == cfg["contexts"][0]["name"]


def test_state_round_trips(tmp_path: Path) -> None:
    cluster = localcluster.Cluster(
        state_dir=tmp_path,
        bin_dir="/bins",
        etcd_data_dir="/tmp/etcd",
        ports={"apiserver": 1, "etcd": 2},
        procs=[localcluster.Proc("etcd", 123, "456")],
        nodes=["kwok-node-0"],
    )
    cluster.save()
    assert localcluster.Cluster.load(tmp_path) == cluster
    assert localcluster.Cluster.load(tmp_path / "nowhere") is None


def test_a_recorded_process_is_alive_only_while_the_same_process_runs(tmp_path: Path) -> None:
    # A command name with spaces and parentheses must not confuse the /proc/PID/stat parser.
    odd = tmp_path / "a) b (c"
    odd.symlink_to("/bin/sleep")
    child = subprocess.Popen([str(odd), "30"])
    try:
        started = proc_start_time(child.pid)
        assert started is not None
        assert started.isdigit()
        assert localcluster.Proc("x", child.pid, started).alive()
        # Same pid, other start time: a recycled pid must never be taken for our process.
        assert not localcluster.Proc("x", child.pid, str(int(started) + 1)).alive()
    finally:
        child.kill()
        child.wait()
    assert proc_start_time(child.pid) is None
    assert proc_start_time(os.getpid()) is not None


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports([f"p{i}" for i in range(8)])
    assert len(set(ports.values())) == 8
    assert all(1024 < p < 65536 for p in ports.values())


def test_fake_nodes_carry_the_annotation_kwok_selects_on() -> None:
    node = node_manifest("kwok-node-3")
    assert node["metadata"]["annotations"][FAKE_NODE_ANNOTATION] == "fake"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "kwok-node-3"
    # No taint: ordinary Deployments must land without tolerations.
    assert "taints" not in node.get("spec", {})


def test_the_clusters_processes_never_see_the_callers_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    # csi-provisioner prefers KUBECONFIG to its --kubeconfig: it provisioned for the caller's cluster.
    from localcluster.state import process_env

    monkeypatch.setenv("KUBECONFIG", "/elsewhere/kubeconfig")
    monkeypatch.setenv("KEEP_ME", "1")
    env = process_env({"CURVINE_STANDIN_DATA": "/data"})
    assert "KUBECONFIG" not in env
    assert (env["KEEP_ME"], env["CURVINE_STANDIN_DATA"]) == ("1", "/data")
    assert "KUBECONFIG" not in process_env()


def test_a_cluster_without_kwok_nodes_runs_and_builds_no_kwok(tmp_path: Path) -> None:
    """make demo's cluster (real nodes only) has no use for kwok: it is neither built (the mode given
    to hack/build-bins.sh) nor expected among the control plane's processes."""
    from localcluster import controlplane

    users = localcluster.Cluster(state_dir=tmp_path, nodes=[])
    assert "kwok" not in controlplane.control_plane(users)
    assert controlplane.control_plane(localcluster.Cluster(state_dir=tmp_path, nodes=["kwok-node-0"])) == (
        controlplane.CONTROL_PLANE
    )
    script = Path(__file__).resolve().parents[2] / "hack" / "build-bins.sh"
    cluster_mode = script.read_text()[script.read_text().index('if [ "$mode" != cluster ]') :]
    assert "build_installable kwok" in cluster_mode.split("fi\n")[0]
    refused = subprocess.run(["bash", str(script), "nonsense"], capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert "unknown mode 'nonsense'" in refused.stderr


def test_a_users_cluster_without_curvines_binaries_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """make demo's cluster runs the default install, whose FUSE is Curvine's image: without the
    binaries it is built from, one error line says where to put them, and no cluster is started."""
    hack = Path(__file__).resolve().parents[2] / "hack"
    env = {**os.environ, "CURVINE_PEER_DIR": str(tmp_path / "no-peer"), "KUBECTL_FLUID_CACHE": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(hack), str(hack.parent)])
    run = subprocess.run(
        [sys.executable, "-m", "localcluster.userscluster", "--state-dir", str(tmp_path / "state")],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode != 0
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("error: Curvine's image, which the default install runs, cannot be built:"), line
    assert "CURVINE_PEER_DIR" in line
    assert localcluster.Cluster.load(tmp_path / "state") is None
