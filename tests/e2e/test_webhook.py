"""The webhook through the real kube-apiserver: pods that ask for datasets are stored with the runtime
config injected, or refused with a reason; other pods never reach it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import ControllerProcess, WebhookProcess, kubectl_binary
from tests.e2e.test_controller import Fluid, dataset, runtime
from tests.e2e.wait import as_json, eventually

SH = "/etc/fluid/config/{}/runtime.sh"


@pytest.fixture
def fl(
    k8s: client.ApiClient, namespace: str, controller: ControllerProcess, webhook: WebhookProcess
) -> Fluid:
    return Fluid(k8s, namespace)


def ready_dataset(fl: Fluid, name: str) -> None:
    fl.create(dataset(name))
    fl.create(runtime(name))
    eventually(lambda: fl.bound(name), f"Dataset {name} Bound", timeout=30)


def pod(
    name: str | None = None, datasets: str | None = "ds1", inject: bool = True, **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {names.LABEL_INJECT: "true"} if inject else {}}
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = "gen-"
    if datasets is not None:
        meta["annotations"] = {names.ANNOTATION_DATASET: datasets}
    spec = {
        "containers": [
            {"name": "app", "image": "registry.k8s.io/pause:3.10"},
            {"name": "side", "image": "x"},
        ],
        "initContainers": [{"name": "init", "image": "x"}, {"name": "fluid-fuse-0", "image": "x"}],
        **extra,
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def denial(e: client.ApiException) -> str:
    """The API server's message for a refused request (the webhook's words are inside it)."""
    return str(json.loads(e.body)["message"])


def create(fl: Fluid, body: dict[str, Any]) -> dict[str, Any]:
    created = as_json(fl.core.create_namespaced_pod(fl.ns, body))
    stored: dict[str, Any] = as_json(fl.core.read_namespaced_pod(created["metadata"]["name"], fl.ns))
    return stored


def injected(p: dict[str, Any]) -> list[str]:
    return sorted(
        v["configMap"]["name"].removeprefix(names.RUNTIME_CONFIG_PREFIX)
        for v in p["spec"].get("volumes", [])
        if (v.get("configMap") or {}).get("name", "").startswith(names.RUNTIME_CONFIG_PREFIX)
    )


def assert_injected(p: dict[str, Any], datasets: list[str]) -> None:
    assert injected(p) == datasets
    assert p["metadata"]["labels"][names.LABEL_INJECT_DONE] == "true"
    for c in p["spec"]["containers"] + p["spec"]["initContainers"]:
        mounts = {
            m["mountPath"]: m
            for m in c.get("volumeMounts", [])
            if m["name"].startswith(names.RUNTIME_CONFIG_PREFIX)
        }
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        if c["name"].startswith(names.FUSE_CONTAINER_PREFIX):
            assert not mounts, c["name"]
            continue
        assert sorted(mounts) == [f"/etc/fluid/config/{ds}/" for ds in datasets], c["name"]
        assert all(m["readOnly"] for m in mounts.values())
        for ds in datasets:
            for env_name in names.runtime_config_env_names(ds):
                assert env[env_name] == SH.format(ds), (c["name"], env_name)


def test_a_labelled_pod_is_stored_with_its_runtime_config(fl: Fluid) -> None:
    ready_dataset(fl, "ds1")
    ready_dataset(fl, "ds-2")
    stored = create(fl, pod("p1", datasets="ds1, ds-2"))
    assert_injected(stored, ["ds-2", "ds1"])
    # ds-2 is not a shell name: the shell-safe variable is there too.
    env = {e["name"] for e in stored["spec"]["containers"][0]["env"]}
    assert {"FLUID_RUNTIME_CONFIG_PATH_ds-2", "FLUID_RUNTIME_CONFIG_PATH_DS_2"} <= env

    # generateName only, duplicates, spaces and the fluid.io/datasets alias.
    body = pod(datasets=None)
    body["metadata"]["annotations"] = {names.ANNOTATION_DATASETS: " ds1 ,ds1,, ds-2 "}
    assert_injected(create(fl, body), ["ds-2", "ds1"])


def test_pods_of_a_deployment_are_injected(fl: Fluid) -> None:
    ready_dataset(fl, "ds1")
    template = pod("unused", datasets="ds1")
    del template["metadata"]["name"]
    fl.apps.create_namespaced_deployment(
        fl.ns,
        {
            "metadata": {"name": "app"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {
                        **template["metadata"],
                        "labels": {**template["metadata"]["labels"], "app": "x"},
                    },
                    "spec": template["spec"],
                },
            },
        },
    )

    def two_pods() -> list[dict[str, Any]]:
        # The namespace also holds the cache's own pods (the StatefulSets of ds1).
        listed = fl.core.list_namespaced_pod(fl.ns, label_selector="app=x")
        items: list[dict[str, Any]] = as_json(listed)["items"]
        return items if len(items) == 2 else []

    for p in eventually(two_pods, "the Deployment's 2 pods"):
        assert_injected(p, ["ds1"])


def test_a_second_pass_changes_nothing(fl: Fluid, webhook: WebhookProcess, k8s: client.ApiClient) -> None:
    ready_dataset(fl, "ds1")
    webhook.register(copies=2)  # two webhooks: every pod passes through us twice
    admission = client.AdmissionregistrationV1Api(k8s)
    # The new entry comes without a caBundle; the webhook's own loop patches it in.
    eventually(lambda: webhook.ca_bundle_patched(admission), "caBundle on both webhooks", timeout=30)
    try:
        before = webhook.metric("fluid_webhook_admissions_total")
        unchanged = webhook.metric("fluid_webhook_admissions_total", {"result": "unchanged"})
        stored = create(fl, pod("twice", datasets="ds1"))
        assert webhook.metric("fluid_webhook_admissions_total") >= before + 2
        # The second pass checks the pod again (issue 27, item 9) and finds it right as the API server
        # keeps it (our volume with its default mode): an empty patch.
        assert webhook.metric("fluid_webhook_admissions_total", {"result": "unchanged"}) == unchanged + 1
        assert_injected(stored, ["ds1"])
        assert len(stored["spec"]["volumes"]) == len({v["name"] for v in stored["spec"]["volumes"]})
    finally:
        webhook.register(copies=1)


def test_refusals_say_what_is_missing(fl: Fluid) -> None:
    with pytest.raises(client.ApiException) as e:
        create(fl, pod("p", datasets="ds9"))
    assert f'dataset "ds9" not found in namespace "{fl.ns}"' in denial(e.value)

    fl.create(dataset("nort"))  # a Dataset without a runtime has no runtime config
    with pytest.raises(client.ApiException) as e:
        create(fl, pod("p", datasets="nort"))
    assert 'runtime config for dataset "nort" is not ready' in denial(e.value)

    # Once the controller has said why (NotBound, NoRuntime), the denial gives its words, not the
    # ConfigMap that is missing because of it (issue 28, item 7).
    def refusal() -> str:
        try:
            fl.core.create_namespaced_pod(fl.ns, pod("p", datasets="nort"), dry_run="All")
        except client.ApiException as refused:
            return denial(refused)
        return "admitted"

    def told() -> str | None:
        words = refusal()
        return words if 'no CacheRuntime "nort"' in words else None

    said = eventually(told, "the denial giving the controller's cause", timeout=30) or ""
    assert 'runtime config for dataset "nort" is not ready: no CacheRuntime "nort"' in said, said

    fl.create(dataset("nosh"))
    fl.core.create_namespaced_config_map(
        fl.ns,
        {
            "metadata": {
                "name": names.runtime_config_configmap("nosh"),
                "labels": {names.LABEL_APP_MANAGED_BY: names.MANAGED_BY},
            },
            "data": {"runtime.json": "{}"},
        },
    )
    with pytest.raises(client.ApiException) as e:
        create(fl, pod("p", datasets="nosh"))
    assert "runtime.sh" in denial(e.value)

    with pytest.raises(client.ApiException) as e:
        create(fl, pod("p", datasets="other/ds1"))
    assert fl.ns in denial(e.value)
    assert not fl.core.list_namespaced_pod(fl.ns, label_selector=names.LABEL_INJECT).items


def test_a_dataset_created_just_before_its_pod_is_found(fl: Fluid) -> None:
    fl.create(dataset("fresh"))
    fl.create(runtime("fresh"))
    eventually(
        lambda: fl.core.read_namespaced_config_map(names.runtime_config_configmap("fresh"), fl.ns),
        "the ConfigMap",
        timeout=30,
    )
    assert_injected(create(fl, pod("p", datasets="fresh")), ["fresh"])


def test_unlabelled_pods_never_reach_the_webhook_and_a_label_without_dataset_warns(
    fl: Fluid, webhook: WebhookProcess, kubeconfig: Path
) -> None:
    before = webhook.metric("fluid_webhook_admissions_total")
    stored = create(fl, pod("plain", inject=False, datasets="ds1"))
    assert webhook.metric("fluid_webhook_admissions_total") == before
    assert injected(stored) == []

    run = subprocess.run(
        [kubectl_binary(), f"--kubeconfig={kubeconfig}", "-n", fl.ns, "create", "-f", "-"],
        input=json.dumps(pod("nods", datasets=None)),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Warning:" in run.stderr
    assert names.ANNOTATION_DATASET in run.stderr
    assert injected(as_json(fl.core.read_namespaced_pod("nods", fl.ns))) == []


def test_bad_requests_get_400_and_the_server_keeps_serving(webhook: WebhookProcess) -> None:
    path = names.WEBHOOK_MUTATE_PATH
    assert webhook.request("POST", path, b"{not json")[0] == 400
    assert webhook.request("POST", path, json.dumps({"kind": "AdmissionReview"}).encode())[0] == 400
    assert webhook.request("POST", path, b"x" * (5 * 1024 * 1024))[0] == 400
    assert webhook.get("/healthz")[0] == 200
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "namespace": "default",
            "operation": "CREATE",
            "object": pod("p", inject=False, datasets=None),
        },
    }
    status, body = webhook.request("POST", path, json.dumps(review).encode())
    assert status == 200
    assert json.loads(body)["response"] == {"uid": "u-1", "allowed": True}


def test_with_the_webhook_down_labelled_pods_are_refused_and_others_created(
    fl: Fluid, webhook: WebhookProcess
) -> None:
    ready_dataset(fl, "ds1")
    eventually(lambda: fl.core.read_namespaced_persistent_volume_claim("ds1", fl.ns), "PVC ds1")
    webhook.stop()
    try:
        # Every entry fails closed, for the pods that opted in with its label.
        for label in names.WEBHOOK_ENTRIES.values():
            body = claim_pod(
                f"refused-{label.partition('/')[0].replace('.', '-')}", "ds1", labels={label: "true"}
            )
            with pytest.raises(client.ApiException) as e:
                create(fl, body)
            assert "failed calling webhook" in denial(e.value), label
        assert injected(create(fl, pod("unlabelled", inject=False))) == []
        assert propagation(create(fl, claim_pod("unlabelled-claim", "ds1"))) == [None, None]
    finally:
        webhook.start()
        webhook.wait_ready()
    assert_injected(create(fl, pod("back", datasets="ds1")), ["ds1"])


def test_a_pod_naming_5000_datasets_gets_one_short_denial_and_the_next_pod_is_injected(
    fl: Fluid, webhook: WebhookProcess
) -> None:
    """Issue 11: such a pod once kept the webhook busy for more than 20 minutes, and every labelled pod
    after it was refused with "context deadline exceeded"."""
    ready_dataset(fl, "ds1")
    gets = webhook.metric("fluid_webhook_api_requests_total")
    many = ",".join(f"ds-{i}" for i in range(5000))
    started = time.monotonic()
    with pytest.raises(client.ApiException) as e:
        create(fl, pod("many", datasets=many))
    print(f"5000 names: denied after {time.monotonic() - started:.3f}s")
    message = denial(e.value)
    assert len(message.encode()) < 1024, message
    assert "pod names 5000 datasets; at most 64 are allowed per pod" in message
    assert webhook.metric("fluid_webhook_api_requests_total") == gets, "nothing is looked up"

    assert_injected(create(fl, pod("next", datasets="ds1")), ["ds1"])
    assert webhook.get("/healthz") == (200, b"ok\n")

    # Twenty missing datasets cost a GET each, and their twenty reasons are named in part.
    with pytest.raises(client.ApiException) as e:
        create(fl, pod("twenty", datasets=",".join(f"nx-{i:02}" for i in range(20))))
    message = denial(e.value)
    assert len(message.encode()) < 1024, message
    assert f'dataset "nx-00" not found in namespace "{fl.ns}"' in message
    assert "more datasets not ready" in message

    # A name no Dataset can have is refused for what it is, before any lookup.
    gets = webhook.metric("fluid_webhook_api_requests_total")
    with pytest.raises(client.ApiException) as e:
        create(fl, pod("dotted", datasets="ds1,a.b"))
    assert f'dataset name "a.b": {names.DATASET_NAME_NOT_DNS_1035_MESSAGE}' in denial(e.value)
    assert webhook.metric("fluid_webhook_api_requests_total") == gets


def claim_pod(name: str, claim: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod mounting ``claim`` in an app and an init container (and an emptyDir beside it)."""
    mounts = [{"name": "data", "mountPath": "/data"}, {"name": "scratch", "mountPath": "/scratch"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "volumeMounts": mounts}],
            "initContainers": [{"name": "init", "image": "x", "volumeMounts": mounts[:1]}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": claim}},
                {"name": "scratch", "emptyDir": {}},
            ],
        },
    }


def propagation(p: dict[str, Any]) -> list[str | None]:
    """mountPropagation of the ``data`` mount, in the app container then the init container."""
    return [
        next(m.get("mountPropagation") for m in c["volumeMounts"] if m["name"] == "data")
        for c in (*p["spec"]["containers"], *p["spec"]["initContainers"])
    ]


SERVERFUL = {names.LABEL_FUSE_SERVERFUL_INJECT: "true"}


def test_a_pod_asking_for_propagation_gets_host_to_container_on_its_fluid_pvc_mounts(
    fl: Fluid, webhook: WebhookProcess
) -> None:
    ready_dataset(fl, "ds1")
    eventually(lambda: fl.core.read_namespaced_persistent_volume_claim("ds1", fl.ns), "PVC ds1")

    # The webhook tells a Fluid PVC from its watch cache; a server-side dry run asks it without storing.
    def seen() -> bool:
        body = claim_pod("dry", "ds1", SERVERFUL)
        return propagation(as_json(fl.core.create_namespaced_pod(fl.ns, body, dry_run="All")))[0] is not None

    eventually(seen, "the webhook to know PVC ds1", timeout=30)
    stored = create(fl, claim_pod("fuse-app", "ds1", SERVERFUL))
    assert propagation(stored) == ["HostToContainer", "HostToContainer"]
    scratch = [m for m in stored["spec"]["containers"][0]["volumeMounts"] if m["name"] == "scratch"]
    assert "mountPropagation" not in scratch[0]
    assert stored["metadata"]["annotations"][names.ANNOTATION_DATASETS_IN_USE] == "ds1"

    # Without the label the pod reaches the webhook through the propagation entry (issue 28, item 1)
    # and gets the same; with upstream's opt-out label it is never sent.
    before = webhook.metric("fluid_webhook_admissions_total")
    plain = create(fl, claim_pod("plain", "ds1"))
    assert webhook.metric("fluid_webhook_admissions_total") == before + 1
    assert propagation(plain) == ["HostToContainer", "HostToContainer"]
    opted_out = create(fl, claim_pod("opted-out", "ds1", {names.LABEL_ENABLE_INJECTION: names.FALSE}))
    assert webhook.metric("fluid_webhook_admissions_total") == before + 1
    assert propagation(opted_out) == [None, None]

    # Labelled but refused: a pod that names a dataset of another namespace is not admitted either.
    body = claim_pod("foreign", "ds1", SERVERFUL)
    body["metadata"]["annotations"] = {names.ANNOTATION_DATASET: "other/ds1"}
    with pytest.raises(client.ApiException) as e:
        create(fl, body)
    assert "points to another namespace" in denial(e.value)


def test_a_pod_that_asked_for_nothing_gets_host_to_container_on_a_claim_of_the_drivers_storageclass(
    fl: Fluid, webhook: WebhookProcess
) -> None:
    """Issue 28, item 1: a Deployment's pods mounting a claim of a StorageClass the driver provisions
    (the sample's), no label and no mountPropagation written; another driver's claim is left alone,
    and a pod with no claim never reaches the webhook (matchConditions)."""
    storage = client.StorageV1Api(fl.core.api_client)
    ours, theirs = f"curvine-{fl.ns}", f"local-{fl.ns}"
    for name, provisioner in ((ours, names.CSI_DRIVER), (theirs, "rancher.io/local-path")):
        body = {
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        storage.create_storage_class(body)
    try:
        for claim, storage_class in (("cv", ours), ("other", theirs)):
            fl.core.create_namespaced_persistent_volume_claim(
                fl.ns,
                {
                    "metadata": {"name": claim},
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "storageClassName": storage_class,
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                },
            )

        def seen() -> bool:
            stored = as_json(fl.core.create_namespaced_pod(fl.ns, claim_pod("dry", "cv"), dry_run="All"))
            return propagation(stored)[0] is not None

        eventually(seen, "the webhook to know claim cv and its StorageClass", timeout=30)
        assert propagation(create(fl, claim_pod("trainer", "cv"))) == ["HostToContainer", "HostToContainer"]
        assert propagation(create(fl, claim_pod("elsewhere", "other"))) == [None, None]
        before = webhook.metric("fluid_webhook_admissions_total")
        assert injected(create(fl, pod("no-claim", inject=False, datasets=None))) == []
        assert webhook.metric("fluid_webhook_admissions_total") == before
    finally:
        for name in (ours, theirs):
            storage.delete_storage_class(name)
