"""The demo's application: hack/demo/mooncake_app.py in the Mooncake image, its program mounted from
a ConfigMap. Its only Mooncake configuration is the dataset's runtime.sh, which the webhook mounts and
names in ``FLUID_RUNTIME_CONFIG_PATH_{DS}``. Shared by ``make demo`` and the real node's e2e test, so
both run the same app the same way."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any

from images import mooncake
from kubectl_fluid.api import names

APP = Path(__file__).resolve().parent / "mooncake_app.py"
# The master's Prometheus port in the mooncake class (its metrics_port, 9003 unless set).
MASTER_METRICS_PORT = 9003
# The ConfigMap holding APP (kubectl create configmap CONFIG_MAP --from-file=APP), mounted at /app.
CONFIG_MAP = "mooncake-app"


def sourced(dataset: str, command: str) -> str:
    """``command`` in a shell that sourced the dataset's runtime.sh (the shell-safe env name)."""
    return f'. "${names.runtime_config_env_names(dataset)[-1]}" && {command}'


def app_deployment(name: str, namespace: str, dataset: str, key: str) -> dict[str, Any]:
    """An application that uses the cache when it is configured: a pod started with the dataset's
    runtime config (after ``kubectl fluid inject``) sources runtime.sh and gets ``key`` once, which
    its log shows; then it stays up for ``kubectl exec``. Runs as the image's non-root user."""
    env = names.runtime_config_env_names(dataset)[-1]
    script = (
        f'if [ -n "${{{env}:-}}" ]; then . "${env}"; '
        'echo "master ${MASTER_NAME}-0.${MASTER_SERVICE_NAME}"; '
        f"python /app/{APP.name} get {key} || true; fi; exec sleep infinity"
    )
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "app",
                            "image": mooncake.NAME,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["sh", "-c", script],
                            "volumeMounts": [{"name": "app", "mountPath": "/app"}],
                        }
                    ],
                    "volumes": [{"name": "app", "configMap": {"name": CONFIG_MAP}}],
                },
            },
        },
    }


def master_metrics(host: str, port: int = MASTER_METRICS_PORT, timeout: float = 5) -> dict[str, float]:
    """The Mooncake master's Prometheus samples, summed per metric name over their labels."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for name, value in re.findall(r"^([a-z_]+)(?:\{[^}]*\})? (\S+)$", text, re.M):
        out[name] = out.get(name, 0.0) + float(value)
    return out


def curvine_claim(name: str, namespace: str) -> dict[str, Any]:
    """A ReadWriteMany claim of the sample ``curvine`` StorageClass (manifests/samples): a directory
    in the sample Curvine cluster, shared by pods on every node."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "curvine",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def volume_pod(name: str, namespace: str, claim: str, busybox: str, node: str | None) -> dict[str, Any]:
    """A busybox pod on ``node`` (None: where the scheduler puts it) with ``claim`` at /data, staying
    up for ``kubectl exec``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            **({"nodeSelector": {names.LABEL_HOSTNAME: node}} if node else {}),
            "containers": [
                {
                    "name": "app",
                    "image": busybox,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", f"echo {name} up; exec sleep 100000"],
                    # No mountPropagation written: the webhook gives the volume of the driver
                    # HostToContainer, so a FUSE mounted again reaches the running container.
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }
