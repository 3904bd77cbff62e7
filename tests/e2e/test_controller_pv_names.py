"""Two Datasets whose PV names collide: ``{namespace}-{name}`` is ``X-a-data`` for ``X``/``a-data`` and
for ``X-a``/``data``. The first keeps its PV untouched; the newcomer reports NameConflict, naming the
holder, and takes the name once the first Dataset is gone."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import E2E_NAMESPACE_LABEL, ControllerProcess, wait_until_gone
from tests.e2e.test_controller import Fluid, dataset, quiet, runtime
from tests.e2e.wait import as_json, eventually

PV_WRITES = ("fluid_controller_api_writes_total", {"resource": "persistentvolumes"})


@pytest.fixture
def fl(k8s: client.ApiClient, namespace: str, controller: ControllerProcess) -> Fluid:
    return Fluid(k8s, namespace)


def pv_state(core: client.CoreV1Api, name: str) -> tuple[Any, ...]:
    try:
        pv = as_json(core.read_persistent_volume(name))
    except client.ApiException as e:
        if e.status == 404:
            return ("gone",)
        raise
    attributes = pv["spec"]["csi"]["volumeAttributes"]
    return (
        pv["metadata"]["uid"],
        pv["metadata"].get("deletionTimestamp"),
        attributes[names.VOLUME_ATTR_DATASET_NAMESPACE],
        attributes[names.VOLUME_ATTR_DATASET_NAME],
        pv["status"].get("phase"),
    )


def create_bound(fl: Fluid, name: str) -> None:
    fl.create(dataset(name))
    fl.create(runtime(name))
    eventually(lambda: fl.bound(name), f"Dataset {name} Bound", timeout=90)
    eventually(
        lambda: fl.core.read_namespaced_persistent_volume_claim(name, fl.ns).status.phase == "Bound",
        f"PVC {name} bound to its PV",
        timeout=60,
    )


def name_conflict(fl: Fluid, plural: str, name: str) -> dict[str, Any]:
    eventually(
        lambda: fl.condition(plural, name).get("reason") == "NameConflict",
        f"NameConflict on {plural}/{name}",
        timeout=30,
    )
    condition = fl.condition(plural, name)
    assert condition["status"] == "False"
    return condition


def test_a_taken_pv_name_is_a_name_conflict_on_the_newcomer_and_the_holder_keeps_its_pv(
    fl: Fluid, controller: ControllerProcess, k8s: client.ApiClient
) -> None:
    quiet(fl, controller)  # earlier tests' teardown deletes PVs: let it finish before counting writes
    first_ns, other_ns = fl.ns, f"{fl.ns}-a"
    pv_name = names.dataset_pv(first_ns, "a-data")
    assert pv_name == names.dataset_pv(other_ns, "data")
    fl.core.create_namespace({"metadata": {"name": other_ns, "labels": {E2E_NAMESPACE_LABEL: "true"}}})
    other = Fluid(k8s, other_ns)
    try:
        create_bound(fl, "a-data")
        held = pv_state(fl.core, pv_name)
        assert held[1:] == (None, first_ns, "a-data", "Bound")
        writes = controller.metric(*PV_WRITES)

        eventually(
            lambda: other.core.read_namespaced_service_account("default", other_ns), "ServiceAccount default"
        )
        other.create(dataset("data"))
        other.create(runtime("data"))
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < 10:
            now = pv_state(fl.core, pv_name)
            claim = fl.core.read_namespaced_persistent_volume_claim("a-data", first_ns).status.phase
            assert (now, claim) == (held, "Bound"), (
                f"{elapsed:.1f}s after the newcomer: PV {now}, PVC {claim}"
            )
            time.sleep(0.5)

        holder = f"PersistentVolume {pv_name} is held by Dataset {first_ns}/a-data"
        assert holder in name_conflict(other, "cacheruntimes", "data")["message"]
        assert holder in name_conflict(other, "datasets", "data")["message"]
        assert (other.get("datasets", "data").get("status") or {}).get("phase") == "NotBound"
        events = eventually(
            lambda: [e for e in other.events("data") if e.startswith("Warning NameConflict")], "the Event"
        )
        assert holder in events[0]
        # Neither the newcomer's PVC (it would wait on a PV it can never bind) nor a PV write.
        assert other.core.list_namespaced_persistent_volume_claim(other_ns).items == []
        time.sleep(3)
        assert pv_state(fl.core, pv_name) == held
        assert controller.metric(*PV_WRITES) == writes
        print(f"holder's PV {held[0]} unchanged {time.monotonic() - started:.0f}s after the newcomer")

        # Once the holder is gone the name is free: the newcomer converges on its own.
        fl.delete("datasets", "a-data")
        eventually(lambda: other.bound("data"), "the newcomer Bound once the name is free", timeout=90)
        eventually(
            lambda: (
                other.core.read_namespaced_persistent_volume_claim("data", other_ns).status.phase == "Bound"
            ),
            "the newcomer's PVC bound to the PV",
            timeout=60,
        )
        taken = pv_state(fl.core, pv_name)
        assert (taken[0] != held[0], taken[2:4]) == (True, (other_ns, "data"))

        # First come, first served: a Dataset a-data made again now finds the name taken, and its
        # deletion (the finalizer cleans up "its" PV) leaves the holder's PV alone.
        wait_until_gone(fl.get, "datasets", "a-data", what="the first Dataset deleted")
        fl.create(dataset("a-data"))
        fl.create(runtime("a-data"))
        assert f"is held by Dataset {other_ns}/data" in name_conflict(fl, "datasets", "a-data")["message"]
        fl.delete("datasets", "a-data")
        wait_until_gone(fl.get, "datasets", "a-data", what="the second a-data deleted")
        assert pv_state(fl.core, pv_name) == taken
    finally:
        fl.core.delete_namespace(other_ns)


def test_a_pv_another_manager_made_is_never_touched_and_its_name_is_taken_once_it_is_gone(
    fl: Fluid,
) -> None:
    pv_name = names.dataset_pv(fl.ns, "u1")
    foreign = {
        "metadata": {"name": pv_name, "labels": {"owner": "someone-else"}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": "/tmp/someone-else"},
        },
    }
    created = fl.core.create_persistent_volume(foreign)
    try:
        fl.create(dataset("u1"))
        fl.create(runtime("u1"))
        condition = name_conflict(fl, "cacheruntimes", "u1")
        assert f"PersistentVolume {pv_name} is not managed by {names.MANAGED_BY}" in condition["message"]
        kept = as_json(fl.core.read_persistent_volume(pv_name))
        assert kept["metadata"]["labels"] == {"owner": "someone-else"}
        assert kept["spec"] == as_json(created)["spec"]
        # The PV controller writes its status; the fluid-controller never writes to it at all.
        managers = {entry["manager"] for entry in kept["metadata"]["managedFields"]}
        assert names.CONTROLLER_FIELD_MANAGER not in managers, managers
    finally:
        fl.core.delete_persistent_volume(pv_name)
    # That PV is not watched (it lacks our labels): the controller looks again on its own.
    eventually(lambda: fl.bound("u1"), "Dataset u1 Bound once the name is free", timeout=60)
    pv = as_json(fl.core.read_persistent_volume(pv_name))
    assert pv["spec"]["csi"]["volumeAttributes"][names.VOLUME_ATTR_DATASET_NAME] == "u1"
