"""The clientless path as a user runs it, on a real node: the product deployed with
``kubectl apply -k manifests/`` from its image, the mooncake CacheRuntimeClass and Dataset samples as
they are, their Mooncake master and worker as real pods from the Mooncake image (hack/images/mooncake.py,
imported under the class's name), and an application Deployment injected with
``kubectl fluid inject deploy/app --dataset demo --wait``. Inside one app pod a shell sources the
dataset's runtime.sh and puts a value through Mooncake's Python client; a second app pod of the same
Deployment gets it back (its log at start, and ``kubectl exec``). The app is hack/demo/mooncake_app.py,
mounted from a ConfigMap, so ``make demo`` and this test run the same program.

A cluster of its own whose one node is a real, untainted kubelet, as in test_real_node_product.
Skipped, saying why, where a real node cannot run or the images cannot be built."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

import localcluster
from demo.apps import APP, CONFIG_MAP, app_deployment, master_metrics, sourced
from kubectl_fluid.api import names
from localcluster import realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.test_real_node_product import get, pods, ready
from tests.e2e.users_cluster import users_cluster, why_no_users_cluster
from tests.e2e.wait import eventually

DS = "demo"  # the sample Dataset's name (manifests/samples/dataset-mooncake.yaml)
MASTER, WORKER = f"{DS}-master-0", f"{DS}-worker-0"
KEY = "greeting"
# The sample's worker holds a 1Gi segment (its tieredStore quota, passed to Mooncake as 1GB = 2^30).
SEGMENT = 1 << 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[localcluster.Cluster]:
    reason = why_no_users_cluster()
    if reason:
        pytest.skip(reason)
    from images import mooncake

    with users_cluster(tmp_path_factory.mktemp("mooncake-cluster"), mooncake.build) as up:
        yield up


def obj(kubeconfig: Path, *args: str) -> Any:
    """``kubectl get -o json ARGS``, as the loose JSON it is."""
    return get(kubeconfig, *args)


def running_on_the_real_node(kubeconfig: Path, name: str) -> Any:
    """The pod once Ready on the real node; until then, an error saying where it is and why each
    container waits (ErrImagePull when its image was not imported), which a timeout reports."""
    pod = obj(kubeconfig, "-n", "default", "pod", name)
    if pod["spec"].get("nodeName") == f"{realnodes.NAME_PREFIX}0" and ready(pod):
        return pod
    waiting = {
        c["name"]: f"{c['state']['waiting'].get('reason')}: {c['state']['waiting'].get('message', '')}"
        for c in pod.get("status", {}).get("containerStatuses", [])
        if "waiting" in c.get("state", {})
    }
    raise AssertionError(f"{name} on {pod['spec'].get('nodeName')}, not Ready; waiting: {waiting}")


def metrics(ip: str) -> dict[str, float]:
    """The master's samples, read from the host over the node's bridge (slower than loopback)."""
    return master_metrics(ip)


def log_with(kubeconfig: Path, pod: str, text: str) -> str:
    """The app container's log once it holds ``text``, else ""."""
    log = kubectl(kubeconfig, "logs", "-n", "default", pod, "-c", "app")
    return log if text in log else ""


def any_ready(kubeconfig: Path, app: str) -> bool:
    return any(ready(p) for p in pods(kubeconfig, app))


def app_pods(kubeconfig: Path) -> list[Any]:
    """The app's running, injected pods (the webhook mounted the dataset's config), oldest first."""
    listed = obj(kubeconfig, "-n", "default", "pods", "-l", "app=app")["items"]
    live = [
        p
        for p in listed
        if not p["metadata"].get("deletionTimestamp")
        and ready(p)
        and names.runtime_config_volume(DS) in [v["name"] for v in p["spec"].get("volumes", [])]
    ]
    return sorted(live, key=lambda p: p["metadata"]["creationTimestamp"])


def in_app(kubeconfig: Path, pod: str, command: str) -> str:
    """``command`` in a shell of the app container that sourced the dataset's runtime.sh."""
    return kubectl(
        kubeconfig, "exec", "-n", "default", pod, "-c", "app", "--", "sh", "-c", sourced(DS, command)
    )


def test_mooncake_master_worker_and_injected_apps_on_the_real_node(cluster: localcluster.Cluster) -> None:
    kc = cluster.kubeconfig
    t0 = time.monotonic()
    kubectl(kc, "apply", "-k", str(MANIFESTS))
    for app in ("fluid-controller", "fluid-webhook"):
        eventually(partial(any_ready, kc, app), f"a {app} pod Ready on the real node", timeout=240)
    eventually(
        lambda: all(
            h["clientConfig"].get("caBundle")
            for h in obj(kc, "mutatingwebhookconfiguration", "fluid-pod-admission-webhook")["webhooks"]
        ),
        "the webhook's caBundle bootstrapped from its pod",
        timeout=60,
    )
    print(f"controller and webhook Ready {time.monotonic() - t0:.0f}s after apply -k")

    # The samples as users apply them: the class's image is the one imported above.
    kubectl(kc, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml"))
    kubectl(kc, "apply", "-f", str(MANIFESTS / "samples" / "dataset-mooncake.yaml"))
    t1 = time.monotonic()
    master = eventually(
        lambda: running_on_the_real_node(kc, MASTER), f"pod {MASTER} Ready on the real node", timeout=180
    )
    worker = eventually(
        lambda: running_on_the_real_node(kc, WORKER), f"pod {WORKER} Ready on the real node", timeout=180
    )
    master_ip = str(master["status"]["podIP"])
    # The worker found the master by its DNS name and mounted its segment there.
    eventually(
        lambda: metrics(master_ip).get("segment_total_capacity_bytes") == SEGMENT,
        "the worker's 1 GiB segment mounted at the master",
        timeout=120,
    )
    print(f"master and worker serving {time.monotonic() - t1:.0f}s after the Dataset")
    for pod, container in ((MASTER, "master"), (WORKER, "worker")):
        version = kubectl(
            kc, "exec", "-n", "default", pod, "-c", container, "--", "mooncake_master", "--version"
        )
        assert "0.3.13" in version, version
        kubectl(kc, "logs", "-n", "default", pod, "-c", container)  # answers (glog may have written little)
    print(f"{WORKER} restarts: {worker['status']['containerStatuses'][0]['restartCount']}")

    # The application: its program from a ConfigMap, its Deployment, then the plugin's injection.
    kubectl(kc, "create", "configmap", CONFIG_MAP, "-n", "default", f"--from-file={APP}")
    kubectl(kc, "apply", "-f", "-", stdin=json.dumps(app_deployment("app", "default", DS, KEY)))
    t2 = time.monotonic()
    out = ok(
        kubectl_fluid(kc, "inject", "deploy/app", "--dataset", DS, "-n", "default", "--wait", timeout=300)
    )
    print(f"inject --wait {time.monotonic() - t2:.0f}s:\n{out}")
    [writer] = eventually(lambda: app_pods(kc), "the injected app pod Ready", timeout=60)
    writer_name = str(writer["metadata"]["name"])

    # {MASTER_NAME}-0.{MASTER_SERVICE_NAME} resolves inside the app container, to the master pod.
    resolved = in_app(kc, writer_name, 'getent hosts "${MASTER_NAME}-0.${MASTER_SERVICE_NAME}"')
    assert resolved.split()[0] == master_ip, resolved

    value = f"put through Mooncake by {writer_name}"
    t3 = time.monotonic()
    in_app(kc, writer_name, f"python /app/mooncake_app.py put {KEY} '{value}'")
    print(f"put from {writer_name} {time.monotonic() - t3:.1f}s (kubectl exec, setup, close)")
    eventually(lambda: metrics(master_ip).get("master_key_count") == 1, "the key at the master", timeout=30)

    # A second app pod: at its start it gets the value (its log), and again through kubectl exec.
    kubectl(kc, "scale", "-n", "default", "deploy/app", "--replicas=2")
    both = eventually(lambda: len(ps := app_pods(kc)) == 2 and ps, "a second app pod Ready", timeout=120)
    reader_name = str(both[1]["metadata"]["name"])
    assert reader_name != writer_name
    log = eventually(
        partial(log_with, kc, reader_name, value),
        f"{reader_name}'s log showing the value",
        timeout=60,
    )
    assert f"master {MASTER}.{names.component_service(DS, 'master')}" in log, log
    assert in_app(kc, reader_name, f"python /app/mooncake_app.py get {KEY}") == value + "\n"
    print(kubectl(kc, "get", "pods", "-A", "-o", "wide"))


DS2 = "demo2"  # a second Dataset of the sample, for one process using both


def second_dataset() -> list[dict[str, Any]]:
    """The Mooncake sample's Dataset and CacheRuntime, named DS2."""
    docs = [d for d in yaml.safe_load_all((MANIFESTS / "samples" / "dataset-mooncake.yaml").read_text()) if d]
    for doc in docs:
        doc["metadata"]["name"] = DS2
    return docs


def test_one_process_uses_two_datasets_through_their_scoped_configs(cluster: localcluster.Cluster) -> None:
    """SPEC §7, several datasets in one shell: runtime.sh's names are the same for every dataset,
    so sourcing two leaves the second's; each runtime-scoped.sh carries its dataset in its names, and
    one Python process gets a key from DS's Mooncake and puts it into DS2's, two clients at once."""
    kc = cluster.kubeconfig
    kubectl(
        kc,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": second_dataset()}),
    )
    master2 = eventually(
        lambda: running_on_the_real_node(kc, f"{DS2}-master-0"), f"pod {DS2}-master-0 Ready", timeout=180
    )
    eventually(
        lambda: running_on_the_real_node(kc, f"{DS2}-worker-0"), f"pod {DS2}-worker-0 Ready", timeout=180
    )
    master2_ip = str(master2["status"]["podIP"])
    eventually(
        lambda: metrics(master2_ip).get("segment_total_capacity_bytes") == SEGMENT,
        f"{DS2}'s worker segment mounted at its master",
        timeout=120,
    )
    # A pod of the app's spec that asks for both datasets.
    template = app_deployment("both", "default", DS, KEY)["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "both",
            "namespace": "default",
            "labels": {names.LABEL_INJECT: names.TRUE},
            "annotations": {names.ANNOTATION_DATASET: f"{DS},{DS2}"},
        },
        "spec": template["spec"],
    }
    kubectl(kc, "apply", "-f", "-", stdin=json.dumps(pod))
    eventually(lambda: running_on_the_real_node(kc, "both"), "pod both Ready", timeout=120)

    def in_both(command: str) -> str:
        return kubectl(kc, "exec", "-n", "default", "both", "-c", "app", "--", "sh", "-c", command)

    env = {
        line.split("=", 1)[0]: line.split("=", 1)[1] for line in in_both("env").splitlines() if "=" in line
    }
    assert env["FLUID_SCOPED_CONFIG_PATH_DEMO"] == f"/etc/fluid/config/{DS}/runtime-scoped.sh"
    assert env["FLUID_SCOPED_CONFIG_PATH_DEMO2"] == f"/etc/fluid/config/{DS2}/runtime-scoped.sh"
    # The problem, as a user meets it, then the composing form.
    plain = in_both(
        '. "$FLUID_RUNTIME_CONFIG_PATH_DEMO"; . "$FLUID_RUNTIME_CONFIG_PATH_DEMO2"; echo "$MASTER_NAME"'
    )
    assert plain.strip() == f"{DS2}-master", plain
    scoped = in_both(
        '. "$FLUID_SCOPED_CONFIG_PATH_DEMO"; . "$FLUID_SCOPED_CONFIG_PATH_DEMO2"; '
        'echo "$FLUID_DEMO_MASTER_NAME $FLUID_DEMO2_MASTER_NAME"'
    )
    assert scoped.split() == [f"{DS}-master", f"{DS2}-master"], scoped

    value = f"copied by one process {time.monotonic():.0f}"
    in_both(f". \"$FLUID_RUNTIME_CONFIG_PATH_DEMO\" && python /app/mooncake_app.py put {KEY} '{value}'")
    t0 = time.monotonic()
    out = in_both(
        '. "$FLUID_SCOPED_CONFIG_PATH_DEMO" && . "$FLUID_SCOPED_CONFIG_PATH_DEMO2" && '
        f"python /app/mooncake_app.py copy {KEY} {DS} {DS2} 2>&1"
    )
    print(f"copy between two datasets' Mooncakes in one process: {time.monotonic() - t0:.1f}s\n{out}")
    assert f"copied '{KEY}' from {DS}-master-0" in out, out
    eventually(
        lambda: metrics(master2_ip).get("master_key_count") == 1, f"the key at {DS2}'s master", timeout=30
    )
    got = in_both(f'. "$FLUID_RUNTIME_CONFIG_PATH_DEMO2" && python /app/mooncake_app.py get {KEY}')
    assert got == value + "\n", got
