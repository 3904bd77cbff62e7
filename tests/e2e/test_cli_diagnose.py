"""``kubectl fluid diagnose`` through a real kubectl on the kwok session cluster, with the controller
and the webhook as local processes: each API-level rule provoked for real (the fault made, not
simulated), found with its ID and exit status 1, and cleared, exit 0, once the fault is fixed.
Rules about pods that run (master, workers, client, mountUFS) are test_real_node_diagnose's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess
from tests.e2e.test_cli_inject import kubectl_fluid
from tests.e2e.test_controller import Fluid, dataset, runtime
from tests.e2e.test_webhook import pod, ready_dataset
from tests.e2e.wait import eventually


@pytest.fixture
def fl(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess, webhook: WebhookProcess
) -> Fluid:
    return Fluid(k8s, namespace)


def diagnose(kubeconfig: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """(exit status, the DiagnoseReport) of ``kubectl fluid diagnose ARGS -o json``."""
    run = kubectl_fluid(kubeconfig, "diagnose", *args, "-o", "json")
    assert run.returncode in (0, 1), f"exit {run.returncode}: {run.stderr}"
    report: dict[str, Any] = json.loads(run.stdout)
    # The status follows the report: 1 exactly when it has an error.
    assert run.returncode == (1 if report["summary"]["errors"] else 0), report
    return run.returncode, report


def rules(report: dict[str, Any]) -> list[str]:
    return [f["rule"] for f in report["findings"]]


def found(kubeconfig: Path, rule: str, *args: str) -> dict[str, Any]:
    """The finding of ``rule``, waited for (what the controller writes comes a moment later)."""

    def has() -> dict[str, Any] | None:
        code, report = diagnose(kubeconfig, *args)
        hit = next((f for f in report["findings"] if f["rule"] == rule), None)
        return hit if hit is not None and (hit["severity"] != "error" or code == 1) else None

    hit: dict[str, Any] = eventually(has, f"diagnose {' '.join(args)} finds {rule}", timeout=60, interval=1)
    return hit


def clean(kubeconfig: Path, *args: str) -> None:
    """Wait for no finding at all, exit 0."""

    def none() -> bool:
        code, report = diagnose(kubeconfig, *args)
        return code == 0 and not report["findings"]

    eventually(none, f"diagnose {' '.join(args)} clean", timeout=60, interval=1)


def text(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl_fluid(kubeconfig, "diagnose", *args)


def test_runtime_missing_then_its_class_missing_then_bound(fl: Fluid, kubeconfig: Path) -> None:
    fl.create(dataset("ds"))
    hit = found(kubeconfig, "runtime-missing", "dataset", "ds", "-n", fl.ns)
    assert hit["object"] == {"kind": "Dataset", "name": "ds", "namespace": fl.ns}
    run = text(kubeconfig, "dataset", "ds", "-n", fl.ns)
    assert run.returncode == 1
    assert run.stdout.startswith(f"ERROR    runtime-missing  Dataset {fl.ns}/ds: ")
    assert run.stdout.endswith("\n1 error\n")
    fl.create(runtime("ds", runtime_class="no-such-class"))
    hit = found(kubeconfig, "runtime-class-missing", "dataset", "ds", "-n", fl.ns)
    assert "CacheRuntimeClass no-such-class: not found (kubectl get cacheruntimeclasses)" in hit["evidence"]
    assert rules(diagnose(kubeconfig, "dataset", "ds", "-n", fl.ns)[1]) == ["runtime-class-missing"]
    fl.patch("cacheruntimes", "ds", {"spec": {"runtimeClassName": "mooncake"}})
    eventually(lambda: fl.bound("ds"), "ds Bound", timeout=60)
    clean(kubeconfig, "dataset", "ds", "-n", fl.ns)
    run = text(kubeconfig, "dataset", "ds", "-n", fl.ns)
    assert (run.returncode, run.stdout) == (0, "No problems found.\n")


def test_a_dataset_the_controller_does_not_bind(
    fl: Fluid, kubeconfig: Path, controller: ControllerProcess
) -> None:
    """The controller down: a new Dataset with its runtime and class stays without a phase."""
    controller.stop()
    fl.create(dataset("late"))
    fl.create(runtime("late"))
    hit = found(kubeconfig, "dataset-not-bound", "dataset", "late", "-n", fl.ns)
    assert f"Dataset {fl.ns}/late status.phase: <none>" in hit["evidence"]
    assert "fluid-controller" in hit["advice"]
    controller.start()
    controller.wait_ready()
    eventually(lambda: fl.bound("late"), "late Bound", timeout=60)
    clean(kubeconfig, "dataset", "late", "-n", fl.ns)


def test_a_failed_dataload(fl: Fluid, kubeconfig: Path) -> None:
    """Mooncake's sample class has no DataLoad spec: the controller fails a DataLoad of its dataset."""
    ready_dataset(fl, "ds")
    body = {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND_DATALOAD,
        "metadata": {"name": "warm"},
        "spec": {"dataset": {"name": "ds"}},
    }
    fl.custom.create_namespaced_custom_object(names.GROUP, names.VERSION, fl.ns, "dataloads", body)
    hit = found(kubeconfig, "dataload-failed", "dataset", "ds", "-n", fl.ns)
    assert hit["object"] == {"kind": "DataLoad", "name": "warm", "namespace": fl.ns}
    assert any("reason DataOperationNotSupport" in e for e in hit["evidence"]), hit
    fl.delete("dataloads", "warm")
    clean(kubeconfig, "dataset", "ds", "-n", fl.ns)


def test_a_pod_labelled_after_its_creation_has_no_config(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds")
    # Bound comes before the runtime's pods are Ready (kwok marks them a moment later; under CI's
    # load, later still): until then master-not-ready is true, and the namespace's report says so.
    clean(kubeconfig, "dataset", "ds", "-n", fl.ns)
    fl.core.create_namespaced_pod(fl.ns, pod("app", datasets="ds", inject=False))
    fl.core.patch_namespaced_pod("app", fl.ns, {"metadata": {"labels": {names.LABEL_INJECT: names.TRUE}}})
    hit = found(kubeconfig, "pod-inject-without-config", "pod", "app", "-n", fl.ns)
    assert hit["object"] == {"kind": "Pod", "name": "app", "namespace": fl.ns}
    assert "recreate it" in hit["advice"]
    code, report = diagnose(kubeconfig, "-n", fl.ns)  # the namespace finds it too
    assert (code, rules(report)) == (1, ["pod-inject-without-config"])
    fl.core.delete_namespaced_pod("app", fl.ns, grace_period_seconds=0)
    eventually(
        lambda: not fl.core.list_namespaced_pod(fl.ns, field_selector="metadata.name=app").items, "gone"
    )
    fl.core.create_namespaced_pod(fl.ns, pod("app", datasets="ds"))
    clean(kubeconfig, "pod", "app", "-n", fl.ns)
    clean(kubeconfig, "-n", fl.ns)


def test_the_webhook_down_then_its_ca_bundle_gone_then_back(
    fl: Fluid, kubeconfig: Path, webhook: WebhookProcess, k8s: client.ApiClient
) -> None:
    admission = client.AdmissionregistrationV1Api(k8s)
    try:
        webhook.stop()
        hit = found(kubeconfig, "webhook-unreachable", "-n", fl.ns)
        assert hit["object"] == {"kind": "MutatingWebhookConfiguration", "name": names.WEBHOOK_NAME}
        assert "failed calling webhook" in hit["evidence"][0]
        hooks = admission.read_mutating_webhook_configuration(webhook.config_name).webhooks
        admission.patch_mutating_webhook_configuration(
            webhook.config_name,
            [{"op": "remove", "path": f"/webhooks/{i}/clientConfig/caBundle"} for i in range(len(hooks))],
        )
        hit = found(kubeconfig, "webhook-cabundle-missing", "-n", fl.ns)
        assert len(hit["evidence"]) == len(hooks)
        # The cause alone: an unreachable webhook is what a missing caBundle looks like too.
        assert rules(diagnose(kubeconfig, "-n", fl.ns)[1]) == ["webhook-cabundle-missing"]
    finally:
        webhook.start()
        webhook.register()
        webhook.wait_ready()
        eventually(lambda: webhook.ca_bundle_patched(admission), "caBundle patched", timeout=60)
    clean(kubeconfig, "-n", fl.ns)


def test_unknown_names_and_targets_are_errors(fl: Fluid, kubeconfig: Path) -> None:
    run = text(kubeconfig, "dataset", "nope", "-n", fl.ns)
    assert (run.returncode, run.stderr) == (
        1,
        f'error: dataset "nope" not found in namespace "{fl.ns}"; check the name, or the namespace (-n)\n',
    )
    run = text(kubeconfig, "deploy", "x")
    assert run.returncode == 1
    assert run.stderr.startswith("error: diagnose takes dataset NAME, pod NAME")
