"""``kubectl fluid bundle`` from a broken cluster on a real node: what a maintainer needs is in the
archive (a test lists the files), and no secret is.

The product deployed by ``kubectl apply -k manifests/`` on a cluster of its own whose one node is a
real kubelet (logs need real containers). A runtime whose master crash-loops (a class of busybox
components: the master prints a planted Secret's value, from its env, in forms a log shows
credentials in, and exits), so it has a previous log; a token in the Dataset's annotation (and so in
kubectl's last-applied-configuration). The archive: the expected files, current and previous logs,
every YAML parses, no Secret object, and neither planted value, nor the Secret's base64, in any
member. Progress on stderr, which is not a terminal here, is one line per step.

Skipped, saying why, where a real node cannot run or the image cannot be built."""

from __future__ import annotations

import base64
import json
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid.api import names
from localcluster import realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.users_cluster import users_cluster, why_no_users_cluster
from tests.e2e.wait import eventually

SYSTEM = names.FLUID_NAMESPACE
NS = "team-b"
NAME = "broken"
PASSWORD = "Zq-planted-password-7c1e"  # the Secret's value, echoed by the master
TOKEN = "Zq-planted-annotation-token-93ab"  # in the Dataset's annotation
BUSYBOX = realnodes.busybox_image("1.35.0")
MASTER = f"{NAME}-master-0"


def busybox(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": BUSYBOX,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script],
        **extra,
    }


def objects() -> list[dict[str, Any]]:
    # The master says what many programs say when they fail to connect, and dies.
    master = busybox(
        "master",
        'echo "starting master of $FLUID_DATASET_NAME"; '
        'echo "connecting to s3 with password=$PLANTED_PW"; '
        "echo \"curl -H 'Authorization: Bearer $PLANTED_PW'\"; "
        'echo "fatal: cannot reach the UFS"; sleep 1; exit 1',
        env=[{"name": "PLANTED_PW", "valueFrom": {"secretKeyRef": {"name": "planted", "key": "password"}}}],
        # Never Ready, even in the second it runs: diagnose's master-not-ready holds whenever the
        # bundle is read (without a probe, a restarted container counts as Ready until it exits).
        readinessProbe={"exec": {"command": ["false"]}, "periodSeconds": 1},
    )
    worker = busybox("worker", "echo worker up; exec sleep 3600")
    template = {"spec": {"restartPolicy": "Always", "terminationGracePeriodSeconds": 1}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "planted", "namespace": NS},
            "stringData": {"password": PASSWORD},
        },
        {
            "apiVersion": names.API_VERSION,
            "kind": "CacheRuntimeClass",
            "metadata": {"name": "crashy"},
            "fileSystemType": "crashyfs",
            "topology": {
                "master": {"template": {"spec": {**template["spec"], "containers": [master]}}},
                "worker": {"template": {"spec": {**template["spec"], "containers": [worker]}}},
            },
        },
        {
            "apiVersion": names.API_VERSION,
            "kind": "Dataset",
            "metadata": {"name": NAME, "namespace": NS, "annotations": {"example.com/api-token": TOKEN}},
            "spec": {"mounts": [{"name": "data", "mountPoint": "s3://bucket/data"}]},
        },
        {
            "apiVersion": names.API_VERSION,
            "kind": "CacheRuntime",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"runtimeClassName": "crashy", "master": {"replicas": 1}, "worker": {"replicas": 1}},
        },
    ]


@pytest.fixture(scope="module")
def kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    reason = why_no_users_cluster()
    if reason:
        pytest.skip(reason)
    with users_cluster(tmp_path_factory.mktemp("bundle-cluster")) as cluster:
        yield cluster.kubeconfig


def pod(kc: Path, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(kc, "-n", namespace, "get", "pod", name, "-o", "json"))
    return found


def restarts(p: dict[str, Any]) -> int:
    statuses = (p.get("status") or {}).get("containerStatuses") or ()
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr,unused-ignore]


@pytest.fixture(scope="module")
def broken(kc: Path) -> Path:
    """The product installed and the broken runtime crash-looping (its master restarted once)."""
    t0 = time.monotonic()
    kubectl(kc, "apply", "-k", str(MANIFESTS))
    kubectl(kc, "-n", SYSTEM, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=5m")
    kubectl(kc, "apply", "-f", "-", stdin="\n---\n".join(json.dumps(o) for o in objects()))
    eventually(
        lambda: restarts(pod(kc, NS, MASTER)) >= 1 if _exists(kc, MASTER) else False,
        f"{NS}/{MASTER} restarted (its previous log there)",
        timeout=240,
    )
    eventually(
        lambda: _exists(kc, f"{NAME}-worker-0") and _running(pod(kc, NS, f"{NAME}-worker-0")),
        "the worker running",
        timeout=120,
    )
    print(f"broken runtime crash-looping {time.monotonic() - t0:.0f}s after apply -k")
    return kc


def test_the_bundle_of_a_broken_cluster_holds_what_a_maintainer_needs_and_no_secret(
    broken: Path, tmp_path: Path
) -> None:
    kc, master = broken, MASTER
    archive = tmp_path / "support.tar.gz"
    t1 = time.monotonic()
    run = kubectl_fluid(kc, "bundle", "-n", NS, "-o", str(archive))
    took = time.monotonic() - t1
    assert ok(run).strip().startswith(f"wrote {archive} (")
    check_progress(run.stderr)

    files = members(archive)
    print(f"bundle: {took:.1f}s, {len(files)} files, {archive.stat().st_size / 1024:.0f} KiB")
    root = "support/"
    assert all(n.startswith(root) for n in files)
    names_ = sorted(n.removeprefix(root) for n in files)
    # What README.md shows: the run's stdout and stderr, `tar tzf`, README.txt.
    print(f"$ kubectl fluid bundle -n {NS}\n{run.stderr}{run.stdout}$ tar tzf {archive.name}")
    print("\n".join(files), files[f"{root}README.txt"].decode(), sep="\n")
    ds = f"namespaces/{NS}/datasets/{NAME}"
    expected = expected_files(ds, master)
    assert expected <= set(names_), sorted(expected - set(names_))
    # The product's pods' logs: one per container of every pod in fluid-system.
    system_pods = json.loads(kubectl(kc, "-n", SYSTEM, "get", "pods", "-o", "json"))["items"]
    for p in system_pods:
        for c in p["spec"]["containers"]:
            log = f"logs/{SYSTEM}/{p['metadata']['name']}/{c['name']}.log"
            assert log in names_, log
    components = {p["metadata"]["labels"].get(names.LABEL_APP_COMPONENT) for p in system_pods}
    assert {"controller", "webhook", "csi-node"} <= components, components

    # The crash is there, in the current and the previous log, with the credential masked.
    for log in ("master.log", "master.previous.log"):
        text = files[f"{root}logs/{NS}/{master}/{log}"].decode()
        assert "fatal: cannot reach the UFS" in text, text
        assert "password=******" in text, text
        assert "Bearer ******" in text, text
    print(f"$ tar xzOf {archive.name} {root}logs/{NS}/{master}/master.previous.log\n{text}")

    check_no_secret(files)
    dataset = yaml.safe_load(files[f"{root}{ds}/dataset.yaml"])
    assert dataset["metadata"]["annotations"]["example.com/api-token"] == "******"
    assert "managedFields" not in dataset["metadata"]
    [master_pod] = [
        p for p in yaml.safe_load(files[f"{root}{ds}/pods.yaml"])["items"] if p["metadata"]["name"] == master
    ]
    env = master_pod["spec"]["containers"][0]["env"]
    reference = {"secretKeyRef": {"name": "planted", "key": "password"}}
    assert {"name": "PLANTED_PW", "valueFrom": reference} in env
    versions = yaml.safe_load(files[f"{root}versions.yaml"])
    assert versions["serverVersion"]["gitVersion"].startswith("v1.")
    assert {c["component"] for c in versions["components"]} >= {"controller", "webhook", "csi-node"}
    hooks = yaml.safe_load(files[f"{root}cluster/mutatingwebhookconfigurations.yaml"])["items"]
    assert [h["metadata"]["name"] for h in hooks] == [names.WEBHOOK_NAME]
    readme = files[f"{root}README.txt"].decode()
    assert f"namespace {NS}" in readme
    # diagnose's report of the same snapshot names the crash-looping master.
    report = json.loads(files[f"{root}diagnose.json"])
    assert "master-not-ready" in {f["rule"] for f in report["findings"]}, report


def test_a_bundle_of_one_dataset(broken: Path, tmp_path: Path) -> None:
    """The same tree for it alone; an unknown one is kubectl's error, and no file is left."""
    one = tmp_path / "one.tar.gz"
    ok(kubectl_fluid(broken, "bundle", "-n", NS, "--dataset", NAME, "-o", str(one)))
    names_ = members(one)
    assert f"one/namespaces/{NS}/datasets/{NAME}/dataset.yaml" in names_
    assert f"one/logs/{NS}/{MASTER}/master.previous.log" in names_
    missing = kubectl_fluid(broken, "bundle", "-n", NS, "--dataset", "nope", "-o", str(tmp_path / "x.tar.gz"))
    assert missing.returncode == 1
    assert missing.stderr.splitlines()[-1] == (
        f'error: dataset "nope" not found in namespace "{NS}"; check the name, or the namespace (-n)'
    )
    assert not list(tmp_path.glob("*x.tar.gz*"))


def _exists(kc: Path, name: str) -> bool:
    found = kubectl(kc, "-n", NS, "get", "pods", "--field-selector", f"metadata.name={name}", "-o", "name")
    return bool(found)


def _running(p: dict[str, Any]) -> bool:
    return (p.get("status") or {}).get("phase") == "Running"


def check_progress(stderr: str) -> None:
    """stderr is a pipe here: one line per step, no carriage returns."""
    progress = stderr.splitlines()
    assert "\r" not in stderr
    assert "collecting datasets (1)…" in progress
    assert any(line.startswith(f"collecting {SYSTEM} pods (") for line in progress), progress
    assert any(line.startswith("collecting pods (") for line in progress), progress
    logs_lines = [line for line in progress if line.startswith("logs ")]
    assert logs_lines
    assert logs_lines[-1].startswith(f"logs {len(logs_lines)}/{len(logs_lines)}")


def expected_files(ds: str, master: str) -> set[str]:
    return {
        "README.txt",
        "versions.yaml",
        "diagnose.json",
        "cluster/nodes.yaml",
        "cluster/csinodes.yaml",
        "cluster/fusemounts.yaml",
        "cluster/mutatingwebhookconfigurations.yaml",
        f"{SYSTEM}/pods.yaml",
        f"{SYSTEM}/events.yaml",
        f"namespaces/{NS}/events.yaml",
        *(
            f"{ds}/{f}.yaml"
            for f in (
                "dataset",
                "cacheruntime",
                "cacheruntimeclass",
                "configmap",
                "persistentvolume",
                "persistentvolumeclaim",
                "workloads",
                "pods",
                "app-pods",
                "fusemounts",
                "dataloads",
                "events",
            )
        ),
        f"logs/{NS}/{master}/master.log",
        f"logs/{NS}/{master}/master.previous.log",
        f"logs/{NS}/{NAME}-worker-0/worker.log",
    }


def check_no_secret(files: dict[str, bytes]) -> None:
    """The planted values, the Secret's base64 and any Secret object: in no member."""
    secret_b64 = base64.b64encode(PASSWORD.encode())
    for name, data in files.items():
        assert PASSWORD.encode() not in data, name
        assert TOKEN.encode() not in data, name
        assert secret_b64 not in data, name
        if name.endswith(".yaml"):
            doc = yaml.safe_load(data)
            items = doc.get("items", [doc]) if isinstance(doc, dict) else []
            assert not [i for i in items if isinstance(i, dict) and i.get("kind") == "Secret"], name
