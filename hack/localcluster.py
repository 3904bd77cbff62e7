#!/usr/bin/env python3
"""A real Kubernetes control plane as local processes: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok (fake nodes that take scheduled pods to Running), all on 127.0.0.1.

    python hack/localcluster.py up   [--state-dir .dev] [--nodes 2]
    python hack/localcluster.py down [--state-dir .dev]
    python hack/localcluster.py status [--state-dir .dev]

Binaries come from hack/build-bins.sh (built from Go modules, cached by version outside the repo).
Ports are picked free at start, so two clusters with different state dirs run side by side. ``up`` is
idempotent: a healthy cluster in the state dir is reused. ``down`` stops exactly the processes ``up``
recorded, by pid and start time (so a recycled pid is never killed), and removes their state.

``down`` and ``status`` need only the standard library; ``up`` also needs ``cryptography`` (the PKI).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HACK = Path(__file__).resolve().parent
REPO = HACK.parent
DEFAULT_STATE = REPO / ".dev"
STATE_FILE = "cluster.json"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
# Each kwok node's kubelet directory and CSI node service live here (make up --fluid).
NODES_DIR = "nodes"
# The test bed's real Curvine (hack/curvinecluster.py) and the CSI controller's own FUSE mounts.
CURVINE_DIR = "curvine"
CSI_CONTROLLER_DIR = "csi-controller"
# Stopped after the FUSE processes that use them are gone (an unmount needs the master), the worker
# first and at once: it ignores SIGTERM once the master is gone.
CURVINE_PROCS = ("curvine-worker", "curvine-master")
SERVICE_CIDR = "10.96.0.0/16"
# The API server's /etc/hosts (see private_hosts); real nodes' names are added to it.
HOSTS_FILE = "hosts"
# Marks a state dir whose cluster is shaped as a user's (hack/userscluster.py: make demo's).
USERS_CLUSTER_MARKER = "users-cluster"
# Anything a later issue adds to the cluster (controller, webhook, CSI) is recorded beside these and
# stops with the API server's other clients, before the API server and etcd.
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def log(msg: str) -> None:
    print(f"[localcluster] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes recorded by pid


def proc_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing paren.
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass
class Proc:
    name: str
    pid: int
    start_time: str

    def alive(self) -> bool:
        return proc_start_time(self.pid) == self.start_time


@dataclass
class Cluster:
    state_dir: Path
    bin_dir: str = ""
    etcd_data_dir: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.state_dir / "pki"

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def save(self) -> None:
        data = {
            "binDir": self.bin_dir,
            "etcdDataDir": self.etcd_data_dir,
            "ports": self.ports,
            "nodes": self.nodes,
            "processes": [p.__dict__ for p in self.procs],
        }
        tmp = self.state_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.state_dir / STATE_FILE)

    @classmethod
    def load(cls, state_dir: Path) -> Cluster | None:
        try:
            data = json.loads((state_dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        return cls(
            state_dir=state_dir,
            bin_dir=data["binDir"],
            etcd_data_dir=data["etcdDataDir"],
            ports=data["ports"],
            nodes=data.get("nodes", []),
            procs=[Proc(**p) for p in data["processes"]],
        )


def start(cluster: Cluster, name: str, argv: list[str], env: dict[str, str] | None = None) -> Proc:
    cluster.logs.mkdir(parents=True, exist_ok=True)
    with open(cluster.logs / f"{name}.log", "wb") as out:
        # A session of its own: the process outlives `make up` and ignores the terminal's Ctrl-C.
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if env is None else {**os.environ, **env},
        )
    started = proc_start_time(child.pid)
    if started is None:
        raise SystemExit(f"error: {name} exited at once; see {cluster.logs / (name + '.log')}")
    proc = Proc(name, child.pid, started)
    cluster.procs.append(proc)
    cluster.save()  # recorded at once, so `down` can stop it even if `up` fails later
    return proc


def stop(procs: list[Proc], grace: float = 15.0) -> None:
    """SIGTERM to all of ``procs`` at once, then wait; SIGKILL whatever outlives ``grace``."""
    live = [p for p in procs if p.alive()]
    for proc in live:
        log(f"stopping {proc.name} (pid {proc.pid})")
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        for proc in live:
            _reap(proc.pid)
        live = [p for p in live if p.alive()]
        time.sleep(0.05)
    for proc in live:
        log(f"{proc.name} (pid {proc.pid}) ignored SIGTERM for {grace:.0f}s; killing it")
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    while live:
        for proc in live:
            _reap(proc.pid)
        live = [p for p in live if p.alive()]
        time.sleep(0.05)


def _reap(pid: int) -> None:
    # Our own children (when `up` and `down` run in one process, as in tests) stay zombies until reaped.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


# ---------------------------------------------------------------- ports, PKI, kubeconfig


def free_ports(names: list[str]) -> dict[str, int]:
    """Ports the kernel has just handed out, all held open together so no two collide."""
    with contextlib.ExitStack() as stack:
        socks = {}
        for name in names:
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            socks[name] = s
        return {name: s.getsockname()[1] for name, s in socks.items()}


def _validity() -> tuple[Any, Any]:
    import datetime

    now = datetime.datetime.now(datetime.UTC)
    return now - datetime.timedelta(hours=1), now + datetime.timedelta(days=365)


def _key_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def _name(cn: str, org: str | None = None) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(subject: Any, issuer: Any, public_key: Any) -> Any:
    """A certificate valid from an hour ago for a year, with a fresh serial."""
    from cryptography import x509

    valid = _validity()
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
    )


def sign_leaf(
    pki: Path, cn: str, org: str | None, server: bool = False, sans: list[Any] | None = None
) -> tuple[bytes, bytes]:
    """A certificate and key (PEM) for ``cn``/``org`` signed by the cluster CA in ``pki``: a client
    certificate (the API server maps CN to the user, O to groups), or a serving one with ``sans``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(_name(cn, org), ca.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def write_pki(pki: Path) -> None:
    """CA, API server serving cert, admin client cert (system:masters), the API server's client cert
    for kubelets, and the service-account key pair. EC P-256 keys: generated in milliseconds,
    accepted by every Kubernetes component."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pki.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("kubectl-fluid-local-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    files = {"ca.crt": ca.public_bytes(serialization.Encoding.PEM), "ca.key": _key_pem(ca_key)}
    for fname in ("ca.crt", "ca.key"):
        (pki / fname).write_bytes(files[fname])
    server_sans: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("10.96.0.1")),
        *(
            x509.DNSName(d)
            for d in (
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            )
        ),
    ]
    files["apiserver.crt"], files["apiserver.key"] = sign_leaf(
        pki, "kube-apiserver", None, server=True, sans=server_sans
    )
    files["admin.crt"], files["admin.key"] = sign_leaf(pki, "kubectl-fluid-admin", "system:masters")
    # kubectl exec/logs/port-forward: the API server calls a real node's kubelet as this user.
    files["apiserver-kubelet-client.crt"], files["apiserver-kubelet-client.key"] = sign_leaf(
        pki, "kube-apiserver-kubelet-client", "system:masters"
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())
    files["sa.key"] = _key_pem(sa_key)
    files["sa.pub"] = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    for fname, data in files.items():
        path = pki / fname
        path.write_bytes(data)
        path.chmod(0o600 if fname.endswith(".key") else 0o644)


def write_kubeconfig(cluster: Cluster) -> None:
    pki = cluster.pki
    # JSON is valid YAML; every client (kubectl, kr8s, the official client) reads it.
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kubectl-fluid-local",
                "cluster": {"server": cluster.server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "kubectl-fluid-admin",
                "user": {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": "kubectl-fluid-local",
                "context": {"cluster": "kubectl-fluid-local", "user": "kubectl-fluid-admin"},
            }
        ],
        "current-context": "kubectl-fluid-local",
    }
    cluster.kubeconfig.write_text(json.dumps(config, indent=2) + "\n")
    cluster.kubeconfig.chmod(0o600)


# ---------------------------------------------------------------- talking to the API server


def api(
    cluster: Cluster, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 5.0
) -> tuple[int, dict[str, Any]]:
    ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
    ctx.load_cert_chain(str(cluster.pki / "admin.crt"), str(cluster.pki / "admin.key"))
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(cluster.server + path, data=data, method=method)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw) if raw else {}
    except ValueError:
        return status, {"raw": raw.decode(errors="replace")}


def wait_for(what: str, check: Any, cluster: Cluster, timeout: float, watch: list[str]) -> None:
    """Poll ``check()`` until true; fail early, naming the log to read, when a process dies."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, ssl.SSLError, ValueError):
            if check():
                return
        for p in cluster.procs:
            if p.name in watch and not p.alive():
                raise SystemExit(
                    f"error: {p.name} exited while waiting for {what}; see {cluster.logs / (p.name + '.log')}"
                )
        if time.monotonic() > deadline:
            raise SystemExit(
                f"error: timed out after {timeout:.0f}s waiting for {what}; logs in {cluster.logs}"
            )
        time.sleep(0.1)


def healthz(port: int) -> bool:
    # The health endpoints of the controller-manager and scheduler are served without authentication.
    ctx = ssl._create_unverified_context()
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=2) as r:
        return bool(r.status == 200)


def node_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        },
    }


def nodes_ready(cluster: Cluster) -> bool:
    status, body = api(cluster, "GET", "/api/v1/nodes")
    if status != 200:
        return False
    ready = {
        n["metadata"]["name"]
        for n in body.get("items", [])
        for c in n.get("status", {}).get("conditions", [])
        if c.get("type") == "Ready" and c.get("status") == "True"
    }
    return set(cluster.nodes) <= ready


# ---------------------------------------------------------------- up / down / status


def build_bins() -> str:
    out = subprocess.run(
        ["bash", str(HACK / "build-bins.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit("error: building the control plane failed (see the lines above)")
    return out.stdout.strip().splitlines()[-1]


def healthy(cluster: Cluster) -> bool:
    # The control plane only: a project process that died is started again by its own `ensure`.
    plane = [p for p in cluster.procs if p.name in CONTROL_PLANE]
    if len(plane) != len(CONTROL_PLANE) or not all(p.alive() for p in plane):
        return False
    try:
        status, _ = api(cluster, "GET", "/readyz", timeout=2)
    except (OSError, ssl.SSLError):
        return False
    return status == 200


def up(state_dir: Path, n_nodes: int, bin_dir: str | None) -> Cluster:
    t0 = time.monotonic()
    existing = Cluster.load(state_dir)
    if existing is not None:
        if healthy(existing):
            log(f"cluster already running at {existing.server}; KUBECONFIG={existing.kubeconfig}")
            return existing
        log("a previous cluster in this state dir is not healthy; stopping what is left of it")
        down(state_dir)

    bins = bin_dir or build_bins()
    state_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("pki", "logs"):
        shutil.rmtree(state_dir / stale, ignore_errors=True)
    (state_dir / HOSTS_FILE).unlink(missing_ok=True)
    cluster = Cluster(
        state_dir=state_dir,
        bin_dir=bins,
        etcd_data_dir=tempfile.mkdtemp(prefix="kubectl-fluid-etcd-"),
        ports=free_ports(["etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok"]),
        nodes=[f"kwok-node-{i}" for i in range(n_nodes)],
    )
    cluster.save()
    try:
        _start_control_plane(cluster)
    except BaseException:
        down(state_dir)
        raise
    log(f"ready in {time.monotonic() - t0:.1f}s: {len(cluster.nodes)} nodes; KUBECONFIG={cluster.kubeconfig}")
    return cluster


def _start_control_plane(cluster: Cluster) -> None:
    b, pki, p, kc = Path(cluster.bin_dir), cluster.pki, cluster.ports, str(cluster.kubeconfig)
    write_pki(pki)
    write_kubeconfig(cluster)
    _start_storage(cluster)

    auth = [f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}"]
    log("starting kube-controller-manager, kube-scheduler, kwok")
    start(
        cluster,
        "kube-controller-manager",
        [
            str(b / "kube-controller-manager"),
            *auth,
            "--bind-address=127.0.0.1",
            f"--secure-port={p['controller-manager']}",
            "--leader-elect=false",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
        ],
    )
    start(
        cluster,
        "kube-scheduler",
        [
            str(b / "kube-scheduler"),
            *auth,
            "--bind-address=127.0.0.1",
            f"--secure-port={p['scheduler']}",
            "--leader-elect=false",
        ],
    )
    start(
        cluster,
        "kwok",
        [
            str(b / "kwok"),
            f"--kubeconfig={kc}",
            f"--config={b / 'stages.yaml'}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}=fake",
            "--manage-nodes-with-label-selector=",
            "--manage-single-node=",
            "--cidr=10.244.0.0/16",
            "--node-ip=10.240.0.10",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{p['kwok']}",
        ],
    )
    for node in cluster.nodes:
        status, body = api(cluster, "POST", "/api/v1/nodes", node_manifest(node))
        if status not in (201, 409):
            raise SystemExit(f"error: creating node {node}: HTTP {status}: {body.get('message', body)}")
    everything = list(CONTROL_PLANE)
    wait_for(
        "kube-controller-manager /healthz", lambda: healthz(p["controller-manager"]), cluster, 60, everything
    )
    wait_for("kube-scheduler /healthz", lambda: healthz(p["scheduler"]), cluster, 60, everything)
    wait_for(f"{len(cluster.nodes)} kwok nodes Ready", lambda: nodes_ready(cluster), cluster, 60, everything)


def _start_storage(cluster: Cluster) -> None:
    """etcd, then kube-apiserver, each waited for: at the first start, and again after ``restart_storage``."""
    b, pki, p = Path(cluster.bin_dir), cluster.pki, cluster.ports
    etcd_url = f"http://127.0.0.1:{p['etcd']}"
    peer_url = f"http://127.0.0.1:{p['etcd-peer']}"
    log("starting etcd")
    start(
        cluster,
        "etcd",
        [
            str(b / "etcd"),
            "--name=local",
            f"--data-dir={cluster.etcd_data_dir}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=local={peer_url}",
            "--listen-metrics-urls=",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )

    def etcd_ok() -> bool:
        with urllib.request.urlopen(f"{etcd_url}/health", timeout=2) as r:
            return bool(json.loads(r.read()).get("health") == "true")

    wait_for("etcd", etcd_ok, cluster, 30, ["etcd"])

    log("starting kube-apiserver")
    start(
        cluster,
        "kube-apiserver",
        [
            *private_hosts(cluster),
            str(b / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={p['apiserver']}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            # The kubernetes Service cannot point at a loopback address; a real node's pods reach it
            # through that node's own DNAT rule instead (realnode.service_rules).
            "--endpoint-reconciler-type=none",
            # Webhooks and aggregated APIs behind a Service are called at its endpoints (a pod's IP on
            # a real node's bridge, which this host routes), not at its ClusterIP: no kube-proxy here.
            "--enable-aggregator-routing=true",
            # "410 Gone" for an old resourceVersion, which watchers must survive in production, on
            # demand in tests: etcd compacts every 10 s (default 5 min), and PodTemplates (which
            # the product never uses) are watched straight from etcd, without the API server's
            # watch cache that would otherwise answer old versions from memory.
            "--etcd-compaction-interval=10s",
            "--watch-cache-sizes=podtemplates#0",
        ],
    )
    wait_for(
        "kube-apiserver /readyz",
        lambda: api(cluster, "GET", "/readyz", timeout=2)[0] == 200,
        cluster,
        60,
        ["etcd", "kube-apiserver"],
    )


def private_hosts(cluster: Cluster) -> list[str]:
    """The prefix that runs a command in a mount namespace of its own, where /etc/hosts is
    ``{state}/hosts``: the host's entries, to which a real node adds its name (the API server dials a
    kubelet by the node's hostname for exec and logs; the host's /etc/hosts is never edited)."""
    hosts = cluster.state_dir / HOSTS_FILE
    if not hosts.exists():  # kept across restart_storage, with the names real nodes added
        hosts.write_text(Path("/etc/hosts").read_text())
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts)]  # fmt: skip


def restart_storage(cluster: Cluster) -> None:
    """Stop kube-apiserver and etcd (SIGTERM, as ``down`` does) and start them again on the same ports
    and the same etcd data: what a control-plane upgrade or a node reboot does to every client. The
    fault tests use it to check that the product's processes reconnect on their own."""
    storage = ("kube-apiserver", "etcd")
    for name in storage:
        stop([p for p in cluster.procs if p.name == name])
    cluster.procs = [p for p in cluster.procs if p.name not in storage]
    cluster.save()
    _start_storage(cluster)


def down(state_dir: Path) -> None:
    cluster = Cluster.load(state_dir)
    if cluster is None:
        log(f"no cluster recorded in {state_dir}")
        return
    # Real nodes first: their containers are stopped through their own runtime, which must be up.
    import realnode

    realnode.stop_all(cluster)
    # Clients of the API server first, together (each takes ~2 s to shut down gracefully); then the API
    # server, which waits on etcd while shutting down if etcd goes at the same time; then etcd.
    storage = ("kube-apiserver", "etcd")
    stop([p for p in cluster.procs if p.name not in (*storage, *CURVINE_PROCS)])
    release_node_mounts(state_dir / NODES_DIR)
    release_node_mounts(state_dir / CSI_CONTROLLER_DIR)
    for name in CURVINE_PROCS:
        stop([p for p in cluster.procs if p.name == name], grace=0 if name == "curvine-worker" else 15)
    shutil.rmtree(state_dir / CURVINE_DIR, ignore_errors=True)
    for name in storage:
        stop([p for p in cluster.procs if p.name == name])
    if cluster.etcd_data_dir:
        shutil.rmtree(cluster.etcd_data_dir, ignore_errors=True)
    shutil.rmtree(cluster.pki, ignore_errors=True)
    cluster.kubeconfig.unlink(missing_ok=True)
    (state_dir / HOSTS_FILE).unlink(missing_ok=True)
    # Logs stay for post-mortems; the next `up` replaces them.
    (state_dir / STATE_FILE).unlink(missing_ok=True)
    (state_dir / USERS_CLUSTER_MARKER).unlink(missing_ok=True)
    log("stopped")


def release_node_mounts(root: Path) -> None:
    """The CSI node services' FUSE processes outlive them by design (a restarted node service adopts
    them): once those are stopped for good, stop the FUSE processes serving under ``root`` and
    unmount everything left there, deepest first, and ``root`` if it is a mount, then remove it."""
    if not root.exists():
        return
    prefix = str(root.resolve()) + "/"
    fuse = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if prefix.encode() in (entry / "cmdline").read_bytes():
                    fuse.append(int(entry.name))
    for pid in fuse:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while fuse and time.monotonic() < deadline:
        for pid in fuse:
            _reap(pid)
        fuse = [pid for pid in fuse if Path(f"/proc/{pid}").exists()]
        time.sleep(0.05)
    for pid in fuse:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with open("/proc/self/mountinfo") as table:
        points = [line.split()[4] for line in table]
    # ``root`` itself last: a real node's folder is a shared mount of its own (realnode._share_root).
    inside = [p for p in points if p.startswith(prefix) or p == prefix[:-1]]
    for point in sorted(inside, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def status(state_dir: Path) -> int:
    cluster = Cluster.load(state_dir)
    if cluster is None:
        print(f"no cluster recorded in {state_dir}")
        return 1
    for proc in cluster.procs:
        print(f"{proc.name:<26} pid {proc.pid:<8} {'running' if proc.alive() else 'GONE'}")
    ok = healthy(cluster)
    print(f"api server {cluster.server}: {'ready' if ok else 'NOT READY'}")
    print(f"KUBECONFIG={cluster.kubeconfig}")
    return 0 if ok else 1


@contextlib.contextmanager
def running(state_dir: Path, n_nodes: int = 2) -> Iterator[Cluster]:
    """A cluster for the length of a ``with`` block (the e2e fixture's private cluster)."""
    cluster = up(state_dir, n_nodes, None)
    try:
        yield cluster
    finally:
        down(state_dir)


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """One ``up``/``down`` at a time per state dir: two ``make up`` at once must still give one cluster."""
    import fcntl

    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument(
        "--state-dir", type=Path, default=Path(os.environ.get("LOCALCLUSTER_STATE", DEFAULT_STATE))
    )
    parser.add_argument("--nodes", type=int, default=int(os.environ.get("LOCALCLUSTER_NODES", "2")))
    parser.add_argument(
        "--real-nodes",
        type=int,
        default=int(os.environ.get("LOCALCLUSTER_REAL_NODES", "0")),
        help="real kubelet nodes (containerd, runc) beside the kwok ones (hack/realnode.py)",
    )
    parser.add_argument("--bin-dir", help="use these binaries instead of building/looking up the cache")
    parser.add_argument(
        "--fluid", action="store_true", help="also install the product and run its processes (make up)"
    )
    args = parser.parse_args(argv)
    state_dir = args.state_dir.resolve()
    if args.command == "status":
        return status(state_dir)
    with locked(state_dir):
        if args.command == "up":
            if (state_dir / USERS_CLUSTER_MARKER).exists() and Cluster.load(state_dir) is not None:
                raise SystemExit(
                    f"error: {state_dir} holds the cluster `make demo` started (the product deployed "
                    f"from its manifests on a real node); stop it with `make down STATE={state_dir}`, "
                    "or give this one another STATE"
                )
            cluster = up(state_dir, args.nodes, args.bin_dir)
            import realnode

            realnode.ensure(cluster, args.real_nodes)
            if args.fluid:
                import fluidprocs

                fluidprocs.ensure_controller(cluster)
                fluidprocs.ensure_webhook(cluster)
                layout = fluidprocs.ensure_curvine(cluster)
                fluidprocs.ensure_csi_nodes(cluster, layout)
                fluidprocs.ensure_csi_controller(cluster, layout)
        else:
            down(state_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
