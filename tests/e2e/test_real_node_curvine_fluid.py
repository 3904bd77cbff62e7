"""Curvine's own Fluid integration on a real node: Curvine's CacheRuntimeClass, Dataset and
CacheRuntime (manifests/samples/curvine-fluid/, Curvine's files but for the image and one setting)
applied as a user would, with the product deployed by ``kubectl apply -k manifests/`` unchanged. The
controller renders the class's master and worker; they run Curvine's image in Curvine's own layout
(hack/images/curvine.py: ``/entrypoint.sh`` hands Fluid mode to Curvine's ``fluid-entrypoint.sh``,
whose ``generate_config.py`` writes Curvine's configuration from the runtime config the product
mounts). The master elects itself, the worker registers with it and Curvine's ``cv report`` shows
one live worker and its capacity; the runtime turns Ready. The node labelled by hand as NodeStage
will label it, the class's client pod mounts Curvine at the runtime's target path in the node (what
the CSI side binds beneath), and a file written there is Curvine's. Deleting the Dataset and runtime
leaves no pod and no mount. Measured: apply to Ready, label to mounted, the pods' RSS.

A cluster of its own whose one node is a real, untainted kubelet (tests/e2e/users_cluster.py), whose
containerd has Curvine's image as the default install's. Skipped, saying why, where a real node cannot
run, an image cannot be built or Curvine's files are not there."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import localcluster
from kubectl_fluid.api import names
from localcluster import realnodes
from localcluster.peers import curvinelayout
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_real_node_curvine import why_not as why_no_curvine
from tests.e2e.test_real_node_product import get, ready
from tests.e2e.users_cluster import users_cluster
from tests.e2e.wait import eventually

SYSTEM = "fluid-system"
SAMPLES = MANIFESTS / "samples" / "curvine-fluid"
CLASS, DATASET = SAMPLES / "cacheruntimeclass.yaml", SAMPLES / "dataset.yaml"
NAME = "curvine-demo"  # Curvine's Dataset and CacheRuntime
APPS = "default"
MASTER, WORKER = f"{NAME}-master-0", f"{NAME}-worker-0"
CONF = "/app/curvine/conf/curvine-cluster.toml"  # where Curvine's scripts write its configuration
NODE = f"{realnodes.NAME_PREFIX}0"
WRITTEN = "written-through-curvines-client"


@dataclass
class Bed:
    cluster: localcluster.Cluster
    node: realnodes.RealNode
    kc: Path  # the cluster's kubeconfig
    figures: dict[str, float] = field(default_factory=dict)


def why_not() -> str | None:
    reason = why_no_curvine()
    if reason is None and not curvinelayout.source_tarball().is_file():
        reason = f"no Curvine source (its Fluid scripts): {curvinelayout.source_tarball()} is not there"
    return reason


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_not()
    if reason:
        pytest.skip(reason)
    # Curvine's image is one of the default install's: every users cluster has it.
    with users_cluster(tmp_path_factory.mktemp("curvine-fluid-cluster")) as cluster:
        node = realnodes.RealNode.load(cluster.state_dir / realnodes.NODES_DIR / NODE)
        assert node is not None
        b = Bed(cluster, node, cluster.kubeconfig)
        yield b
        print("\n".join(f"{k}: {v:.1f}" for k, v in b.figures.items()))


def image_of_the_samples() -> str:
    """The image Curvine's class names, as the samples have it."""
    found = set(re.findall(r"^\s+image: (\S+)", CLASS.read_text(), re.MULTILINE))
    assert len(found) == 1, found
    return str(found.pop())


def pod(bed: Bed, name: str) -> dict[str, Any]:
    return get(bed.kc, "-n", APPS, "pod", name)


def in_pod(bed: Bed, name: str, *argv: str) -> str:
    return kubectl(bed.kc, "-n", APPS, "exec", name, "--", *argv)


def rss_mib(bed: Bed, name: str) -> float:
    """Of the container's first process: Curvine's entrypoints exec curvine-server, so it is that."""
    status = in_pod(bed, name, "cat", "/proc/1/status")
    [kib] = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(kib) / 1024


def test_curvines_own_class_runs_its_master_and_worker_and_the_runtime_turns_ready(bed: Bed) -> None:
    kubectl(bed.kc, "apply", "-k", str(MANIFESTS))  # the default install, unchanged
    kubectl(bed.kc, "-n", SYSTEM, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=5m")
    # kubectl's default (strict) validation: Curvine's class, its `ReportSummary` spelling too.
    kubectl(bed.kc, "apply", "-f", str(CLASS))
    t0 = time.monotonic()
    kubectl(bed.kc, "apply", "-f", str(DATASET))
    kubectl(bed.kc, "-n", APPS, "wait", "--for=condition=Ready", f"cacheruntime/{NAME}", "--timeout=300s")
    bed.figures["Curvine's Dataset and CacheRuntime applied to the runtime Ready (s)"] = time.monotonic() - t0

    image = image_of_the_samples()
    for name, component in ((MASTER, "master"), (WORKER, "worker")):
        p = pod(bed, name)
        assert ready(p), p.get("status")
        [container] = p["spec"]["containers"]
        assert container["image"] == image
        assert container["command"] == ["/entrypoint.sh"]
        assert container["args"] == [component, "start"]
    dataset: dict[str, Any] = get(bed.kc, "-n", APPS, "dataset", NAME)
    assert dataset["status"]["phase"] == "Bound", dataset.get("status")


def test_curvines_scripts_configured_the_master_from_the_runtime_config(bed: Bed) -> None:
    """generate_config.py read the runtime config the product mounts and wrote Curvine's
    configuration: the master's journal at its pod's name under the headless Service, and the
    option the Dataset gives."""
    conf = in_pod(bed, MASTER, "cat", CONF)
    master_dns = f"{MASTER}.svc-{NAME}-master.{APPS}.svc.cluster.local"
    assert f'hostname = "{master_dns}"' in conf, conf
    assert 'heartbeat_interval = "500ms"' in conf, conf
    log = kubectl(bed.kc, "-n", APPS, "logs", MASTER)
    assert "Detected Fluid cache-runtime mode" in log, log[-3000:]


def cv_report(bed: Bed) -> dict[str, Any]:
    """``cv report json`` in the master pod: Curvine's own CLI, through Curvine's ``cv`` wrapper and
    the configuration its scripts wrote."""
    out = in_pod(bed, MASTER, "/app/curvine/bin/cv", "report", "json", "--conf", CONF)
    return json.loads(out[out.index("{") :])  # type: ignore[no-any-return]


def test_the_master_elected_itself_and_the_worker_registered_with_its_capacity(bed: Bed) -> None:
    def one_live_worker() -> dict[str, Any] | None:
        report = cv_report(bed)
        return report if len(report.get("live_workers") or []) == 1 else None

    info = eventually(
        one_live_worker,
        "cv report showing one live worker",
        timeout=120,
        interval=2,
    )
    print(json.dumps({k: v for k, v in info.items() if not isinstance(v, list | dict)}, indent=1))
    assert MASTER in str(info["active_master"]), info["active_master"]
    [worker] = info["live_workers"]
    assert WORKER in json.dumps(worker), worker
    assert info["capacity"] > 0, info
    assert info["available"] > 0, info
    bed.figures["Curvine's capacity as the master reports it (GiB)"] = info["capacity"] / 2**30
    bed.figures["master RSS (MiB)"] = rss_mib(bed, MASTER)
    bed.figures["worker RSS (MiB)"] = rss_mib(bed, WORKER)


def client_pods(bed: Bed) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = get(bed.kc, "-n", APPS, "pods")["items"]  # type: ignore[assignment]
    return [p for p in listed if p["metadata"]["name"].startswith(f"{NAME}-client-")]


def test_a_client_pod_on_a_labelled_node_serves_curvine_at_the_target_path(bed: Bed) -> None:
    """What the CSI side binds beneath: the node labelled by hand as NodeStage will, the class's client
    pod (Curvine's ``/entrypoint.sh client start``, curvine-fuse) mounts Curvine at the runtime's
    target path, Bidirectional into the node; a file written there is Curvine's (``cv fs cat``)."""
    label, target = names.fuse_node_label(APPS, NAME), names.target_path(APPS, NAME)
    assert client_pods(bed) == []  # no node asked for it yet
    t0 = time.monotonic()
    kubectl(bed.kc, "label", "node", NODE, f"{label}={names.TRUE}")
    eventually(
        lambda: target in realnodes.namespace_mounts(bed.cluster, bed.node),
        f"Curvine's FUSE mounted at {target} in the node",
        timeout=180,
        interval=1,
    )
    bed.figures["node labelled to curvine-fuse mounted at the target path (s)"] = time.monotonic() - t0
    [client] = client_pods(bed)
    assert client["spec"]["nodeName"] == NODE
    name = client["metadata"]["name"]

    in_pod(bed, name, "sh", "-c", f"echo {WRITTEN} > {target}/hello")
    assert (
        in_pod(bed, MASTER, "/app/curvine/bin/cv", "fs", "cat", "/hello", "--conf", CONF)
        .strip()
        .endswith(WRITTEN)
    )
    on_node = realnodes.in_node(bed.cluster, bed.node, ["cat", f"{target}/hello"])
    assert subprocess.run(on_node, capture_output=True, text=True, check=True).stdout == f"{WRITTEN}\n"
    bed.figures["client (curvine-fuse) RSS (MiB)"] = rss_mib(bed, name)


def test_deleting_curvines_runtime_and_dataset_removes_their_pods(bed: Bed) -> None:
    docs = [d for d in yaml.safe_load_all(DATASET.read_text()) if d]
    assert {d["kind"] for d in docs} == {"Dataset", "CacheRuntime"}
    kubectl(bed.kc, "delete", "-f", str(DATASET), "--wait=true", "--timeout=180s")

    def left() -> list[str]:
        listed: list[dict[str, Any]] = get(bed.kc, "-n", APPS, "pods")["items"]  # type: ignore[assignment]
        return [p["metadata"]["name"] for p in listed if p["metadata"]["name"].startswith(f"{NAME}-")]

    eventually(lambda: not left(), "Curvine's master, worker and client pods gone", timeout=180)
    target = names.target_path(APPS, NAME)
    assert target not in realnodes.namespace_mounts(bed.cluster, bed.node)
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if target in line]
    kubectl(bed.kc, "label", "node", NODE, f"{names.fuse_node_label(APPS, NAME)}-")
    kubectl(bed.kc, "delete", "-f", str(CLASS))


# Each sample's differences from Curvine's file: (Curvine's line, the sample's line), as its header says.
CHANGES: dict[str, tuple[str, list[tuple[str | None, str]]]] = {
    "cacheruntimeclass.yaml": ("curvine-cache-runtime-class.yaml", [("curvine:latest", "IMAGE")] * 3),
    "dataset.yaml": (
        "curvine-dataset.yaml",
        [(None, 'heartbeat_interval: "500ms"'), (None, 'enable_splice: "false"')],
    ),
    "test-pod.yaml": ("test-pod.yaml", [("curvine:latest", "IMAGE")]),
}


def test_the_samples_are_curvines_files_but_for_what_their_headers_say() -> None:
    """manifests/samples/curvine-fluid/ against Curvine's cache-runtime/ at the pinned commit: the image
    and the machine's settings differ, nothing else (no cluster needed)."""
    source = curvinelayout.source_tarball()
    if not source.is_file():
        pytest.skip(f"no Curvine source: {source} is not there")
    theirs_dir = curvinelayout.ensure() / curvinelayout.CACHE_RUNTIME_DIR
    image = image_of_the_samples()
    for sample, (theirs, changes) in CHANGES.items():
        ours = [line for line in (SAMPLES / sample).read_text().splitlines() if not line.startswith("# ")]
        original = (theirs_dir / theirs).read_text().splitlines()
        removed = [line.strip() for line in original if line not in ours]
        added = [line.strip().replace(image, "IMAGE") for line in ours if line not in original]
        assert sorted(r.removeprefix("image: ") for r in removed) == sorted(
            c[0] for c in changes if c[0] is not None
        ), (sample, removed)
        assert sorted(a.removeprefix("image: ") for a in added) == sorted(c[1] for c in changes), (
            sample,
            added,
        )
