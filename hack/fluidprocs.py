"""The project's own processes on the local cluster (``make up``): CRDs, RBAC and the sample
CacheRuntimeClasses applied from manifests/, then the controller as a local process that
authenticates as its ServiceAccount, recorded beside the control plane so ``make down`` stops it.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from localcluster import REPO, Cluster, api, free_ports, log, start, wait_for

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


def ready(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
        return bool(r.status == 200)


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
