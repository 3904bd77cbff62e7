"""The project's own processes on the local cluster (``make up``): CRDs, RBAC and the sample
CacheRuntimeClasses applied from manifests/, then the controller and the webhook as local processes
that authenticate as their ServiceAccounts, recorded beside the control plane so ``make down`` stops
them.
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
    kubectl(cluster, "apply", "-f", str(MANIFESTS / "webhook" / "rbac.yaml"))
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


def ready(port: int, ca: Path | None = None) -> bool:
    scheme = "https" if ca else "http"
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}/readyz", timeout=2, context=context) as r:
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


def ensure_webhook(cluster: Cluster) -> None:
    """fluid-webhook on 127.0.0.1 with a bootstrapped certificate, and the manifest's
    MutatingWebhookConfiguration registered with ``url:`` to it (no Service routes here)."""
    name = "fluid-webhook"
    if any(p.name == name and p.alive() for p in cluster.procs):
        return
    cluster.procs = [p for p in cluster.procs if p.name != name]
    kubeconfig = service_account_kubeconfig(cluster, "fluid-webhook")
    port = free_ports([name])[name]
    cluster.ports[name] = port
    cert_dir = cluster.state_dir / "webhook-certs"
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
