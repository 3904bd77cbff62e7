"""``kubectl fluid inject`` through a real kubectl (plugin discovery on PATH), with the controller and the
webhook running: the workload's new pods are stored with the runtime config, ``--remove`` takes it
away, ``--dry-run`` changes nothing. Assertions read the cluster with the official client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess, kubectl_binary
from tests.e2e.test_controller import Fluid
from tests.e2e.test_webhook import assert_injected, injected, ready_dataset
from tests.e2e.wait import as_json, eventually

# The venv's bin holds kubectl-fluid and kubectl_complete-fluid (console scripts of this package).
PLUGIN_DIR = Path(sys.executable).parent


def kubectl_fluid(
    kubeconfig: Path, *args: str, timeout: float = 180, plugin_dir: Path = PLUGIN_DIR
) -> subprocess.CompletedProcess[str]:
    """``kubectl fluid ARGS`` exactly as an operator runs it: kubectl finds the plugin on PATH, in
    ``plugin_dir`` first (this venv's, or another install's). (kubectl takes no flags before a
    plugin's name, so the cluster comes from KUBECONFIG.)"""
    env = {
        **os.environ,
        "PATH": f"{plugin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(kubeconfig),
    }
    return subprocess.run(
        [kubectl_binary(), "fluid", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ok(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr}"
    return run.stdout


def one_error_line(run: subprocess.CompletedProcess[str]) -> str:
    """kubectl's convention: exit 1, one ``error: …`` line on stderr, no traceback."""
    assert run.returncode == 1, run
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def fl(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess, webhook: WebhookProcess
) -> Fluid:
    return Fluid(k8s, namespace)


def app_template(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
    }


def deployment(fl: Fluid, name: str, template: dict[str, Any], replicas: int = 1) -> None:
    """A Deployment of ``template``, selecting the pods by the template's labels."""
    selector = {"matchLabels": template["metadata"]["labels"]}
    fl.apps.create_namespaced_deployment(
        fl.ns,
        {
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": selector, "template": template},
        },
    )


def statefulset(fl: Fluid, name: str, template: dict[str, Any]) -> None:
    """A StatefulSet of one pod of ``template``, selecting it by the template's labels."""
    fl.apps.create_namespaced_stateful_set(
        fl.ns,
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": 1,
                "serviceName": name,
                "selector": {"matchLabels": template["metadata"]["labels"]},
                "template": template,
            },
        },
    )


def live_pods(fl: Fluid, selector: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = as_json(fl.core.list_namespaced_pod(fl.ns, label_selector=selector))["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def test_inject_dry_run_then_inject_then_remove_a_deployment(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds1")
    labels = {"app": "x"}
    deployment(fl, "x", app_template(labels), replicas=2)
    eventually(lambda: len(live_pods(fl, "app=x")) == 2, "the Deployment's first 2 pods")
    before = as_json(fl.apps.read_namespaced_deployment("x", fl.ns))

    # --dry-run prints the merge patch and changes nothing.
    patch = json.loads(
        ok(kubectl_fluid(kubeconfig, "inject", "deploy/x", "--dataset", "ds1", "-n", fl.ns, "--dry-run"))
    )
    assert patch == {
        "spec": {
            "template": {
                "metadata": {
                    "labels": {names.LABEL_INJECT: "true"},
                    "annotations": {names.ANNOTATION_DATASET: "ds1"},
                }
            }
        }
    }
    after = as_json(fl.apps.read_namespaced_deployment("x", fl.ns))
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["spec"]["template"] == before["spec"]["template"]

    # inject --wait: patched, rollout followed, and every new pod is stored with the runtime config.
    out = ok(kubectl_fluid(kubeconfig, "inject", "deploy/x", "--dataset", "ds1", "-n", fl.ns, "--wait"))
    assert out.splitlines()[:3] == [
        "deployment.apps/x patched",
        "  + label fluid.io/inject=true",
        "  + annotation fluid.io/dataset=ds1",
    ]
    assert out.splitlines()[-1] == 'deployment "x" successfully rolled out'
    template = as_json(fl.apps.read_namespaced_deployment("x", fl.ns))["spec"]["template"]["metadata"]
    assert template["labels"][names.LABEL_INJECT] == "true"
    assert template["annotations"][names.ANNOTATION_DATASET] == "ds1"

    def injected_pods() -> list[dict[str, Any]]:
        pods = live_pods(fl, "app=x")
        return pods if len(pods) == 2 and all(injected(p) for p in pods) else []

    for pod in eventually(injected_pods, "2 live pods, all injected"):
        assert_injected_app(pod, ["ds1"])

    # Injecting again changes nothing.
    assert ok(kubectl_fluid(kubeconfig, "inject", "deploy/x", "--dataset", "ds1", "-n", fl.ns)) == (
        "deployment.apps/x patched (no change)\n"
    )

    # --remove: the template loses both, and the pods that replace the injected ones are plain.
    out = ok(kubectl_fluid(kubeconfig, "inject", "deploy/x", "--remove", "-n", fl.ns, "--wait"))
    assert "  - label fluid.io/inject (was true)" in out.splitlines()
    template = as_json(fl.apps.read_namespaced_deployment("x", fl.ns))["spec"]["template"]["metadata"]
    assert names.LABEL_INJECT not in template["labels"]
    assert names.ANNOTATION_DATASET not in (template.get("annotations") or {})

    def plain_pods() -> list[dict[str, Any]]:
        pods = live_pods(fl, "app=x")
        return pods if len(pods) == 2 and not any(injected(p) for p in pods) else []

    for pod in eventually(plain_pods, "2 live pods, none injected"):
        assert names.LABEL_INJECT_DONE not in pod["metadata"]["labels"]
        assert not any(
            e["name"].startswith(names.RUNTIME_CONFIG_PATH_ENV_PREFIX)
            for e in pod["spec"]["containers"][0].get("env") or []
        )


def assert_injected_app(pod: dict[str, Any], datasets: list[str]) -> None:
    """test_webhook's check expects its own pod shape (init containers); these pods have one container."""
    pod = {**pod, "spec": {**pod["spec"], "initContainers": pod["spec"].get("initContainers") or []}}
    assert_injected(pod, datasets)


def test_statefulset_and_cronjob_templates(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds1")
    ready_dataset(fl, "ds-2")
    statefulset(fl, "db", app_template({"app": "db"}))
    out = ok(kubectl_fluid(kubeconfig, "inject", "sts/db", "--dataset", "ds1,ds-2", "-n", fl.ns, "--wait"))
    assert "  + annotation fluid.io/dataset=ds-2,ds1" in out.splitlines()
    [pod] = eventually(
        lambda: [p for p in live_pods(fl, "app=db") if injected(p)],
        "the StatefulSet's pod, injected",
        timeout=90,
    )
    assert_injected_app(pod, ["ds-2", "ds1"])

    client.BatchV1Api(fl.apps.api_client).create_namespaced_cron_job(
        fl.ns,
        {
            "metadata": {"name": "nightly"},
            "spec": {
                "schedule": "0 3 * * *",
                "jobTemplate": {
                    "spec": {
                        "template": {
                            **app_template({}),
                            "spec": {**app_template({})["spec"], "restartPolicy": "Never"},
                        }
                    }
                },
            },
        },
    )
    ok(kubectl_fluid(kubeconfig, "inject", "cronjob/nightly", "--dataset", "ds1", "-n", fl.ns))
    cron = as_json(client.BatchV1Api(fl.apps.api_client).read_namespaced_cron_job("nightly", fl.ns))
    meta = cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]
    assert meta["labels"] == {names.LABEL_INJECT: "true"}
    assert meta["annotations"] == {names.ANNOTATION_DATASET: "ds1"}


def test_refusals_are_one_error_line_and_change_nothing(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds1")
    fl.create(
        {
            "apiVersion": names.API_VERSION,
            "kind": "Dataset",
            "metadata": {"name": "nort"},
            "spec": {},
        }
    )
    labels = {"app": "y"}
    deployment(fl, "y", app_template(labels))
    fl.core.create_namespaced_pod(fl.ns, {"metadata": {"name": "bare"}, "spec": app_template({})["spec"]})
    # The controller keeps writing status (resourceVersion moves); the spec's generation must not.
    generation = fl.apps.read_namespaced_deployment("y", fl.ns).metadata.generation

    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "deploy/y", "--dataset", "ds9", "-n", fl.ns))
    assert f'dataset "ds9" not found in namespace "{fl.ns}"' in line
    eventually(lambda: fl.condition("datasets", "nort").get("reason") == "NoRuntime", "Dataset nort NotBound")
    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "deploy/y", "--dataset", "nort", "-n", fl.ns))
    # The controller's cause, not the missing ConfigMap it leads to (issue 28).
    assert (
        f'runtime config for dataset "nort" is not ready: no CacheRuntime "nort" in namespace "{fl.ns}"'
        in line
    )
    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "rs/y", "--dataset", "ds1", "-n", fl.ns))
    assert "unsupported kind; use deploy, sts, ds, job or cronjob" in line
    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "pod/bare", "--dataset", "ds1", "-n", fl.ns))
    assert "a Pod's spec is immutable" in line
    line = one_error_line(
        kubectl_fluid(kubeconfig, "inject", "deploy/y", "--dataset", "ds1", "-n", f"{fl.ns}-nope")
    )
    assert f'namespace "{fl.ns}-nope" not found' in line
    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "deploy/nope", "--dataset", "ds1", "-n", fl.ns))
    assert f'deployments.apps "nope" not found in namespace "{fl.ns}"' in line
    assert fl.apps.read_namespaced_deployment("y", fl.ns).metadata.generation == generation


def test_a_dataset_the_pods_name_already_is_checked_too_and_one_being_deleted_is_refused(
    fl: Fluid, kubeconfig: Path
) -> None:
    """Issue 28: after Dataset ds-old was deleted, adding ds-new printed
    ``~ annotation fluid.io/dataset=ds-new,ds-old`` and exited 0, and every new pod was refused."""
    from kubernetes.client.exceptions import ApiException

    for name in ("ds-old", "ds-new", "ds-held"):
        ready_dataset(fl, name)
    # No pods: a running pod that uses ds-old would hold its deletion (DatasetInUse, item 5); the
    # template names it all the same.
    deployment(fl, "z", app_template({"app": "z"}), replicas=0)
    ok(kubectl_fluid(kubeconfig, "inject", "deploy/z", "--dataset", "ds-old", "-n", fl.ns))
    fl.delete("datasets", "ds-old")

    def gone() -> bool:
        try:
            fl.get("datasets", "ds-old")
        except ApiException as e:
            return bool(e.status == 404)
        return False

    eventually(gone, "Dataset ds-old deleted")
    generation = fl.apps.read_namespaced_deployment("z", fl.ns).metadata.generation
    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "deploy/z", "--dataset", "ds-new", "-n", fl.ns))
    assert line.startswith(
        f'error: dataset "ds-old" not found in namespace "{fl.ns}" (its pods name it already: '
    )
    assert "`kubectl fluid inject deployment.apps/z --remove --dataset ds-old` takes it away" in line
    assert fl.apps.read_namespaced_deployment("z", fl.ns).metadata.generation == generation

    # As the error says: taken away, the same inject goes through.
    ok(kubectl_fluid(kubeconfig, "inject", "deploy/z", "--remove", "--dataset", "ds-old", "-n", fl.ns))
    out = ok(kubectl_fluid(kubeconfig, "inject", "deploy/z", "--dataset", "ds-new", "-n", fl.ns))
    assert "  + annotation fluid.io/dataset=ds-new" in out.splitlines()

    # A Dataset whose deletion waits (a finalizer of the test's own) is not a new user's to pick.
    kept = fl.get("datasets", "ds-held")["metadata"].get("finalizers") or []
    fl.patch("datasets", "ds-held", {"metadata": {"finalizers": [*kept, "test.fluid.io/hold"]}})
    fl.delete("datasets", "ds-held")
    try:
        line = one_error_line(
            kubectl_fluid(kubeconfig, "inject", "deploy/z", "--dataset", "ds-held", "-n", fl.ns)
        )
        assert 'error: dataset "ds-held" is being deleted (since ' in line
        assert "pick another dataset, or create it again once it is gone" in line
        # And kubectl fluid datasets says Terminating, where it said Bound (issue 28).
        rows = [r.split() for r in ok(kubectl_fluid(kubeconfig, "datasets", "-n", fl.ns)).splitlines()]
        assert {r[0]: r[3] for r in rows[1:]}["ds-held"] == "Terminating"
    finally:
        held = fl.get("datasets", "ds-held")["metadata"].get("finalizers") or []
        fl.patch(
            "datasets",
            "ds-held",
            {"metadata": {"finalizers": [f for f in held if f != "test.fluid.io/hold"]}},
        )


def test_wait_fails_at_once_with_the_reason_the_new_pods_cannot_be_created(
    fl: Fluid, kubeconfig: Path
) -> None:
    """Issue 28: --wait timed out without showing why the ReplicaSet created no pod. A full pod
    quota leaves the rollout no room for its surge pod: the API server refuses it, and --wait says so
    as soon as the Deployment shows it, with the server's words."""
    ready_dataset(fl, "ds1")
    deployment(fl, "q", app_template({"app": "q"}))
    eventually(lambda: len(live_pods(fl, "app=q")) == 1, "the Deployment's pod")
    # A quota as large as what the namespace holds now (the dataset's own pods count too).
    fl.core.create_namespaced_resource_quota(
        fl.ns, {"metadata": {"name": "full"}, "spec": {"hard": {"pods": "100"}}}
    )

    def used() -> str | None:
        status = fl.core.read_namespaced_resource_quota("full", fl.ns).status
        return (status.used or {}).get("pods") if status else None

    now = eventually(used, "the quota's usage counted")
    fl.core.patch_namespaced_resource_quota("full", fl.ns, {"spec": {"hard": {"pods": now}}})
    eventually(
        lambda: (fl.core.read_namespaced_resource_quota("full", fl.ns).status.hard or {}).get("pods") == now,
        "the quota's new limit in force",
    )
    run = kubectl_fluid(
        kubeconfig, "inject", "deploy/q", "--dataset", "ds1", "-n", fl.ns, "--wait", "--timeout=120s"
    )
    assert run.returncode == 1, run
    assert run.stdout.startswith("deployment.apps/q patched\n")
    [line] = run.stderr.splitlines()
    assert line.startswith('error: deployment "q" cannot create its pods: pods "q-'), line
    assert "exceeded quota: full" in line


def test_wait_on_a_statefulset_fails_at_once_with_its_controllers_failed_create(
    fl: Fluid, kubeconfig: Path
) -> None:
    """Issue 28, item 2, for the kinds without a ReplicaFailure condition: the StatefulSet's controller
    says why it could not create the new pod only in an Event (here a quota that wants cpu requests,
    which the pods do not give); --wait ends with its words instead of timing out."""
    ready_dataset(fl, "ds1")
    statefulset(fl, "s", app_template({"app": "s"}))
    eventually(lambda: len(live_pods(fl, "app=s")) == 1, "the StatefulSet's pod")
    fl.core.create_namespaced_resource_quota(
        fl.ns, {"metadata": {"name": "cpu"}, "spec": {"hard": {"requests.cpu": "1"}}}
    )
    eventually(
        lambda: (fl.core.read_namespaced_resource_quota("cpu", fl.ns).status.hard or {}).get("requests.cpu"),
        "the quota in force",
    )
    run = kubectl_fluid(
        kubeconfig, "inject", "sts/s", "--dataset", "ds1", "-n", fl.ns, "--wait", "--timeout=120s"
    )
    assert run.returncode == 1, run
    assert run.stdout.startswith("statefulset.apps/s patched\n")
    [line] = run.stderr.splitlines()
    assert line.startswith(
        "error: statefulset.apps/s cannot create its pods: Create Pod s-0 in StatefulSet s"
    ), line
    assert "must specify requests.cpu" in line, line


def test_a_started_job_is_refused_and_left_unchanged(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds1")
    template = app_template({"app": "once"})
    template["spec"]["restartPolicy"] = "Never"
    batch = client.BatchV1Api(fl.core.api_client)
    batch.create_namespaced_job(fl.ns, {"metadata": {"name": "once"}, "spec": {"template": template}})
    # kube-controller-manager's job controller starts it (its pods run on the kwok nodes).
    eventually(lambda: batch.read_namespaced_job("once", fl.ns).status.start_time, "the Job started", 60)
    before = as_json(batch.read_namespaced_job("once", fl.ns))["spec"]["template"]["metadata"]

    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "job/once", "--dataset", "ds1", "-n", fl.ns))
    assert "a Job's template is immutable once it has started" in line
    assert as_json(batch.read_namespaced_job("once", fl.ns))["spec"]["template"]["metadata"] == before


def test_inject_fuse_labels_a_workload_mounting_a_fluid_pvc(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds1")
    eventually(lambda: fl.core.read_namespaced_persistent_volume_claim("ds1", fl.ns), "PVC ds1")
    labels = {"app": "trainer"}
    template = app_template(labels)
    template["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    template["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "ds1"}}]
    deployment(fl, "trainer", template)
    out = ok(kubectl_fluid(kubeconfig, "inject", "deploy/trainer", "--fuse", "-n", fl.ns))
    assert out == "deployment.apps/trainer patched\n  + label fuse.serverful.fluid.io/inject=true\n"
    meta = as_json(fl.apps.read_namespaced_deployment("trainer", fl.ns))["spec"]["template"]["metadata"]
    assert meta["labels"] == {**labels, names.LABEL_FUSE_SERVERFUL_INJECT: "true"}

    # The rollout's new pod is stored with HostToContainer on the mount of the Fluid PVC. (Its
    # volume never binds on this cluster's fake nodes: the stored pod is what the webhook made.)
    def propagated() -> list[dict[str, Any]]:
        pods = [
            p
            for p in live_pods(fl, "app=trainer")
            if names.LABEL_FUSE_SERVERFUL_INJECT in p["metadata"]["labels"]
        ]
        return [p for p in pods if p["spec"]["containers"][0]["volumeMounts"][0].get("mountPropagation")]

    [pod] = eventually(propagated, "the new pod, with mount propagation")
    assert pod["spec"]["containers"][0]["volumeMounts"][0]["mountPropagation"] == "HostToContainer"

    out = ok(kubectl_fluid(kubeconfig, "inject", "deploy/trainer", "--fuse", "--remove", "-n", fl.ns))
    assert out == "deployment.apps/trainer patched\n  - label fuse.serverful.fluid.io/inject (was true)\n"

    # A workload without a Fluid PVC is refused, and left as it was.
    deployment(fl, "plain", app_template({"app": "p"}), replicas=0)
    line = one_error_line(kubectl_fluid(kubeconfig, "inject", "deploy/plain", "--fuse", "-n", fl.ns))
    assert "deployment.apps/plain mounts no volume of curvine.csi.fluid.io" in line
    assert fl.apps.read_namespaced_deployment("plain", fl.ns).metadata.generation == 1


def test_a_dotted_dataset_name_is_refused_by_the_api_server_and_by_the_plugin(
    fl: Fluid, kubeconfig: Path
) -> None:
    with pytest.raises(client.ApiException) as refused:
        fl.create(
            {
                "apiVersion": names.API_VERSION,
                "kind": "Dataset",
                "metadata": {"name": "a.b"},
                "spec": {},
            }
        )
    assert refused.value.status == 422
    assert names.DATASET_NAME_NOT_DNS_1035_MESSAGE in json.loads(refused.value.body)["message"]

    # The plugin says the same before it asks the cluster anything: even a namespace that does not
    # exist is not looked up.
    line = one_error_line(
        kubectl_fluid(kubeconfig, "inject", "deploy/y", "--dataset", "a.b", "-n", f"{fl.ns}-nope")
    )
    assert line == f'error: dataset "a.b": {names.DATASET_NAME_NOT_DNS_1035_MESSAGE}'
