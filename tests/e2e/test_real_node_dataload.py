"""A DataLoad run for real, on one real node: the product deployed with ``kubectl apply -k
manifests/``, Curvine's own class, Dataset and CacheRuntime (manifests/samples/curvine-fluid/), and
``kubectl fluid load curvine-demo /a /b --wait`` as an operator runs it. The loader Job runs in a
container on the node, with the runtime config the controller mounts and upstream's
``FLUID_DATALOAD_*`` env.

Curvine's class is applied with one change: its DataLoad spec's script (``cv load`` of the paths,
which needs a UFS mounted in Curvine: the S3 UFS and ``mountUFS`` are slice E of issue 31) is replaced
by a small script in the same image that does what the head of Curvine's does (Curvine's
``generate_config.py`` over the mounted runtime config) and then writes what it was asked to load into
Curvine (``cv fs put``), which the test reads back from the master (``cv fs cat``). So the Job's
mechanics are real end to end: the image, the config mount, the env, the master reached.

A cluster of its own (tests/e2e/users_cluster.py). Skipped, saying why, where a real node cannot run
or Curvine's image and files are not there."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid.api import names
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_cli_inject import kubectl_fluid
from tests.e2e.test_real_node_curvine_fluid import CLASS, DATASET, NAME, why_not
from tests.e2e.users_cluster import users_cluster

SYSTEM, APPS = "fluid-system", "default"
MASTER = f"{NAME}-master-0"
CONF = "/app/curvine/conf/curvine-cluster.toml"
# The head of Curvine's DataLoad script (its config from the mounted runtime config), then a record
# of the request put into Curvine, one file per loader pod.
LOADER_SCRIPT = """set -euo pipefail
export CURVINE_CONF_DIR=/app/curvine/conf
FLUID_RUNTIME_COMPONENT_TYPE=worker python3 /app/curvine/generate_config.py >/tmp/curvine-dataload-env.sh
conf=/app/curvine/conf/curvine-cluster.toml
cv=/app/curvine/bin/cv
{
  echo "paths=$FLUID_DATALOAD_DATA_PATH replicas=$FLUID_DATALOAD_PATH_REPLICAS"
  echo "metadata=$FLUID_DATALOAD_METADATA"
} >/tmp/request
"$cv" fs mkdir -p /dataloads --conf "$conf"
"$cv" fs put /tmp/request "/dataloads/$HOSTNAME" --conf "$conf"
"""


@pytest.fixture(scope="module")
def kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    reason = why_not()
    if reason:
        pytest.skip(reason)
    with users_cluster(tmp_path_factory.mktemp("dataload-cluster")) as cluster:
        yield cluster.kubeconfig


def curvines_class_with_a_small_loader() -> dict[str, Any]:
    klass: dict[str, Any] = yaml.safe_load(CLASS.read_text())
    [spec] = klass["dataOperationSpecs"]
    assert spec["name"] == "DataLoad"
    spec.update(command=["/bin/bash", "-c"], args=[LOADER_SCRIPT])
    return klass


def read(kc: Path, *args: str) -> Any:
    return json.loads(kubectl(kc, "-n", APPS, "get", "-o", "json", *args))


def what_the_loader_did(kc: Path) -> str:
    """The DataLoads, their Jobs and pods, and the loader's log: what a failure needs to be read."""
    parts = [kubectl(kc, "-n", APPS, "get", "dataloads,jobs,pods", "-o", "wide")]
    for pod in read(kc, "pods", "-l", f"role={names.DATALOAD_POD_ROLE}")["items"]:
        parts.append(kubectl(kc, "-n", APPS, "logs", pod["metadata"]["name"], "--tail=40"))
    parts.append(kubectl(kc, "-n", APPS, "get", "dataloads", "-o", "yaml"))
    return "\n".join(parts)


def apply(kc: Path, *objects: dict[str, Any]) -> None:
    kubectl(
        kc, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    )


def test_kubectl_fluid_load_runs_the_classes_loader_on_the_node_against_curvine(kc: Path) -> None:
    kubectl(kc, "apply", "-k", str(MANIFESTS))
    kubectl(kc, "-n", SYSTEM, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=5m")
    apply(kc, curvines_class_with_a_small_loader())
    apply(kc, *[d for d in yaml.safe_load_all(DATASET.read_text()) if d])
    kubectl(kc, "-n", APPS, "wait", "--for=condition=Ready", f"cacheruntime/{NAME}", "--timeout=300s")

    t0 = time.monotonic()
    run = kubectl_fluid(
        kc, "load", NAME, "/a", "/b", "--load-metadata", "--wait", "--timeout=240s", "-n", APPS, timeout=300
    )
    seconds = time.monotonic() - t0
    assert run.returncode == 0, f"{run.stderr}\n{what_the_loader_did(kc)}"
    created, done = run.stdout.splitlines()
    name = created.split("/")[1].split()[0]
    assert created == f"dataload.data.fluid.io/{name} created"
    assert done.startswith(f"dataload.data.fluid.io/{name} complete in ")
    seen = [line.split()[1] for line in run.stderr.splitlines()]
    assert "Executing" in seen, run.stderr
    assert seen[-1] == "Complete", run.stderr
    print(f"kubectl fluid load --wait, create to Complete on a real node: {seconds:.1f} s")

    dataload = read(kc, "dataload", name)
    assert dataload["status"]["phase"] == "Complete"
    [pod] = read(kc, "pods", "-l", f"release={names.dataload_release(name)}")["items"]
    assert pod["status"]["phase"] == "Succeeded"
    record = kubectl(
        kc,
        "-n",
        APPS,
        "exec",
        MASTER,
        "--",
        "/app/curvine/bin/cv",
        "fs",
        "cat",
        f"/dataloads/{pod['metadata']['name']}",
        "--conf",
        CONF,
    )
    assert "paths=/a:/b replicas=1:1\nmetadata=true" in record, record
    dataset = read(kc, "dataset", NAME)
    assert names.OPERATION_DATALOAD not in (dataset["status"].get("operationRef") or {})
