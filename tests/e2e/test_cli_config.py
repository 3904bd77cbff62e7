"""``kubectl fluid config show``, ``datasets`` and ``explain`` through a real kubectl, against what the
controller and the webhook really made (read back with the official client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess
from tests.e2e.test_cli_inject import kubectl_fluid, ok, one_error_line
from tests.e2e.test_controller import Fluid, runtime
from tests.e2e.test_webhook import create, pod, ready_dataset
from tests.e2e.wait import eventually


@pytest.fixture
def fl(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess, webhook: WebhookProcess
) -> Fluid:
    return Fluid(k8s, namespace)


def test_config_show_prints_exactly_what_the_controller_stored(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds1")
    data = eventually(lambda: fl.configmap("ds1").get("data"), "the runtime config ConfigMap")

    shown = kubectl_fluid(kubeconfig, "config", "show", "ds1", "-n", fl.ns)
    assert ok(shown) == data[names.RUNTIME_SH_KEY]
    assert shown.stderr == ""

    pretty = ok(kubectl_fluid(kubeconfig, "config", "show", "ds1", "-n", fl.ns, "--format", "json"))
    assert json.loads(pretty) == json.loads(data[names.RUNTIME_JSON_KEY])
    assert pretty.startswith('{\n    "')  # pretty (kubectl's indent), where the stored one is compact
    assert "\n" not in data[names.RUNTIME_JSON_KEY]

    env = ok(kubectl_fluid(kubeconfig, "config", "show", "ds1", "-n", fl.ns, "--env"))
    assert env.splitlines() == [
        *(f"{name}=/etc/fluid/config/ds1/runtime.sh" for name in names.runtime_config_env_names("ds1")),
        "FLUID_SCOPED_CONFIG_PATH_DS1=/etc/fluid/config/ds1/runtime-scoped.sh",
    ]
    scoped = ok(kubectl_fluid(kubeconfig, "config", "show", "ds1", "-n", fl.ns, "--format", "scoped"))
    assert scoped == data[names.RUNTIME_SCOPED_SH_KEY]
    assert "export FLUID_DS1_MASTER_NAME=" in scoped
    # The same names and values the webhook really gave a pod.
    stored = create(fl, pod("check", datasets="ds1"))
    given = {e["name"]: e["value"] for e in stored["spec"]["containers"][0]["env"]}
    assert all(given[line.split("=", 1)[0]] == line.split("=", 1)[1] for line in env.splitlines())


def test_config_show_errors(fl: Fluid, kubeconfig: Path) -> None:
    fl.create(
        {
            "apiVersion": names.API_VERSION,
            "kind": "Dataset",
            "metadata": {"name": "nort"},
            "spec": {},
        }
    )
    line = one_error_line(kubectl_fluid(kubeconfig, "config", "show", "ds9", "-n", fl.ns))
    assert line.startswith(f'error: dataset "ds9" not found in namespace "{fl.ns}"')
    assert "kubectl fluid datasets -A" in line
    eventually(lambda: fl.condition("datasets", "nort").get("reason") == "NoRuntime", "Dataset nort NotBound")
    line = one_error_line(kubectl_fluid(kubeconfig, "config", "show", "nort", "-n", fl.ns))
    # The controller's cause, not the missing ConfigMap it leads to (issue 28).
    assert (
        f'runtime config for dataset "nort" is not ready: no CacheRuntime "nort" in namespace "{fl.ns}"'
        in line
    )
    line = one_error_line(kubectl_fluid(kubeconfig, "config", "show", "ds1", "-n", f"{fl.ns}-nope"))
    assert f'namespace "{fl.ns}-nope" not found' in line


def test_datasets_and_explain(fl: Fluid, kubeconfig: Path) -> None:
    ready_dataset(fl, "ds1")
    fl.create(runtime("fuse", runtime_class="curvine", clientless=False))
    fl.create(
        {
            "apiVersion": names.API_VERSION,
            "kind": "Dataset",
            "metadata": {"name": "fuse"},
            "spec": {},
        }
    )
    eventually(lambda: fl.bound("fuse"), "Dataset fuse Bound", timeout=30)
    create(fl, pod("injected", datasets="ds1"))
    fl.core.create_namespaced_pod(fl.ns, pod("plain", datasets="ds1", inject=False))

    rows = [line.split() for line in ok(kubectl_fluid(kubeconfig, "datasets", "-n", fl.ns)).splitlines()]
    assert rows[0] == ["NAME", "RUNTIMECLASS", "MODE", "PHASE", "CONFIG-READY", "INJECTED-PODS", "AGE"]
    by_name = {r[0]: r[1:6] for r in rows[1:]}
    assert by_name == {
        "ds1": ["mooncake", "Clientless", "Bound", "True", "1"],
        "fuse": ["curvine", "FUSE", "Bound", "True", "0"],
    }
    listed = json.loads(ok(kubectl_fluid(kubeconfig, "datasets", "-A", "-o", "json")))
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    # Each item an object of the plugin's own kind, named as its Dataset (issue 28: kindless rows).
    assert {(i["apiVersion"], i["kind"]) for i in listed["items"]} == {
        (names.CLI_API_VERSION, names.KIND_DATASET_SUMMARY)
    }
    mine = [i for i in listed["items"] if i["metadata"]["namespace"] == fl.ns]
    assert [(i["metadata"]["name"], i["injectedPods"]) for i in mine] == [("ds1", ["injected"]), ("fuse", [])]
    created = fl.get("datasets", "ds1")["metadata"]["creationTimestamp"]
    assert mine[0]["metadata"]["creationTimestamp"] == created
    assert ok(kubectl_fluid(kubeconfig, "datasets", "-n", fl.ns, "-o", "name")).split() == [
        "dataset.data.fluid.io/ds1",
        "dataset.data.fluid.io/fuse",
    ]

    report: dict[str, Any] = json.loads(
        ok(kubectl_fluid(kubeconfig, "explain", "pod/injected", "-n", fl.ns, "-o", "json"))
    )
    assert (report["injected"], report["injectedDatasets"], report["reasons"]) == (True, ["ds1"], [])
    text = ok(kubectl_fluid(kubeconfig, "explain", "pod/plain", "-n", fl.ns))
    assert "Injected:   no" in text
    assert "it has no label fluid.io/inject=true, so the webhook never saw it" in text
    both = json.loads(
        ok(kubectl_fluid(kubeconfig, "explain", "pod/injected", "pod/plain", "-n", fl.ns, "-o", "json"))
    )
    assert [(i["name"], i["injected"]) for i in both["items"]] == [("injected", True), ("plain", False)]
    line = one_error_line(kubectl_fluid(kubeconfig, "explain", "pod/ghost", "-n", fl.ns))
    assert f'pod "ghost" not found in namespace "{fl.ns}"' in line
