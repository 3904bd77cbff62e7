"""The product as local processes on the local cluster (``make up``): CRDs, RBAC and the sample
CacheRuntimeClasses applied from manifests/, then the controller and the webhook as local processes
that authenticate as their ServiceAccounts, recorded beside the control plane so ``make down`` stops
them.

The FUSE path runs on a real single-node Curvine (peers/curvinecluster.py: master and worker on free
loopback ports, ready once written to) when its binaries are there (peers/curvinebins.py: the test
peer folder or the cache); the CSI node services then start the real curvine-fuse and the CSI
controller makes volume directories in Curvine itself. Without them it runs the development
stand-in, and says so.

Curvine runs as local processes of the test bed, not as the ``curvine`` CacheRuntime's component
pods: the sample class's pods render their configuration with gomplate in an init container and
start through the Curvine image's /entrypoint.sh, neither of which exists on this machine, and kwok
nodes run no containers.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from kubectl_fluid.api import names as fluid_names
from localcluster import realnodes
from localcluster.peers import curvinebins, curvinecluster
from localcluster.state import (
    CSI_CONTROLLER_DIR,
    CURVINE_DIR,
    CURVINE_PROCS,
    NODES_DIR,
    REPO,
    Cluster,
    api,
    free_ports,
    log,
    pythonpath_with_hack,
    start,
    stop,
    wait_for,
)

MANIFESTS = REPO / "manifests"
NAMESPACE = "fluid-system"
SERVICE_ACCOUNT = "fluid-controller"


def kubectl(cluster: Cluster, *args: str) -> None:
    run = subprocess.run(
        [str(Path(cluster.bin_dir) / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise SystemExit(f"error: kubectl {' '.join(args)}: {run.stderr.strip()}")


def install(cluster: Cluster) -> None:
    kubectl(cluster, "apply", "--server-side", "--force-conflicts", "-f", str(MANIFESTS / "crds"))
    kubectl(cluster, "wait", "--for=condition=Established", "--timeout=60s", "-f", str(MANIFESTS / "crds"))
    kubectl(cluster, "apply", "-f", str(MANIFESTS / "namespace.yaml"))
    kubectl(cluster, "apply", "-f", str(MANIFESTS / "controller" / "rbac.yaml"))
    kubectl(cluster, "apply", "-f", str(MANIFESTS / "webhook" / "rbac.yaml"))
    kubectl(cluster, "apply", "-f", str(MANIFESTS / "csi" / "csidriver.yaml"))
    kubectl(cluster, "apply", "-f", str(MANIFESTS / "csi" / "rbac.yaml"))
    for sample in ("cacheruntimeclass-mooncake.yaml", "cacheruntimeclass-curvine.yaml"):
        kubectl(cluster, "apply", "-f", str(MANIFESTS / "samples" / sample))


def service_account_kubeconfig(cluster: Cluster, account: str) -> Path:
    path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{account}/token"
    status, body = 0, dict[str, Any]()
    for _ in range(100):  # the ServiceAccount was applied a moment ago
        status, body = api(cluster, "POST", path, {"spec": {"expirationSeconds": 7 * 24 * 3600}})
        if status == 201:
            break
        time.sleep(0.1)
    if status != 201:
        raise SystemExit(f"error: no token for ServiceAccount {NAMESPACE}/{account}: HTTP {status} {body}")
    out = cluster.state_dir / f"{account}.kubeconfig"
    ca = base64.b64encode((cluster.pki / "ca.crt").read_bytes()).decode()
    out.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "local", "cluster": {"server": cluster.server, "certificate-authority-data": ca}}
                ],
                "users": [{"name": account, "user": {"token": body["status"]["token"]}}],
                "contexts": [{"name": "local", "context": {"cluster": "local", "user": account}}],
                "current-context": "local",
            }
        )
    )
    out.chmod(0o600)
    return out


def ready(port: int, ca: Path | None = None, path: str = "/readyz", timeout: float = 2) -> bool:
    scheme = "https" if ca else "http"
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}{path}", timeout=timeout, context=context) as r:
        return bool(r.status == 200)


def answers_healthz(port: int | None, ca: Path) -> bool:
    """A live process can still be wedged (its event loop stuck): only /healthz tells."""
    try:
        return port is not None and ready(port, ca, "/healthz", timeout=3)
    except (OSError, ValueError):  # refused, timed out, 503 (urllib's HTTPError is an OSError)
        return False


def ensure_controller(cluster: Cluster) -> None:
    running = [p for p in cluster.procs if p.name == "fluid-controller" and p.alive()]
    if running:
        return
    cluster.procs = [p for p in cluster.procs if p.name != "fluid-controller"]
    install(cluster)
    kubeconfig = service_account_kubeconfig(cluster, SERVICE_ACCOUNT)
    port = free_ports(["fluid-controller"])["fluid-controller"]
    cluster.ports["fluid-controller"] = port
    log(f"starting fluid-controller (/healthz /readyz /metrics on 127.0.0.1:{port})")
    start(
        cluster,
        "fluid-controller",
        [
            sys.executable,
            "-m",
            "controller.main",
            f"--kubeconfig={kubeconfig}",
            "--leader-elect",
            f"--lease-namespace={NAMESPACE}",
            "--identity=local-0",
            "--health-host=127.0.0.1",
            f"--health-port={port}",
        ],
    )
    wait_for("fluid-controller /readyz", lambda: ready(port), cluster, 30, ["fluid-controller"])


def ensure_webhook(cluster: Cluster) -> None:
    """fluid-webhook on 127.0.0.1 with a bootstrapped certificate, and the manifest's
    MutatingWebhookConfiguration registered with ``url:`` to it (no Service routes here)."""
    name = "fluid-webhook"
    cert_dir = cluster.state_dir / "webhook-certs"
    running = [p for p in cluster.procs if p.name == name and p.alive()]
    if running and answers_healthz(cluster.ports.get(name), cert_dir / "ca.crt"):
        return
    if running:
        log(f"{name} runs but does not answer /healthz: restarting it")
        stop(running, grace=5)
    cluster.procs = [p for p in cluster.procs if p.name != name]
    kubeconfig = service_account_kubeconfig(cluster, "fluid-webhook")
    port = free_ports([name])[name]
    cluster.ports[name] = port
    log(f"starting fluid-webhook (https://127.0.0.1:{port})")
    start(
        cluster,
        name,
        [
            sys.executable,
            "-m",
            "webhook.main",
            f"--kubeconfig={kubeconfig}",
            "--host=127.0.0.1",
            f"--port={port}",
            f"--cert-dir={cert_dir}",
            "--bootstrap-certs",
            f"--namespace={NAMESPACE}",
            "--ip-san=127.0.0.1",
            # One process: the /healthz check above judges the one it reaches, and a stalled worker
            # among N would pass it half the time (in a pod the kubelet's probes and the supervisor
            # share that work; tests/e2e/test_webhook_workers.py runs N).
            "--workers=1",
        ],
    )
    config = yaml.safe_load((MANIFESTS / "webhook" / "mutatingwebhookconfiguration.yaml").read_text())
    for hook in config["webhooks"]:
        path = hook["clientConfig"]["service"]["path"]
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}"}
    wait_for("fluid-webhook certificates", (cert_dir / "ca.crt").exists, cluster, 30, [name])
    apply_json(cluster, config)
    wait_for("fluid-webhook /readyz", lambda: ready(port, cert_dir / "ca.crt"), cluster, 30, [name])


def apply_json(cluster: Cluster, obj: dict[str, Any]) -> None:
    run = subprocess.run(
        [str(Path(cluster.bin_dir) / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", "apply", "-f", "-"],
        input=json.dumps(obj),
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise SystemExit(f"error: kubectl apply: {run.stderr.strip()}")


def curvine_layout(cluster: Cluster) -> curvinecluster.Layout | None:
    """The test bed's Curvine, None when its binaries are not there (the FUSE path runs the stand-in)."""
    bins = curvinebins.find()
    return None if bins is None else curvinecluster.Layout(cluster.state_dir / CURVINE_DIR, bins)


def ensure_curvine(cluster: Cluster) -> curvinecluster.Layout | None:
    """A single-node Curvine, master then worker, ready once a probe FUSE could write to it. Kept
    when both run; otherwise started afresh on the configuration it had (same ports, same data)."""
    layout = curvine_layout(cluster)
    if layout is None:
        log(f"no real Curvine ({curvinebins.peer_dir()} has no binaries): the FUSE path runs the stand-in")
        return None
    if all(any(p.name == n and p.alive() for p in cluster.procs) for n in CURVINE_PROCS):
        return layout
    stop([p for p in cluster.procs if p.name in CURVINE_PROCS], grace=0)
    cluster.procs = [p for p in cluster.procs if p.name not in CURVINE_PROCS]
    if not layout.config.exists():
        layout.write()
    master_port = int(layout.master_addrs().rsplit(":", 1)[1])
    cluster.ports["curvine-master"] = master_port
    log(f"starting curvine-master ({layout.master_addrs()}) and curvine-worker ({layout.bins})")
    master = start(cluster, "curvine-master", layout.server_argv("master"))
    curvinecluster.wait_rpc(master_port, master.alive, "curvine-master")
    worker = start(cluster, "curvine-worker", layout.server_argv("worker"))
    took = curvinecluster.wait_writable(layout, lambda: master.alive() and worker.alive())
    log(f"Curvine written to {took:.1f}s after its probe FUSE started")
    return layout


def restart_curvine_master(cluster: Cluster, layout: curvinecluster.Layout) -> None:
    """The master alone stopped and started again on its configuration (its port, its journal), the
    worker left running: a master's restart as its clients see it."""
    master = [p for p in cluster.procs if p.name == "curvine-master"]
    stop(master)
    cluster.procs = [p for p in cluster.procs if p not in master]
    started = start(cluster, "curvine-master", layout.server_argv("master"))
    curvinecluster.wait_rpc(int(layout.master_addrs().rsplit(":", 1)[1]), started.alive, "curvine-master")


def fuse_program(layout: curvinecluster.Layout | None) -> list[str]:
    """The CSI driver's FUSE flags: the real curvine-fuse with the nodes' settings, or the stand-in."""
    if layout is None:
        return [f"--fuse-binary={sys.executable} -m csi.standin.fusestandin"]
    return [f"--fuse-binary={layout.fuse}", f"--fuse-config={layout.node_settings}"]


def ensure_csi_nodes(cluster: Cluster, layout: curvinecluster.Layout | None = None) -> None:
    """A CSI node service per kwok node (as the node DaemonSet's ServiceAccount) and the kubelet
    stand-in making kubelet's calls to them. Each node gets a kubelet directory of its own under
    ``.dev/nodes/{node}``. Their FUSE is the real curvine-fuse of ``layout``; without one, the
    stand-in, whose data, shared by all nodes as a cache cluster's would be, is
    ``.dev/curvine-data/{cluster-id}``."""
    names = [f"fluid-csi-{node}" for node in cluster.nodes]
    standin = "kubelet-standin"
    alive = {p.name for p in cluster.procs if p.alive()}
    if all(n in alive for n in [*names, standin]):
        return
    # A node service must not run twice on one node: stop what is left and start all afresh (the
    # node services recover their mounts from their state files).
    stop([p for p in cluster.procs if p.name in [*names, standin]])
    cluster.procs = [p for p in cluster.procs if p.name not in [*names, standin]]
    kubeconfig = service_account_kubeconfig(cluster, "fluid-csi-node")
    data = cluster.state_dir / "curvine-data"
    data.mkdir(parents=True, exist_ok=True)
    node_args = []
    for node, name in zip(cluster.nodes, names, strict=True):
        root = cluster.state_dir / NODES_DIR / node
        root.mkdir(parents=True, exist_ok=True)
        socket = root / "csi.sock"
        kubelet_root = root / "kubelet"
        port = free_ports([name])[name]
        cluster.ports[name] = port
        log(f"starting {name} (unix://{socket}, /readyz on 127.0.0.1:{port})")
        start(
            cluster,
            name,
            [
                sys.executable,
                "-m",
                "csi.main",
                "--mode=node",
                f"--endpoint=unix://{socket}",
                # The kubelet stand-in is handed the socket below; no kubelet is to find the driver.
                "--no-registration",
                f"--node-id={node}",
                f"--state-dir={root / 'state'}",
                f"--mount-root={kubelet_root / 'plugins'}",
                *fuse_program(layout),
                # Named, not left to the default: node services run here as host processes, where an
                # embedded FUSE outlives a restart (the manifests run standalone, for containers).
                "--mount-mode=embedded",
                f"--kubeconfig={kubeconfig}",
                "--health-host=127.0.0.1",
                f"--health-port={port}",
            ],
            env={"CURVINE_STANDIN_DATA": str(data)},
        )
        node_args.append(f"--node={node}={socket}={kubelet_root}")
    for name in names:
        port = cluster.ports[name]
        wait_for(f"{name} /readyz", lambda port=port: ready(port), cluster, 30, [name])
    log("starting kubelet-standin (kubelet's CSI calls for pods on the kwok nodes)")
    start(
        cluster,
        standin,
        [
            sys.executable,
            "-m",
            "localcluster.kubeletstandin",
            f"--kubeconfig={cluster.kubeconfig}",
            *node_args,
        ],
        env={"PYTHONPATH": pythonpath_with_hack()},
    )
    log_file = cluster.logs / f"{standin}.log"
    wait_for(
        "kubelet-standin ready",
        lambda: "ready" in log_file.read_text().splitlines(),
        cluster,
        30,
        [standin],
    )


def ensure_real_node_csi(cluster: Cluster, layout: curvinecluster.Layout | None = None) -> None:
    """The CSI node service of each real node, a local process as the kwok nodes' are, but run in the
    node's own mount namespace (realnodes.in_node) with the DaemonSet's paths, so it registers with
    the node's kubelet itself and kubelet's calls name paths it can use: a Fluid volume in a real
    container, from the code in this checkout. Embedded FUSE (the same program as the kwok nodes'),
    whose processes ``make down`` stops with the node's namespace."""
    kubeconfig = service_account_kubeconfig(cluster, "fluid-csi-node")
    data = cluster.state_dir / "curvine-data"
    data.mkdir(parents=True, exist_ok=True)
    for node in realnodes.recorded(cluster):
        name = f"fluid-csi-{node.name}"
        if any(p.name == name and p.alive() for p in cluster.procs):
            continue
        stop([p for p in cluster.procs if p.name == name])
        cluster.procs = [p for p in cluster.procs if p.name != name]
        port = free_ports([name])[name]
        cluster.ports[name] = port
        log(f"starting {name} in the node's mount namespace (/readyz on 127.0.0.1:{port})")
        command = [
            sys.executable, "-m", "csi.main", "--mode=node", f"--node-id={node.name}",
            f"--endpoint=unix://{fluid_names.KUBELET_PLUGINS_ROOT}/{fluid_names.CSI_DRIVER}/csi.sock",
            *fuse_program(layout), "--mount-mode=embedded", f"--kubeconfig={kubeconfig}",
            "--health-host=127.0.0.1", f"--health-port={port}",
        ]  # fmt: skip
        env = {"CURVINE_STANDIN_DATA": str(data)}
        start(cluster, name, realnodes.in_node(cluster, node, command), env=env)
        wait_for(f"{name} /readyz", lambda port=port: ready(port), cluster, 30, [name])


def ensure_csi_controller(cluster: Cluster, layout: curvinecluster.Layout | None = None) -> None:
    """``fluid-csi --mode controller`` and the real csi-provisioner beside it (as the controller
    Deployment's ServiceAccount), so PVCs of a ``curvine.csi.fluid.io`` StorageClass get volumes: a
    directory in Curvine (through the controller's own FUSE mount, under ``.dev/csi-controller``),
    or, without Curvine, in ``.dev/curvine-data/{cluster-id}``, which the FUSE stand-ins serve."""
    driver, provisioner = "fluid-csi-controller", "csi-provisioner"
    if all(any(p.name == n and p.alive() for p in cluster.procs) for n in (driver, provisioner)):
        return
    stop([p for p in cluster.procs if p.name in (driver, provisioner)])
    cluster.procs = [p for p in cluster.procs if p.name not in (driver, provisioner)]
    kubeconfig = service_account_kubeconfig(cluster, "fluid-csi-controller")
    root = cluster.state_dir / CSI_CONTROLLER_DIR
    root.mkdir(parents=True, exist_ok=True)
    socket = root / "csi.sock"
    socket.unlink(missing_ok=True)
    log(f"starting {driver} and {provisioner} (unix://{socket})")
    start(
        cluster,
        driver,
        [
            sys.executable,
            "-m",
            "csi.main",
            "--mode=controller",
            f"--endpoint=unix://{socket}",
            *(
                [f"--backend-root={cluster.state_dir / 'curvine-data'}"]
                if layout is None
                else ["--backend=curvine", f"--state-dir={root / 'state'}", f"--kubeconfig={kubeconfig}"]
            ),
            *([] if layout is None else fuse_program(layout)),
        ],
    )
    wait_for(f"{driver} socket", socket.exists, cluster, 30, [driver])
    start(
        cluster,
        provisioner,
        [
            str(Path(cluster.bin_dir) / "csi-provisioner"),
            f"--csi-address={socket}",
            f"--kubeconfig={kubeconfig}",
            "--leader-election=false",
            "--node-deployment=false",
            "--timeout=30s",
        ],
    )
