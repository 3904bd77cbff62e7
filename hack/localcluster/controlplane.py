"""The control plane as local processes on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok (kwoknodes.py), from the Go binaries hack/build-bins.sh builds and caches.

It knows nothing of real nodes or the product: lifecycle.py composes them (up, down), and real nodes
and the product build on the ``Cluster`` it starts.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.request
from pathlib import Path

from localcluster import kwoknodes
from localcluster import pki as pki_files
from localcluster.state import HACK, HOSTS_FILE, Cluster, api, log, start, stop, wait_for

SERVICE_CIDR = "10.96.0.0/16"
# Anything a later issue adds to the cluster (controller, webhook, CSI) is recorded beside these and
# stops with the API server's other clients, before the API server and etcd.
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def build_bins(kwok: bool = True) -> str:
    """The control plane's binaries (with kwok when the cluster has kwok nodes): only what runs."""
    mode = "cluster-kwok" if kwok else "cluster"
    out = subprocess.run(
        ["bash", str(HACK / "build-bins.sh"), mode], stdout=subprocess.PIPE, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit("error: building the control plane failed (see the lines above)")
    return out.stdout.strip().splitlines()[-1]


def control_plane(cluster: Cluster) -> tuple[str, ...]:
    """The processes of ``cluster``'s control plane: kwok only where it has kwok nodes (a user's shape
    of cluster, real nodes alone, has no use for it)."""
    return CONTROL_PLANE if cluster.nodes else tuple(n for n in CONTROL_PLANE if n != "kwok")


def healthy(cluster: Cluster) -> bool:
    # The control plane only: a project process that died is started again by its own `ensure`.
    expected = control_plane(cluster)
    plane = [p for p in cluster.procs if p.name in expected]
    if len(plane) != len(expected) or not all(p.alive() for p in plane):
        return False
    try:
        status, _ = api(cluster, "GET", "/readyz", timeout=2)
    except (OSError, ssl.SSLError):
        return False
    return status == 200


def healthz(port: int) -> bool:
    # The health endpoints of the controller-manager and scheduler are served without authentication.
    ctx = ssl._create_unverified_context()
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=2) as r:
        return bool(r.status == 200)


def start_control_plane(cluster: Cluster) -> None:
    """PKI, kubeconfig, etcd and kube-apiserver, then kube-controller-manager, kube-scheduler, kwok and
    the kwok nodes, each waited for."""
    b, pki, p, kc = Path(cluster.bin_dir), cluster.pki, cluster.ports, str(cluster.kubeconfig)
    pki_files.write_pki(pki)
    pki_files.write_kubeconfig(cluster)
    start_storage(cluster)

    auth = [f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}"]
    log(f"starting {', '.join(control_plane(cluster)[2:])}")
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
    if cluster.nodes:
        kwoknodes.start_kwok(cluster)
        kwoknodes.create(cluster)
    everything = list(control_plane(cluster))
    wait_for(
        "kube-controller-manager /healthz", lambda: healthz(p["controller-manager"]), cluster, 60, everything
    )
    wait_for("kube-scheduler /healthz", lambda: healthz(p["scheduler"]), cluster, 60, everything)
    wait_for(
        f"{len(cluster.nodes)} kwok nodes Ready", lambda: kwoknodes.ready(cluster), cluster, 60, everything
    )


def start_storage(cluster: Cluster) -> None:
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
            # through that node's own DNAT rule instead (realnodes.service_rules).
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
    start_storage(cluster)
