"""A runtime.sh that would break every exec in the pod is refused: the CacheRuntime and its Dataset
say which variable, which field and which limit, and the last good ConfigMap stays as it was."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from kubectl_fluid.runtimeconfig.limits import MAX_ARG_STRLEN
from tests.e2e.fluid import ControllerProcess
from tests.e2e.test_controller import Fluid, dataset, runtime
from tests.e2e.wait import eventually


@pytest.fixture
def fl(k8s: client.ApiClient, namespace: str, controller: ControllerProcess) -> Fluid:
    return Fluid(k8s, namespace)


def test_an_option_over_the_kernel_limit_is_refused_and_the_last_good_configmap_stays(fl: Fluid) -> None:
    fl.create(dataset("big"))
    fl.create(runtime("big", master={"replicas": 1, "options": {"blob": "small"}}))
    eventually(lambda: fl.bound("big"), "Dataset big Bound", timeout=30)
    good = fl.configmap("big")
    assert '"blob":"small"' in good["data"][names.RUNTIME_JSON_KEY]

    fl.patch("cacheruntimes", "big", {"spec": {"master": {"options": {"blob": "x" * MAX_ARG_STRLEN}}}})
    condition = eventually(
        lambda: (c := fl.condition("cacheruntimes", "big")).get("reason") == "RuntimeConfigTooLarge" and c,
        "RuntimeConfigTooLarge on the CacheRuntime",
        timeout=30,
    )
    message = condition["message"]
    assert condition["status"] == "False"
    assert "runtime.sh variable MASTER_OPTIONS is too long" in message
    assert "spec.master.options" in message
    assert 'largest entry "blob"' in message
    assert f"over {MAX_ARG_STRLEN} bytes (MAX_ARG_STRLEN)" in message
    assert fl.condition("datasets", "big")["reason"] == "RuntimeConfigTooLarge"
    eventually(
        lambda: any(e.startswith("Warning RuntimeConfigTooLarge") for e in fl.events("big")), "the Event"
    )
    # Loses nothing: pods keep sourcing the last good runtime.sh.
    kept = fl.configmap("big")
    assert kept["metadata"]["resourceVersion"] == good["metadata"]["resourceVersion"]
    assert kept["data"] == good["data"]

    fl.patch("cacheruntimes", "big", {"spec": {"master": {"options": {"blob": "fixed"}}}})
    eventually(
        lambda: '"blob":"fixed"' in fl.configmap("big")["data"][names.RUNTIME_JSON_KEY],
        "the fixed option in the ConfigMap",
        timeout=30,
    )
    eventually(lambda: fl.condition("cacheruntimes", "big").get("status") == "True", "Ready again")
