"""DataLoads against the real API server (kwok nodes complete a Job's pods at once): the phases, the
Job the class's DataLoad spec makes, one DataLoad at a time per Dataset (upstream's lock in the
Dataset's status.operationRef), a class without a DataLoad spec, deleting a running one, and
``kubectl fluid load --wait``. The controller runs as its ServiceAccount with the RBAC of manifests/."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import MANIFESTS, ControllerProcess, wait_until_gone
from tests.e2e.test_cli_inject import kubectl_fluid, ok, one_error_line
from tests.e2e.test_controller import GROUP, VERSION, Fluid, dataset, runtime
from tests.e2e.wait import eventually

LOADER = {"name": "DataLoad", "image": "busybox:1", "command": ["sh", "-c"], "args": ["echo loading"]}


@pytest.fixture(scope="module")
def load_class(fluid: Path, k8s: client.ApiClient) -> Iterator[str]:
    """Mooncake's sample class with a DataLoad spec (the sample itself has none)."""
    custom = client.CustomObjectsApi(k8s)
    body = yaml.safe_load((MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml").read_text())
    name = f"loads-{secrets.token_hex(3)}"
    body["metadata"] = {"name": name}
    body["dataOperationSpecs"] = [LOADER]
    custom.create_cluster_custom_object(GROUP, VERSION, "cacheruntimeclasses", body)
    try:
        yield name
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "cacheruntimeclasses", name)


class Loads(Fluid):
    def load(self, name: str, dataset_name: str, **spec: Any) -> None:
        body = {
            "apiVersion": names.API_VERSION,
            "kind": "DataLoad",
            "metadata": {"name": name},
            "spec": {"dataset": {"name": dataset_name}, **spec},
        }
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, "dataloads", body)

    def phase(self, name: str) -> str:
        return str((self.get("dataloads", name).get("status") or {}).get("phase") or "")

    def holder(self, dataset_name: str) -> str | None:
        refs = (self.get("datasets", dataset_name).get("status") or {}).get("operationRef") or {}
        return refs.get("DataLoad")

    def ready(self, name: str, runtime_class: str) -> None:
        self.create(dataset(name))
        self.create(runtime(name, runtime_class))
        eventually(
            lambda: self.condition("cacheruntimes", name).get("status") == "True", f"{name} Ready", timeout=60
        )
        eventually(lambda: self.bound(name), f"{name} Bound", timeout=30)


@pytest.fixture
def fl(k8s: client.ApiClient, namespace: str, controller: ControllerProcess) -> Loads:
    return Loads(k8s, namespace)


def test_a_dataload_runs_the_classes_job_with_the_runtime_config_and_completes(
    fl: Loads, load_class: str
) -> None:
    fl.ready("ds1", load_class)
    fl.load("warm", "ds1", target=[{"path": "/a", "replicas": 2}], loadMetadata=True)
    eventually(lambda: fl.phase("warm") == "Complete", "DataLoad warm Complete", timeout=60)
    status = fl.get("dataloads", "warm")["status"]
    assert status["duration"].endswith("s")
    assert status["duration"] != "Unfinished"
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("Complete", "True")]
    job = client.BatchV1Api(fl.custom.api_client).read_namespaced_job("warm-loader-job", fl.ns).to_dict()
    pod = job["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert (main["image"], main["command"], main["args"]) == (
        LOADER["image"],
        LOADER["command"],
        LOADER["args"],
    )
    env = {e["name"]: e["value"] for e in main["env"]}
    assert env["FLUID_DATALOAD_DATA_PATH"] == "/a"
    assert env["FLUID_DATALOAD_PATH_REPLICAS"] == "2"
    assert env["FLUID_DATALOAD_METADATA"] == "true"
    assert env["FLUID_RUNTIME_CONFIG_PATH"] == "/etc/fluid/config/runtime.json"
    assert pod["volumes"][0]["config_map"]["name"] == names.runtime_config_configmap("ds1")
    assert job["metadata"]["owner_references"][0]["kind"] == "DataLoad"
    # The Event follows the status write that ended it: waited for, as a user's describe would be.
    eventually(
        lambda: any("DataOperationSucceed" in e for e in fl.events("warm")), "warm's Event", timeout=30
    )
    assert fl.holder("ds1") is None  # released


def test_two_at_once_serialize_and_deleting_the_running_one_stops_its_job(fl: Loads, load_class: str) -> None:
    fl.ready("ds2", load_class)
    # The first one's pod fits no node: its Job runs until the DataLoad is deleted.
    fl.load("stuck", "ds2", nodeSelector={"no-such-node": "true"})
    eventually(lambda: fl.phase("stuck") == "Executing", "stuck Executing", timeout=30)
    fl.load("next", "ds2")
    eventually(lambda: fl.phase("next") == "Pending", "next Pending", timeout=30)
    eventually(
        lambda: any("DataOperationWaiting" in e and "stuck" in e for e in fl.events("next")),
        "next says what it waits for",
        timeout=30,
    )
    assert fl.holder("ds2") == "stuck"
    batch = client.BatchV1Api(fl.custom.api_client)
    eventually(
        lambda: fl.core.list_namespaced_pod(fl.ns, label_selector="release=stuck-loader").items, "stuck's pod"
    )
    assert fl.phase("next") == "Pending"

    fl.delete("dataloads", "stuck")
    wait_until_gone(batch.read_namespaced_job, "stuck-loader-job", fl.ns, what="stuck's Job")
    eventually(
        lambda: not fl.core.list_namespaced_pod(fl.ns, label_selector="release=stuck-loader").items,
        "stuck's pods gone",
        timeout=60,
    )
    eventually(lambda: fl.phase("next") == "Complete", "next runs once the lock is free", timeout=60)
    assert fl.holder("ds2") is None


def test_a_dataload_made_with_its_dataset_waits_for_it_to_be_ready_then_runs(
    fl: Loads, load_class: str
) -> None:
    fl.load("early", "ds6")  # before the Dataset exists
    fl.create(dataset("ds6"))
    fl.create(runtime("ds6", load_class))
    eventually(
        lambda: any("DataOperationWaiting" in e for e in fl.events("early")),
        "early says it waits",
        timeout=30,
    )
    eventually(lambda: fl.phase("early") == "Complete", "early Complete once ds6 is Ready", timeout=90)


def test_a_cron_dataload_runs_its_cronjobs_jobs_one_after_another(fl: Loads, load_class: str) -> None:
    fl.ready("ds7", load_class)
    fl.load("nightly", "ds7", policy="Cron", schedule="* * * * *")
    batch = client.BatchV1Api(fl.custom.api_client)
    cronjob = eventually(lambda: batch.read_namespaced_cron_job("nightly-loader-job", fl.ns), "its CronJob")
    assert cronjob.spec.schedule == "* * * * *"
    assert cronjob.metadata.owner_references[0].kind == "DataLoad"

    def completed_after(before: str | None) -> str | None:
        status = fl.get("dataloads", "nightly").get("status") or {}
        scheduled = status.get("lastScheduleTime")
        done = status.get("phase") == "Complete" and scheduled and scheduled != before
        return str(scheduled) if done else None

    first = eventually(lambda: completed_after(None), "the first scheduled run Complete", timeout=120)
    assert fl.holder("ds7") is None
    second = eventually(lambda: completed_after(first), "the next scheduled run Complete", timeout=120)
    assert first is not None
    assert second is not None
    assert second > first
    status = fl.get("dataloads", "nightly")["status"]
    assert status["lastSuccessfulTime"] >= second
    assert [c["type"] for c in status["conditions"]] == ["Complete"]


def test_a_class_without_a_dataload_spec_fails_it_with_the_reason(fl: Loads) -> None:
    fl.ready("ds3", "mooncake")
    fl.load("nope", "ds3")
    eventually(lambda: fl.phase("nope") == "Failed", "nope Failed", timeout=30)
    (cond,) = fl.get("dataloads", "nope")["status"]["conditions"]
    assert cond["reason"] == "DataOperationNotSupport"
    assert "no dataOperationSpecs entry named DataLoad" in cond["message"]
    eventually(
        lambda: any("Warning DataOperationNotSupport" in e for e in fl.events("nope")),
        "nope's Event",
        timeout=30,
    )
    batch = client.BatchV1Api(fl.custom.api_client)
    assert batch.list_namespaced_job(fl.ns).items == []


def test_kubectl_fluid_load_creates_one_and_waits_for_its_end(
    fl: Loads, fluid: Path, load_class: str
) -> None:
    fl.ready("ds4", load_class)
    run = kubectl_fluid(fluid, "load", "ds4", "/x", "/y", "--wait", "-n", fl.ns)
    out = ok(run)
    created, done = out.splitlines()
    assert created.startswith("dataload.data.fluid.io/ds4-load-")
    assert created.endswith(" created")
    name = created.split("/")[1].split()[0]
    assert done.startswith(f"dataload.data.fluid.io/{name} complete in ")
    assert "Complete" in run.stderr  # the progress lines
    assert fl.get("dataloads", name)["spec"]["target"] == [{"path": "/x"}, {"path": "/y"}]

    fl.ready("ds5", "mooncake")
    run = kubectl_fluid(fluid, "load", "ds5", "--wait", "-n", fl.ns)
    assert run.returncode == 1, run
    *progress, last = run.stderr.splitlines()
    assert last.startswith("error: dataload ds5-load-")
    assert "failed: DataOperationNotSupport" in last
    assert [p.split()[1] for p in progress][-1] == "Failed"  # progress lines before it, no traceback
    line = one_error_line(kubectl_fluid(fluid, "load", "missing", "-n", fl.ns))
    assert 'dataset "missing"' in line
