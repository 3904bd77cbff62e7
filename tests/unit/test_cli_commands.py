"""The verbs end to end against an in-memory API (paths → objects), for the flows a cluster makes hard
to stage: a conflicting writer, a started Job, RBAC gaps, and exactly which requests each verb sends."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubectl_fluid.api import names
from kubectl_fluid.cli.injection import merge_patch
from kubectl_fluid.cli.main import main
from kubectl_fluid.cli.settings import Session, Settings
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.errors import ApiError
from kubectl_fluid.kube.kubeconfig import Access
from kubectl_fluid.kube.resources import JOBS, REPLICASETS

NS = "team-a"
DEPLOY = resources.DEPLOYMENTS.object_path(NS, "web")


class FakeApi:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str]] = []
        self.forbidden: set[str] = set()
        self.conflicts = 0  # PATCHes to refuse with 409 before accepting

    def _check(self, method: str, path: str) -> None:
        self.calls.append((method, path))
        if any(path.startswith(p) for p in self.forbidden):
            raise ApiError(403, "Forbidden", f"{path} is forbidden", method=method, path=path)

    def get(self, path: str, params: Any = None) -> dict[str, Any] | None:
        self._check("GET", path)
        return copy.deepcopy(self.objects.get(path))

    def pages(self, path: str, params: Any = None, *, codec: Any = None) -> Iterator[list[dict[str, Any]]]:
        # ``codec`` picks the wire format, and whole objects are a superset of any reduced one.
        yield self.list(path, params)  # as the real one: nothing is asked before the first page is wanted

    def list(self, path: str, params: Any = None) -> list[dict[str, Any]]:
        self._check("LIST", path)
        return [copy.deepcopy(o) for p, o in sorted(self.objects.items()) if p.rpartition("/")[0] == path]

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self._check(method, path)
        assert method == "PATCH"
        if self.conflicts:
            self.conflicts -= 1
            self.objects[path]["metadata"]["resourceVersion"] = "changed-by-someone"
            raise ApiError(409, "Conflict", "the object has been modified", method=method, path=path)
        body = copy.deepcopy(kwargs["body"])
        assert body["metadata"]["resourceVersion"] == self.objects[path]["metadata"]["resourceVersion"]
        del body["metadata"]
        if (kwargs.get("params") or {}).get("dryRun") == "All":
            return merge_patch(self.objects[path], body)
        self.objects[path] = merge_patch(self.objects[path], body)
        self.objects[path]["metadata"]["resourceVersion"] += "+"
        return copy.deepcopy(self.objects[path])

    def __enter__(self) -> FakeApi:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def ready_dataset(name: str) -> dict[str, dict[str, Any]]:
    return {
        resources.DATASETS.object_path(NS, name): {"metadata": {"name": name, "namespace": NS}},
        resources.CONFIGMAPS.object_path(NS, names.runtime_config_configmap(name)): {
            "metadata": {"name": names.runtime_config_configmap(name), "namespace": NS},
            "data": {
                names.RUNTIME_SH_KEY: "#!/bin/sh\nexport A='x'\n",
                names.RUNTIME_JSON_KEY: '{"b":1,"a":[]}',
            },
        },
    }


def workload(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": NS, "resourceVersion": "1"},
        "spec": {"template": {"metadata": {"labels": {"app": "web", **(labels or {})}}}},
    }


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    webhook = resources.MUTATING_WEBHOOK_CONFIGURATIONS.object_path(None, names.WEBHOOK_NAME)
    fake = FakeApi({DEPLOY: workload(), **ready_dataset("ds1"), webhook: {"webhooks": [{}]}})
    access = Access(server="https://x", namespace=NS, context="c")

    def open_session(self: Settings) -> Session:
        return Session(fake, self.namespace or NS, access)  # type: ignore[arg-type]

    monkeypatch.setattr(Settings, "open", open_session)
    return fake


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def template(api: FakeApi) -> dict[str, Any]:
    meta: dict[str, Any] = api.objects[DEPLOY]["spec"]["template"]["metadata"]
    return meta


def test_inject_checks_then_patches_and_says_what_changed(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    assert code == 0
    assert out == (
        "deployment.apps/web patched\n  + label fluid.io/inject=true\n  + annotation fluid.io/dataset=ds1\n"
    )
    assert template(api)["labels"] == {"app": "web", names.LABEL_INJECT: "true"}
    assert template(api)["annotations"] == {names.ANNOTATION_DATASET: "ds1"}
    assert [c for c in api.calls if c[0] == "PATCH"] == [("PATCH", DEPLOY)]
    # Again: nothing to do, nothing sent.
    api.calls.clear()
    assert (
        run(capsys, "inject", "deploy/web", "--dataset", "ds1")[1]
        == "deployment.apps/web patched (no change)\n"
    )
    assert "PATCH" not in {c[0] for c in api.calls}


def test_dry_run_prints_the_patch_and_changes_nothing(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    before = copy.deepcopy(api.objects)
    code, out, err = run(capsys, "inject", "--dry-run", "deploy/web", "--dataset", "ds1")
    assert code == 0
    assert json.loads(out) == {
        "spec": {
            "template": {
                "metadata": {
                    "labels": {names.LABEL_INJECT: "true"},
                    "annotations": {names.ANNOTATION_DATASET: "ds1"},
                }
            }
        }
    }
    assert err.startswith("deployment.apps/web patched (dry run)\n")
    assert api.objects == before
    code, out, _ = run(capsys, "inject", "deploy/web", "--dataset", "ds1", "--dry-run=server", "-o", "name")
    assert (code, out) == (0, "deployment.apps/web\n")
    assert api.objects == before


def test_a_concurrent_writer_is_never_overwritten(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.conflicts = 1
    code, _, _ = run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    assert code == 0
    assert [c[0] for c in api.calls].count("PATCH") == 2
    assert template(api)["annotations"] == {names.ANNOTATION_DATASET: "ds1"}
    api.conflicts = 5
    code, _, err = run(capsys, "inject", "deploy/web", "--remove")
    assert code == 1
    assert (
        err
        == "error: the object has been modified; someone else changed it meanwhile, run the command again\n"
    )


def test_remove_and_output_formats(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    code, out, err = run(capsys, "inject", "deploy/web", "--remove", "--dataset", "ds1,ds7", "-o", "json")
    assert code == 0
    assert names.LABEL_INJECT not in json.loads(out)["spec"]["template"]["metadata"]["labels"]
    assert err == "Warning: deployment.apps/web does not name ds7; nothing to remove for them\n"


def test_unknown_dataset_or_unready_config_refuse_before_any_write(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.objects[resources.NAMESPACES.object_path(None, NS)] = {"metadata": {"name": NS}}
    code, _, err = run(capsys, "inject", "deploy/web", "--dataset", "ds1,ds9")
    assert code == 1
    assert err == (
        f'error: dataset "ds9" not found in namespace "{NS}": create the Dataset in {NS} or pick its '
        "namespace with -n (kubectl fluid datasets -A)\n"
    )
    del api.objects[resources.CONFIGMAPS.object_path(NS, names.runtime_config_configmap("ds1"))]
    code, _, err = run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    assert (
        'runtime config for dataset "ds1" is not ready: ConfigMap fluid-runtime-config-ds1 not found' in err
    )
    assert "PATCH" not in {c[0] for c in api.calls}


def test_missing_workload_or_namespace(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.objects[resources.NAMESPACES.object_path(None, NS)] = {"metadata": {"name": NS}}
    assert run(capsys, "inject", "sts/web", "--dataset", "ds1")[2] == (
        f'error: statefulsets.apps "web" not found in namespace "{NS}"; '
        "check the name, or the namespace (-n)\n"
    )
    assert run(capsys, "inject", "deploy/web", "--dataset", "ds1", "-n", "elsewhere")[2] == (
        'error: namespace "elsewhere" not found; pass an existing namespace with -n\n'
    )


def test_a_started_job_is_refused_a_suspended_one_is_patched(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    job = JOBS.object_path(NS, "once")
    api.objects[job] = {**workload(), "status": {"startTime": "2024-01-01T00:00:00Z"}}
    code, _, err = run(capsys, "inject", "job/once", "--dataset", "ds1")
    assert code == 1
    assert "a Job's template is immutable once it has started" in err
    api.objects[job] = {**workload(), "spec": {**workload()["spec"], "suspend": True}}
    code, out, err = run(capsys, "inject", "job/once", "--dataset", "ds1", "--wait")
    assert code == 0
    assert out.startswith("job.batch/once patched\n")
    assert (
        err
        == "Warning: job.batch/once has no rollout to wait for: pods created when it runs get the change\n"
    )


def test_a_namespace_the_webhook_skips_is_refused(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.objects[resources.MUTATING_WEBHOOK_CONFIGURATIONS.object_path(None, names.WEBHOOK_NAME)] = {
        "webhooks": [
            {
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [NS]}
                    ]
                }
            }
        ]
    }
    code, _, err = run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    assert code == 1
    assert f'does not serve namespace "{NS}"' in err


def named(api: FakeApi, datasets: str) -> None:
    """The workload's template names ``datasets`` already, as an earlier inject left it."""
    template = api.objects[DEPLOY]["spec"]["template"]["metadata"]
    template["labels"][names.LABEL_INJECT] = names.TRUE
    template["annotations"] = {names.ANNOTATION_DATASET: datasets}
    api.objects[resources.NAMESPACES.object_path(None, NS)] = {"metadata": {"name": NS}}


def test_adding_a_dataset_checks_those_the_pods_name_already(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: after Dataset "gone" was deleted, adding another printed
    ``~ annotation fluid.io/dataset=gone,ds1`` and exited 0; every new pod was then refused."""
    named(api, "gone")
    before = copy.deepcopy(api.objects[DEPLOY])
    code, out, err = run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    assert (code, out) == (1, "")
    assert err.startswith(f'error: dataset "gone" not found in namespace "{NS}" (its pods name it already: ')
    assert "`kubectl fluid inject deployment.apps/web --remove --dataset gone` takes it away" in err
    assert api.objects[DEPLOY] == before  # nothing patched
    assert not [c for c in api.calls if c[0] == "PATCH"]

    # Taken away as the error says, the same inject goes through.
    assert run(capsys, "inject", "deploy/web", "--remove", "--dataset", "gone")[0] == 0
    assert run(capsys, "inject", "deploy/web", "--dataset", "ds1")[0] == 0
    assert api.objects[DEPLOY]["spec"]["template"]["metadata"]["annotations"] == {
        names.ANNOTATION_DATASET: "ds1"
    }


def test_a_dataset_being_deleted_is_refused(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    since = "2026-12-04T10:00:00Z"
    api.objects[resources.NAMESPACES.object_path(None, NS)] = {"metadata": {"name": NS}}
    api.objects[resources.DATASETS.object_path(NS, "ds1")]["metadata"]["deletionTimestamp"] = since
    code, _, err = run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    assert code == 1
    assert err == (
        f'error: dataset "ds1" is being deleted (since {since}): pick another dataset, or create it again '
        f"once it is gone (kubectl fluid datasets -n {NS})\n"
    )
    assert not [c for c in api.calls if c[0] == "PATCH"]


def test_inject_gives_the_controllers_cause_for_a_not_bound_dataset(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: inject said "ConfigMap fluid-runtime-config-noclass not found" while the Dataset's
    condition already named the missing CacheRuntimeClass."""
    api.objects[resources.NAMESPACES.object_path(None, NS)] = {"metadata": {"name": NS}}
    cause = 'CacheRuntimeClass "nope" not found: set spec.runtimeClassName to an existing class (one of: x)'
    api.objects[resources.DATASETS.object_path(NS, "noclass")] = {
        "metadata": {"name": "noclass", "namespace": NS},
        "status": {
            "phase": "NotBound",
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "RuntimeClassNotFound", "message": cause}
            ],
        },
    }
    code, _, err = run(capsys, "inject", "deploy/web", "--dataset", "noclass")
    assert code == 1
    assert err.startswith(f'error: runtime config for dataset "noclass" is not ready: {cause}: ')


def test_a_client_dry_run_with_o_prints_the_object_as_it_would_be(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    """As kubectl's -o with --dry-run (issue 28: it printed the patch); without -o, the patch."""
    code, out, _ = run(capsys, "inject", "deploy/web", "--dataset", "ds1", "--dry-run", "-o", "json")
    assert code == 0
    template = json.loads(out)["spec"]["template"]["metadata"]
    assert template["labels"] == {"app": "web", names.LABEL_INJECT: names.TRUE}
    assert template["annotations"] == {names.ANNOTATION_DATASET: "ds1"}
    assert json.loads(out)["metadata"]["name"] == "web"
    patch = json.loads(run(capsys, "inject", "deploy/web", "--dataset", "ds1", "--dry-run")[1])
    assert set(patch) == {"spec"}
    assert not [c for c in api.calls if c[0] == "PATCH"]
    assert api.objects[DEPLOY] == workload()


def test_a_missing_webhook_is_a_warning(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    del api.objects[resources.MUTATING_WEBHOOK_CONFIGURATIONS.object_path(None, names.WEBHOOK_NAME)]
    code, _, err = run(capsys, "inject", "deploy/web", "--dataset", "ds1")
    assert code == 0
    assert err.startswith(f"Warning: the MutatingWebhookConfiguration {names.WEBHOOK_NAME} is not installed")


def test_config_show_is_one_get(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "config", "show", "ds1") == (0, "#!/bin/sh\nexport A='x'\n", "")
    assert api.calls == [("GET", resources.CONFIGMAPS.object_path(NS, "fluid-runtime-config-ds1"))]
    assert run(capsys, "config", "show", "ds1", "--format", "json")[1] == '{\n    "b": 1,\n    "a": []\n}\n'
    assert run(capsys, "config", "show", "ds1", "-o", "yaml")[1] == "a: []\nb: 1\n"
    assert run(capsys, "config", "show", "ds1", "--env")[1] == (
        "FLUID_RUNTIME_CONFIG_PATH_ds1=/etc/fluid/config/ds1/runtime.sh\n"
        "FLUID_RUNTIME_CONFIG_PATH_DS1=/etc/fluid/config/ds1/runtime.sh\n"
    )
    assert run(capsys, "config", "show", "ds1", "--format", "json", "-o", "yaml")[0] == 1
    # --format json applies to --env too, as -o json does (issue 28: it was ignored).
    as_json = run(capsys, "config", "show", "ds1", "--env", "--format", "json")[1]
    assert as_json == run(capsys, "config", "show", "ds1", "--env", "-o", "json")[1]
    assert [e["name"] for e in json.loads(as_json)] == list(names.runtime_config_env_names("ds1"))


def test_config_show_says_which_piece_is_missing(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.objects[resources.NAMESPACES.object_path(None, NS)] = {"metadata": {"name": NS}}
    api.objects[resources.DATASETS.object_path(NS, "bare")] = {"metadata": {"name": "bare"}}
    assert 'dataset "nope" not found' in run(capsys, "config", "show", "nope")[2]
    err = run(capsys, "config", "show", "bare")[2]
    assert err.startswith(
        'error: runtime config for dataset "bare" is not ready: ConfigMap fluid-runtime-config-bare not found'
    )


def test_datasets_degrades_where_rbac_forbids(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.forbidden = {resources.PODS.collection_path(NS)}
    code, out, err = run(capsys, "datasets", "--no-headers")
    assert code == 0
    assert out.split()[:6] == ["ds1", "<none>", "Clientless", "<none>", "True", "<unknown>"]
    assert err.startswith("Warning: cannot list pods (Forbidden)")
    api.forbidden = {resources.DATASETS.collection_path(NS)}
    code, _, err = run(capsys, "datasets")
    assert code == 1
    assert "kubectl auth can-i list datasets.data.fluid.io -n team-a" in err


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_datasets_machine_output_is_a_list_of_well_formed_objects(
    api: FakeApi, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    """Issue 28: -o json wrapped kindless rows in a v1 List. Each row is a DatasetSummary, an object
    of the plugin's own group, named as kubectl names objects."""
    code, out, _ = run(capsys, "datasets", "-o", output)
    assert code == 0
    listed = json.loads(out) if output == "json" else yaml.safe_load(out)
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    (item,) = listed["items"]
    assert (item["apiVersion"], item["kind"]) == ("cli.fluid.io/v1alpha1", "DatasetSummary")
    assert (item["metadata"]["namespace"], item["metadata"]["name"]) == (NS, "ds1")
    assert (item["mode"], item["configReady"], item["injectedPods"]) == ("Clientless", True, [])
    assert not {"name", "namespace"} & item.keys()  # in metadata, as in every object


def test_empty_lists_say_so_on_stderr(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "mounts") == (0, "", "No resources found.\n")
    assert run(capsys, "datasets", "-n", "empty") == (0, "", "No resources found in empty namespace.\n")
    out = run(capsys, "mounts", "-o", "json")[1]
    assert json.loads(out) == {
        "apiVersion": "v1",
        "items": [],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


def test_explain_climbs_to_the_deployment(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    rs = REPLICASETS.object_path(NS, "web-1")
    api.objects[rs] = {
        "metadata": {"ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}]}
    }
    api.objects[resources.PODS.object_path(NS, "web-1-x")] = {
        "metadata": {
            "name": "web-1-x",
            "annotations": {names.ANNOTATION_DATASET: "ds1"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "controller": True}],
        },
        "spec": {},
    }
    code, out, _ = run(capsys, "explain", "pod/web-1-x", "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["owner"] == "deploy/web"
    assert report["reasons"] == [
        "it has no label fluid.io/inject=true, so the webhook never saw it; "
        f"run kubectl fluid inject deploy/web --dataset ds1 -n {NS}"
    ]


def test_explain_takes_several_pods(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: its usage said POD... and it refused a second name."""
    for name in ("a", "b"):
        api.objects[resources.PODS.object_path(NS, name)] = {"metadata": {"name": name}, "spec": {}}
    code, out, _ = run(capsys, "explain", "pod/a", "pod/b")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("Pod:")] == [
        f"Pod:        {NS}/a",
        f"Pod:        {NS}/b",
    ]
    for spelling in (["pod", "a", "b"], ["a", "b"], ["po/a", "b", "a"]):
        code, out, _ = run(capsys, "explain", *spelling, "-o", "json")
        assert code == 0
        listed = json.loads(out)
        assert listed["kind"] == "List"
        assert [i["name"] for i in listed["items"]] == ["a", "b"]
    assert run(capsys, "explain", "a", "b", "-o", "name")[1] == "pod/a\npod/b\n"
    code, _, err = run(capsys, "explain", "pod/a", "svc/b")
    assert code == 1
    assert err == (
        "error: explain takes pods and workloads, as pod/NAME or deploy|sts|ds|job|cronjob|rs/NAME, "
        'not "svc"\n'
    )


def _fluid_pvc(name: str) -> dict[str, dict[str, Any]]:
    path = resources.PERSISTENT_VOLUME_CLAIMS.object_path(NS, name)
    return {
        path: {
            "metadata": {"name": name, "namespace": NS, "labels": {names.LABEL_DATASET_ID: f"{NS}-{name}"}}
        }
    }


def _mounting(claims: list[str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    obj = workload(labels)
    obj["spec"]["template"]["spec"] = {
        "volumes": [{"name": f"v-{c}", "persistentVolumeClaim": {"claimName": c}} for c in claims]
    }
    return obj


def test_fuse_labels_a_workload_mounting_a_fluid_pvc(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.objects[DEPLOY] = _mounting(["scratch", "ds1"])
    api.objects.update(_fluid_pvc("ds1"))
    code, out, err = run(capsys, "inject", "deploy/web", "--fuse")
    assert (code, err) == (0, "")
    assert out == "deployment.apps/web patched\n  + label fuse.serverful.fluid.io/inject=true\n"
    assert template(api)["labels"] == {"app": "web", names.LABEL_FUSE_SERVERFUL_INJECT: "true"}
    code, out, _ = run(capsys, "inject", "deploy/web", "--fuse", "--remove")
    assert out == "deployment.apps/web patched\n  - label fuse.serverful.fluid.io/inject (was true)\n"
    assert template(api)["labels"] == {"app": "web"}


def test_fuse_refuses_a_workload_without_a_fluid_pvc(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "inject", "deploy/web", "--fuse")[2] == (
        "error: deployment.apps/web mounts no volume of curvine.csi.fluid.io: it mounts no PVC, so none "
        "is a dataset's PVC (labelled fluid.io/dataset-id) or a claim of a StorageClass or PV of "
        "curvine.csi.fluid.io; --fuse sets mount propagation on such mounts only: mount one first\n"
    )
    api.objects[DEPLOY] = _mounting(["scratch"])
    code, _, err = run(capsys, "inject", "deploy/web", "--fuse")
    assert code == 1
    assert "its PVCs (scratch) are not a dataset's PVC" in err
    api.objects[DEPLOY] = _mounting(["ds1"], {names.LABEL_INJECT: "true"})
    api.objects.update(_fluid_pvc("ds1"))
    code, _, err = run(capsys, "inject", "deploy/web", "--fuse")
    assert code == 1
    assert "the webhook handles them as clientless" in err
    assert "PATCH" not in {c[0] for c in api.calls}


def test_fuse_takes_a_claim_of_the_drivers_storageclass_or_pv_too(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28, item 1: `--fuse` covered only a Dataset's PVC; a claim of the sample StorageClass
    (or bound to a PV of the driver) is the driver's volume all the same."""
    claims = resources.PERSISTENT_VOLUME_CLAIMS
    api.objects[claims.object_path(NS, "dynamic")] = {"spec": {"storageClassName": "curvine"}}
    api.objects[resources.STORAGE_CLASSES.object_path(None, "curvine")] = {"provisioner": names.CSI_DRIVER}
    api.objects[claims.object_path(NS, "static")] = {"spec": {"storageClassName": "", "volumeName": "pv1"}}
    api.objects[resources.PERSISTENT_VOLUMES.object_path(None, "pv1")] = {
        "spec": {"csi": {"driver": names.CSI_DRIVER}}
    }
    api.objects[claims.object_path(NS, "other")] = {"spec": {"storageClassName": "local"}}
    api.objects[resources.STORAGE_CLASSES.object_path(None, "local")] = {
        "provisioner": "rancher.io/local-path"
    }
    for claim in ("dynamic", "static"):
        api.objects[DEPLOY] = _mounting([claim])
        code, out, _ = run(capsys, "inject", "deploy/web", "--fuse")
        assert (code, out) == (
            0,
            "deployment.apps/web patched\n  + label fuse.serverful.fluid.io/inject=true\n",
        )
    api.objects[DEPLOY] = _mounting(["other"])
    code, _, err = run(capsys, "inject", "deploy/web", "--fuse")
    assert code == 1
    assert "its PVCs (other) are not a dataset's PVC" in err


def test_fuse_and_dataset_are_not_combined(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "inject", "deploy/web", "--fuse", "--dataset", "ds1")
    assert code == 1
    assert err.startswith("error: --fuse and --dataset are separate injections")
    assert api.calls == []


def test_fuse_warns_when_the_webhook_has_no_entry_for_its_label(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api.objects[DEPLOY] = _mounting(["ds1"])
    api.objects.update(_fluid_pvc("ds1"))
    hooks = {"webhooks": [{"objectSelector": {"matchLabels": {names.LABEL_INJECT: "true"}}}]}
    api.objects[resources.MUTATING_WEBHOOK_CONFIGURATIONS.object_path(None, names.WEBHOOK_NAME)] = hooks
    code, _, err = run(capsys, "inject", "deploy/web", "--fuse")
    assert code == 0
    assert err.startswith(
        f"Warning: the MutatingWebhookConfiguration {names.WEBHOOK_NAME} has no entry for pods labelled "
        "fuse.serverful.fluid.io/inject=true"
    )
    # The clientless entry is there: --dataset has nothing to warn about.
    assert run(capsys, "inject", "deploy/web", "--dataset", "ds1")[2] == ""
