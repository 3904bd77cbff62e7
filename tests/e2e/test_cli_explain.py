"""``kubectl fluid explain`` through a real kubectl, on what the controller, the webhook and the API
server's own controllers really made (issue 28, item 8): the product's own pods are said to be what
they are, a FUSE PVC's user is sent to ``--fuse``, a pod stuck on a clientless dataset's PVC shows
kubelet's FailedMount, and a workload is explained through its pods, or through its ReplicaSet's
FailedCreate when the webhook refused them all."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from csi.fuse.fusepod import fuse_pod
from csi.model.volumes import clientless_message
from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess
from tests.e2e.test_cli_inject import app_template, deployment, kubectl_fluid, live_pods, ok, statefulset
from tests.e2e.test_cli_kubeconfigs import admin_cluster, admin_user
from tests.e2e.test_controller import Fluid, runtime
from tests.e2e.test_webhook import ready_dataset
from tests.e2e.wait import as_json, eventually

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fl(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess, webhook: WebhookProcess
) -> Fluid:
    return Fluid(k8s, namespace)


def explain(kubeconfig: Path, *args: str) -> str:
    return ok(kubectl_fluid(kubeconfig, "explain", *args))


def why_not(text: str) -> list[str]:
    """The ``Why not:`` items of a describe text."""
    lines = text.splitlines()
    if "Why not:" not in lines:
        return []
    start = lines.index("Why not:") + 1
    items = []
    for line in lines[start:]:
        if not line.startswith("  - "):
            break
        items.append(line[4:])
    return items


def test_a_cache_component_pod_is_said_to_be_one(fl: Fluid, kubeconfig: Path) -> None:
    """Issue 28: for pod/demo-master-0 it advised injecting the controller's own StatefulSet."""
    ready_dataset(fl, "demo")
    eventually(lambda: fl.core.read_namespaced_pod("demo-master-0", fl.ns), "the master's pod")
    text = explain(kubeconfig, "pod/demo-master-0", "-n", fl.ns)
    assert (
        'What:       the master of CacheRuntime "demo" (dataset "demo"), a pod of its StatefulSet demo-master'
    ) in text
    assert "injection does not apply" in text
    assert "Injected:   no (not applicable)" in text
    assert "Owner:      sts/demo-master (the product's, not to inject)" in text.splitlines()
    assert "kubectl fluid inject" not in text
    assert why_not(text) == []
    report = json.loads(explain(kubeconfig, "pod/demo-master-0", "-n", fl.ns, "-o", "json"))
    assert report["role"].startswith('the master of CacheRuntime "demo"')
    assert report["reasons"] == []


@pytest.fixture
def system_pods(core: client.CoreV1Api) -> Iterator[list[str]]:
    """Pods in fluid-system as the install makes them: the controller's (its manifest's template), a
    standalone FUSE pod (the CSI node's own builder). Removed afterwards."""
    try:
        core.create_namespace({"metadata": {"name": names.FLUID_NAMESPACE}})
    except ApiException as e:
        if e.status != 409:
            raise
    [controller] = [
        d
        for d in yaml.safe_load_all((ROOT / "manifests/controller/deployment.yaml").read_text())
        if d and d.get("kind") == "Deployment"
    ]
    labels = controller["spec"]["template"]["metadata"]["labels"]
    node = core.list_node().items[0].metadata.name
    made = [
        {
            "metadata": {"name": "fluid-controller-explained", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
        },
        fuse_pod(node, "ab" * 16, ["curvine-fuse"], "/var/lib/fluid/ab/mnt", "registry.k8s.io/pause:3.10"),
    ]
    created = [str(core.create_namespaced_pod(names.FLUID_NAMESPACE, p).metadata.name) for p in made]
    yield created
    for name in created:
        core.delete_namespaced_pod(name, names.FLUID_NAMESPACE, grace_period_seconds=0)


def test_the_products_own_pods_in_fluid_system_are_said_to_be_what_they_are(
    fl: Fluid, kubeconfig: Path, system_pods: list[str]
) -> None:
    controller, fuse = system_pods
    text = explain(kubeconfig, f"pod/{controller}", f"pod/{fuse}", "-n", names.FLUID_NAMESPACE)
    whats = [line for line in text.splitlines() if line.startswith("What:")]
    assert whats == [
        "What:       the fluid-controller, which makes each CacheRuntime's components; injection does "
        "not apply",
        f"What:       a FUSE pod of the CSI node service (mount key {'ab' * 16} on node "
        f"{fl.core.read_namespaced_pod(fuse, names.FLUID_NAMESPACE).spec.node_name}): it serves the FUSE "
        "mount that the pods mounting those volumes there share; injection does not apply",
    ]
    assert "Why not:" not in text


def test_a_fuse_pvc_user_is_sent_to_inject_fuse(fl: Fluid, kubeconfig: Path, k8s: client.ApiClient) -> None:
    """Issue 28: a pod mounting a FUSE dataset's PVC (or a PVC of the driver's StorageClass) was told
    to run inject --dataset; the serverful path is --fuse."""
    fl.create(runtime("fuse", runtime_class="curvine", clientless=False))
    fl.create({"apiVersion": names.API_VERSION, "kind": "Dataset", "metadata": {"name": "fuse"}, "spec": {}})
    eventually(lambda: fl.bound("fuse"), "Dataset fuse Bound", timeout=30)
    eventually(lambda: fl.core.read_namespaced_persistent_volume_claim("fuse", fl.ns), "PVC fuse")
    storage = client.StorageV1Api(k8s)
    sc = f"curvine-{fl.ns}"
    storage.create_storage_class({"metadata": {"name": sc}, "provisioner": names.CSI_DRIVER})
    try:
        fl.core.create_namespaced_persistent_volume_claim(
            fl.ns,
            {
                "metadata": {"name": "scratch"},
                "spec": {
                    "storageClassName": sc,
                    "accessModes": ["ReadWriteMany"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        for name, claim in (("trainer", "fuse"), ("scratcher", "scratch")):
            template = app_template({"app": name})
            template["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
            template["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
            deployment(fl, name, template)
        for name, claim in (("trainer", "fuse"), ("scratcher", "scratch")):
            [pod] = eventually(functools.partial(live_pods, fl, f"app={name}"), f"the pod of {name}")
            text = explain(kubeconfig, f"pod/{pod['metadata']['name']}", "-n", fl.ns)
            assert f"FUSE PVCs:  {claim}" in text
            [reason] = why_not(text)
            assert reason.startswith(f"it mounts the FUSE PVC {claim} ({names.CSI_DRIVER})"), reason
            assert reason.endswith(f"run kubectl fluid inject deploy/{name} --fuse -n {fl.ns}"), reason
            assert "--dataset" not in text

        # As it says: injected with --fuse, the new pod is on the FUSE path, and explain says so.
        ok(kubectl_fluid(kubeconfig, "inject", "deploy/trainer", "--fuse", "-n", fl.ns))

        def relabelled() -> list[dict[str, Any]]:
            return [
                p
                for p in live_pods(fl, "app=trainer")
                if names.LABEL_FUSE_SERVERFUL_INJECT in p["metadata"]["labels"]
            ]

        [pod] = eventually(relabelled, "the new pod, labelled for FUSE")
        text = explain(kubeconfig, f"pod/{pod['metadata']['name']}", "-n", fl.ns)
        assert "Injected:   yes, the FUSE path: mount propagation on fuse" in text
        assert why_not(text) == []
    finally:
        storage.delete_storage_class(sc)


def test_a_pod_stuck_on_a_clientless_datasets_pvc_shows_the_failed_mount(fl: Fluid, kubeconfig: Path) -> None:
    """Issue 28: explain left out why the pod was stuck. The CSI node's refusal reaches the pod as
    kubelet's FailedMount Event (tests/e2e/test_real_node_fuse.py sees a real kubelet write it); here
    it is written as kubelet writes it, to a pod kept Pending, and explain shows the newest."""
    ready_dataset(fl, "ds1")
    pvc = eventually(lambda: fl.core.read_namespaced_persistent_volume_claim("ds1", fl.ns), "PVC ds1")
    volume = eventually(
        lambda: fl.core.read_namespaced_persistent_volume_claim("ds1", fl.ns).spec.volume_name,
        "PVC ds1 bound",
    )
    attributes = fl.core.read_persistent_volume(volume).spec.csi.volume_attributes
    assert pvc.metadata.name == "ds1"
    template = app_template({"app": "reader"})
    template["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    template["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "ds1"}}]
    # No node matches: the pod stays Pending, as one kubelet cannot mount does.
    template["spec"]["nodeSelector"] = {"explain.test/never": "true"}
    deployment(fl, "reader", template)
    [pod] = eventually(lambda: live_pods(fl, "app=reader"), "the reader's pod")
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    refusal = (
        f'MountVolume.MountDevice failed for volume "{volume}" : rpc error: code = FailedPrecondition desc = '
        + clientless_message(attributes)
    )
    for event, message, when, count in (
        ("old", "MountVolume.MountDevice failed: an older failure", "2026-01-01T00:00:00Z", 1),
        ("new", refusal, "2026-01-01T00:05:00Z", 4),
    ):
        fl.core.create_namespaced_event(
            fl.ns,
            {
                "metadata": {"name": f"{name}.{event}"},
                "involvedObject": {"kind": "Pod", "name": name, "namespace": fl.ns, "uid": uid},
                "reason": "FailedMount",
                "type": "Warning",
                "message": message,
                "source": {"component": "kubelet"},
                "firstTimestamp": "2026-01-01T00:00:00Z",
                "lastTimestamp": when,
                "count": count,
            },
        )
    text = explain(kubeconfig, f"pod/{name}", "-n", fl.ns)
    assert f"Mounting:   FailedMount (x4): {refusal}" in text.splitlines()
    [reason] = why_not(text)
    assert reason.startswith("it mounts the PVC ds1 of a clientless dataset, which the CSI driver refuses")
    assert "remove the PVC from its template (deploy/reader)" in reason
    assert reason.endswith(f"run kubectl fluid inject deploy/reader --dataset ds1 -n {fl.ns}")
    report = json.loads(explain(kubeconfig, f"pod/{name}", "-n", fl.ns, "-o", "json"))
    assert report["mountFailure"] == f"FailedMount (x4): {refusal}"


def test_a_workload_is_explained_through_its_pods_or_its_failed_creates(
    fl: Fluid, kubeconfig: Path, k8s: client.ApiClient
) -> None:
    """Issue 28: explain refused deploy/app, and a workload the webhook refuses has no pod to explain."""
    batch = client.BatchV1Api(k8s)
    ready_dataset(fl, "ds1")
    asked = {names.LABEL_INJECT: "true"}
    good = app_template({"app": "web", **asked})
    good["metadata"]["annotations"] = {names.ANNOTATION_DATASET: "ds1"}
    deployment(fl, "web", good, replicas=2)
    bad = app_template({"app": "bad", **asked})
    bad["metadata"]["annotations"] = {names.ANNOTATION_DATASET: "ds9"}
    deployment(fl, "bad", bad)
    statefulset(fl, "db", {**bad, "metadata": {**bad["metadata"], "labels": {"app": "db", **asked}}})
    for label in ("agent", "once"):
        template = {**bad, "metadata": {**bad["metadata"], "labels": {"app": label, **asked}}}
        if label == "agent":
            fl.apps.create_namespaced_daemon_set(
                fl.ns,
                {
                    "metadata": {"name": label},
                    "spec": {"selector": {"matchLabels": {"app": label}}, "template": template},
                },
            )
        else:
            job_template = {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}
            batch.create_namespaced_job(
                fl.ns, {"metadata": {"name": label}, "spec": {"template": job_template}}
            )
    batch.create_namespaced_cron_job(
        fl.ns,
        {
            "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": job_template}}},
        },
    )
    eventually(lambda: len(live_pods(fl, "app=web")) == 2, "web's 2 pods")

    text = explain(kubeconfig, "deploy/web", "-n", fl.ns)
    [rs] = [
        r.metadata.name for r in fl.apps.list_namespaced_replica_set(fl.ns, label_selector="app=web").items
    ]
    assert text.splitlines()[:3] == [
        f"Workload:   {fl.ns}/deploy/web",
        f"Creator:    rs/{rs}",
        "Pods:       2 (below)",
    ]
    assert text.count("Injected:   yes: ds1") == 2
    assert why_not(text) == []
    # The ReplicaSet itself, by its long name.
    assert "Pods:       2 (below)" in explain(kubeconfig, "replicaset", rs, "-n", fl.ns)

    def refused(kind: str, name: str) -> str | None:
        said = explain(kubeconfig, f"{kind}/{name}", "-n", fl.ns)
        return said if "cannot create its pods: FailedCreate" in said else None

    for kind, name in (("deploy", "bad"), ("statefulset", "db"), ("ds", "agent"), ("jobs.batch", "once")):
        said = eventually(functools.partial(refused, kind, name), f"{kind}/{name}'s FailedCreate", timeout=90)
        assert "Pods:       <none>" in said.splitlines()
        [reason] = why_not(said)
        assert "admission webhook" in reason
        assert "denied the request" in reason
        assert f'dataset "ds9" not found in namespace "{fl.ns}"' in reason
        assert reason.endswith(
            "(the webhook refused them: do what it says, and the controller creates them on its next try)"
        )
    nightly = explain(kubeconfig, "cj/nightly", "-n", fl.ns)
    assert why_not(nightly) == ['it has run no Job yet (schedule "0 3 * * *"): its pods come from its Jobs']
    [bad_rs] = [
        r.metadata.name for r in fl.apps.list_namespaced_replica_set(fl.ns, label_selector="app=bad").items
    ]
    assert f"Creator:    rs/{bad_rs}" in explain(kubeconfig, "deploy/bad", "-n", fl.ns)

    # Pods and workloads together: a List, and kubectl's names.
    listed = json.loads(explain(kubeconfig, "deploy/web", "deployment.apps/bad", "-n", fl.ns, "-o", "json"))
    assert [(i["workload"], i["podCount"], len(i["reasons"])) for i in listed["items"]] == [
        ("deploy/web", 2, 0),
        ("deploy/bad", 0, 1),
    ]
    assert all(p["injected"] for p in listed["items"][0]["pods"])
    named = explain(kubeconfig, "deploy/web", "sts/db", "-n", fl.ns, "-o", "name")
    assert named == "deployment.apps/web\nstatefulset.apps/db\n"
    assert as_json(fl.apps.read_namespaced_deployment("bad", fl.ns))["spec"]["replicas"] == 1


def test_a_namespace_reader_who_may_not_read_pvs_gets_the_same_advice(
    fl: Fluid, kubeconfig: Path, k8s: client.ApiClient, tmp_path: Path
) -> None:
    """PVs are cluster-scoped, and a namespace's user seldom may read them: the dataset's mode (its
    runtime config, else its CacheRuntime) tells a FUSE dataset's PVC from a clientless one's."""
    ready_dataset(fl, "ds1")
    fl.create(runtime("fuse", runtime_class="curvine", clientless=False))
    fl.create({"apiVersion": names.API_VERSION, "kind": "Dataset", "metadata": {"name": "fuse"}, "spec": {}})
    eventually(lambda: fl.bound("fuse"), "Dataset fuse Bound", timeout=30)
    for claim in ("ds1", "fuse"):
        eventually(
            functools.partial(fl.core.read_namespaced_persistent_volume_claim, claim, fl.ns), f"PVC {claim}"
        )
        spec = app_template({})["spec"]
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        fl.core.create_namespaced_pod(fl.ns, {"metadata": {"name": f"on-{claim}"}, "spec": spec})
    rbac = client.RbacAuthorizationV1Api(k8s)
    rbac.create_namespaced_role(
        fl.ns,
        {
            "metadata": {"name": "reader"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["pods", "persistentvolumeclaims", "configmaps"],
                    "verbs": ["get"],
                },
                {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
                {"apiGroups": [names.GROUP], "resources": ["datasets", "cacheruntimes"], "verbs": ["get"]},
            ],
        },
    )
    fl.core.create_namespaced_service_account(fl.ns, {"metadata": {"name": "reader"}})
    rbac.create_namespaced_role_binding(
        fl.ns,
        {
            "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": fl.ns}],
        },
    )
    reader = tmp_path / "reader"
    user = {**admin_user(kubeconfig), "as": f"system:serviceaccount:{fl.ns}:reader"}
    reader.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": admin_cluster(kubeconfig)}],
                "users": [{"name": "reader", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "reader"}}],
                "current-context": "c",
            }
        )
    )
    # Its Role names no PV, StorageClass or webhook configuration: those reads are refused.
    fuse = explain(reader, "pod/on-fuse", "-n", fl.ns)
    [reason] = why_not(fuse)
    assert reason.startswith(f"it mounts the FUSE PVC fuse ({names.CSI_DRIVER})"), reason
    assert reason.endswith(f"recreate it with the label {names.LABEL_FUSE_SERVERFUL_INJECT}=true"), reason
    clientless = explain(reader, "pod/on-ds1", "-n", fl.ns)
    [reason] = why_not(clientless)
    assert reason.startswith("it mounts the PVC ds1 of a clientless dataset"), reason
