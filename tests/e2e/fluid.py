"""The product installed into the test cluster the way an operator would: CRDs, namespace and RBAC
from manifests/, and the controller as a local process that authenticates as its ServiceAccount
(a token from the TokenRequest API), so the RBAC in manifests/ is what it really gets."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.wait import eventually

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
# Every test namespace carries it: the steady-state test waits for the others to be gone.
E2E_NAMESPACE_LABEL = "kubectl-fluid.test/e2e"
WEBHOOK_HOST = os.environ.get("E2E_WEBHOOK_HOST", "127.0.0.1")


def kubectl_binary() -> str:
    """$KUBECTL, else the kubectl built with the local control plane, else the one on PATH."""
    if os.environ.get("KUBECTL"):
        return os.environ["KUBECTL"]
    cache = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid"))
    built = sorted(cache.glob("kubernetes-*/kubectl"))
    if built:
        return str(built[-1])
    found = shutil.which("kubectl")
    if not found:
        raise RuntimeError("no kubectl: set KUBECTL or build the local control plane (make bins)")
    return found


# kubectl's own --timeout bounds a wait; the process gets that and this much more to report it.
KUBECTL_GRACE_S = 30
KUBECTL_DEFAULT_DEADLINE_S = 120


def kubectl_deadline(args: tuple[str, ...]) -> float:
    """Seconds to give a kubectl run: past its own ``--timeout=Ns`` (so kubectl, not the test,
    says what it was waiting for), else the default."""
    for arg in args:
        if arg.startswith("--timeout=") and arg.endswith("s") and arg[10:-1].isdigit():
            return int(arg[10:-1]) + KUBECTL_GRACE_S
    return KUBECTL_DEFAULT_DEADLINE_S


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    run = subprocess.run(
        [kubectl_binary(), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=kubectl_deadline(args),
    )
    if run.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {run.stderr.strip()}")
    return run.stdout


def install(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(MANIFESTS / "crds"))
    kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", "-f", str(MANIFESTS / "crds"))
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "namespace.yaml"))
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "controller" / "rbac.yaml"))
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "webhook" / "rbac.yaml"))
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "csi" / "csidriver.yaml"))
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "csi" / "rbac.yaml"))


def service_account_kubeconfig(
    admin: Path,
    core: client.CoreV1Api,
    out: Path,
    account: str = "fluid-controller",
    bound_pod: client.V1Pod | None = None,
) -> Path:
    """A kubeconfig for ServiceAccount fluid-system/{account} on the admin's cluster; with
    ``bound_pod``, its token is bound to that pod, as a pod's own projected token is (the API server
    then names the pod's node in the token's user info)."""
    request: dict[str, Any] = {"spec": {"expirationSeconds": 6 * 3600}}
    if bound_pod is not None:
        ref = {
            "kind": "Pod",
            "apiVersion": "v1",
            "name": bound_pod.metadata.name,
            "uid": bound_pod.metadata.uid,
        }
        request["spec"]["boundObjectRef"] = ref
    token = eventually(
        lambda: core.create_namespaced_service_account_token(account, names.FLUID_NAMESPACE, request),
        f"a token for ServiceAccount {account}",
        timeout=30,
    ).status.token
    cfg = yaml.safe_load(admin.read_text())
    context = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])["context"]
    cluster = next(c for c in cfg["clusters"] if c["name"] == context["cluster"])["cluster"]
    cluster = dict(cluster)
    if "certificate-authority" in cluster:
        ca = Path(cluster.pop("certificate-authority"))
        if not ca.is_absolute():
            ca = admin.parent / ca
        cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    out.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": account, "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": account}}],
                "current-context": "c",
            }
        )
    )
    out.chmod(0o600)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalProcess:
    """A product process the tests run: alive, stopped politely (SIGTERM), or killed (-9)."""

    proc: subprocess.Popen[bytes] | None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()


@dataclass
class ControllerProcess(LocalProcess):
    kubeconfig: Path
    log_dir: Path
    identity: str
    extra: list[str] = field(default_factory=list)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def log(self) -> Path:
        return self.log_dir / f"controller-{self.identity}.log"

    def start(self) -> None:
        self.port = free_port()
        self.starts += 1
        argv = [
            sys.executable,
            "-m",
            "controller.main",
            f"--kubeconfig={self.kubeconfig}",
            f"--identity={self.identity}",
            "--health-host=127.0.0.1",
            f"--health-port={self.port}",
            "--leader-elect",
            f"--lease-namespace={names.FLUID_NAMESPACE}",
            # Short lease so failover is quick in tests.
            "--lease-duration=4",
            "--renew-deadline=3",
            "--retry-period=0.5",
            *self.extra,
        ]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()

    def wait_ready(self, timeout: float = 30) -> None:
        def ready() -> bool:
            assert self.alive(), f"controller exited; log: {self.log.read_text()[-3000:]}"
            try:
                return self.get("/readyz")[0] == 200
            except OSError:
                return False

        eventually(ready, f"controller {self.identity} /readyz", timeout=timeout)

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        _, text = self.get("/metrics")
        return metric_sum(text, name, labels)


def lease_holder(coordination: client.CoordinationV1Api) -> str:
    lease = coordination.read_namespaced_lease(names.CONTROLLER_LEASE, names.FLUID_NAMESPACE)
    return str(lease.spec.holder_identity or "")


def wait_until_gone(read: Any, *args: Any, what: str, timeout: float = 60) -> None:
    def gone() -> bool:
        try:
            read(*args)
        except client.ApiException as e:
            if e.status == 404:
                return True
            raise
        return False

    eventually(gone, what, timeout=timeout)


@dataclass
class WebhookProcess(LocalProcess):
    """fluid-webhook as a local process serving HTTPS, with its certificate bootstrapped into a Secret
    and the MutatingWebhookConfiguration from manifests/ registered with ``url: https://HOST:PORT/…``
    instead of the in-cluster Service. HOST is 127.0.0.1 for the local control plane; for a cluster
    whose API server runs elsewhere (kind: in a container) set ``E2E_WEBHOOK_HOST`` to an address of
    this machine that the API server can reach (for kind on Linux, the docker bridge, 172.17.0.1)."""

    kubeconfig: Path
    admin: Path
    log_dir: Path
    config_name: str = names.WEBHOOK_NAME
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    ca: Path | None = None
    workers: int | None = None  # --workers; None: the product's default (the CPUs it may use)

    @property
    def log(self) -> Path:
        return self.log_dir / "webhook.log"

    @property
    def url(self) -> str:
        return f"https://{WEBHOOK_HOST}:{self.port}"

    def start(self) -> None:
        self.port = self.port or free_port()
        cert_dir = self.log_dir / "webhook-certs"
        argv = [
            sys.executable,
            "-m",
            "webhook.main",
            f"--kubeconfig={self.kubeconfig}",
            f"--host={WEBHOOK_HOST}",
            f"--port={self.port}",
            f"--cert-dir={cert_dir}",
            "--bootstrap-certs",
            f"--namespace={names.FLUID_NAMESPACE}",
            f"--ip-san={WEBHOOK_HOST}",
            f"--webhook-config={self.config_name}",
            *([f"--workers={self.workers}"] if self.workers else []),
        ]
        # TMPDIR: the supervisor's metrics directory, which a SIGKILL leaves behind, stays with the logs.
        env = {**os.environ, "TMPDIR": str(self.log_dir)}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
        self.ca = cert_dir / "ca.crt"

    def register(self, copies: int = 1) -> None:
        """The manifest's configuration pointed at this process, every entry of it; ``copies`` > 1
        repeats each entry (as a second webhook would), so the API server calls us that many times
        per pod."""
        config = yaml.safe_load((MANIFESTS / "webhook" / "mutatingwebhookconfiguration.yaml").read_text())
        config["metadata"]["name"] = self.config_name
        hooks = []
        for hook in config["webhooks"]:
            hook["clientConfig"] = {"url": f"{self.url}{hook['clientConfig']['service']['path']}"}
            hooks += [{**hook, "name": f"{i}.{hook['name']}" if i else hook["name"]} for i in range(copies)]
        config["webhooks"] = hooks
        kubectl(self.admin, "apply", "-f", "-", stdin=json.dumps(config))

    def get(self, path: str) -> tuple[int, bytes]:
        return self.request("GET", path)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        import ssl

        assert self.ca is not None
        ctx = ssl.create_default_context(cafile=str(self.ca))
        req = urllib.request.Request(self.url + path, data=body, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                return int(r.status), r.read()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read()

    def wait_ready(self, timeout: float = 30) -> None:
        def ready() -> bool:
            assert self.alive(), f"webhook exited; log: {self.log.read_text()[-3000:]}"
            try:
                return self.get("/readyz")[0] == 200
            except OSError:
                return False

        eventually(ready, "webhook /readyz", timeout=timeout)

    def ca_bundle_patched(self, admission: client.AdmissionregistrationV1Api) -> bool:
        config = admission.read_mutating_webhook_configuration(self.config_name)
        assert self.ca is not None
        want = base64.b64encode(self.ca.read_bytes()).decode()
        return all(h.client_config.ca_bundle == want for h in config.webhooks)

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        _, text = self.get("/metrics")
        return metric_sum(text.decode(), name, labels)

    def serving_processes(self) -> int:
        """How many processes serve the port: the supervisor's workers, or the one process. Each
        holds its own caches, 404 memory and lookup budgets, so bounds on API requests scale by it."""
        assert self.proc is not None
        from tests.procs import children

        return len(children(self.proc.pid)) or 1


def metric_sum(text: str, name: str, labels: dict[str, str] | None = None) -> float:
    """Sum of a metric's samples (Prometheus text) whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        have = dict(p.split("=", 1) for p in rest.rstrip("}").split(",") if "=" in p)
        if all(have.get(k) == json.dumps(v) for k, v in (labels or {}).items()):
            total += float(value)
    return total


def workload_counts(statefulsets: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """(ready, current) replicas of each StatefulSet, as its controller reports them."""
    return {
        s["metadata"]["name"]: (
            (s.get("status") or {}).get("readyReplicas", 0),
            (s.get("status") or {}).get("currentReplicas", 0),
        )
        for s in statefulsets["items"]
    }


def lagging(runtimes: dict[str, Any], counts: dict[str, tuple[int, int]]) -> list[str]:
    """Runtimes whose status does not yet show their StatefulSets' ready and current replicas."""
    behind = []
    for rt in runtimes["items"]:
        name, status = rt["metadata"]["name"], rt.get("status") or {}
        for component in ("master", "worker"):
            shown = status.get(component) or {}
            have = (shown.get("readyReplicas", 0), shown.get("currentReplicas", 0))
            if counts.get(names.component_name(name, component), (0, 0)) != have:
                behind.append(name)
                break
    return behind
