"""The YAML under manifests/: well-formed objects, samples the API accepts, least-privilege RBAC.

The samples are checked twice: through the pydantic models (what the controller reads) and against
the committed CRD schemas for unknown or mistyped fields, which the models (``extra="ignore"``) and
the API server (it prunes unknown fields) would both let pass silently."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid.api import names
from kubectl_fluid.api.base import Resource
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
KUSTOMIZATION = MANIFESTS / "kustomization.yaml"
MODELS: dict[str, type[Resource]] = {
    "Dataset": Dataset,
    "CacheRuntime": CacheRuntime,
    "CacheRuntimeClass": CacheRuntimeClass,
}

Doc = dict[str, Any]


def load(path: Path) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def yaml_files() -> list[Path]:
    return sorted(p for p in MANIFESTS.rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))


def objects() -> Iterator[tuple[Path, Doc]]:
    for path in yaml_files():
        if path != KUSTOMIZATION:  # a kustomize file, not a Kubernetes object
            for doc in load(path):
                yield path, doc


def rel(path: Path) -> str:
    return str(path.relative_to(MANIFESTS))


def find(path: str, kind: str) -> list[Doc]:
    return [doc for doc in load(MANIFESTS / path) if doc["kind"] == kind]


def one(path: str, kind: str) -> Doc:
    (doc,) = find(path, kind)
    return doc


SAMPLES = [(path, doc) for path, doc in objects() if rel(path).startswith("samples/")]
SAMPLE_RESOURCES = [(path, doc) for path, doc in SAMPLES if doc["kind"] in MODELS]


def test_every_document_is_a_named_object() -> None:
    found = list(objects())
    assert found, "no manifests found"
    for path, doc in found:
        where = f"{rel(path)}: {doc.get('kind')}"
        assert isinstance(doc.get("apiVersion"), str), where
        assert isinstance(doc.get("kind"), str), where
        assert isinstance(doc.get("metadata", {}).get("name"), str), where


def test_kustomization_installs_every_non_sample_manifest() -> None:
    listed = {MANIFESTS / r for r in load(KUSTOMIZATION)[0]["resources"]}
    assert all(p.is_file() for p in listed), sorted(map(str, listed))
    install = {p for p in yaml_files() if p != KUSTOMIZATION and not rel(p).startswith("samples/")}
    assert listed == install


def test_samples_cover_every_fluid_kind_and_both_runtime_classes() -> None:
    kinds = {doc["kind"] for _, doc in SAMPLE_RESOURCES}
    assert kinds == set(MODELS)
    classes = {doc["metadata"]["name"] for _, doc in SAMPLE_RESOURCES if doc["kind"] == "CacheRuntimeClass"}
    assert classes == {"mooncake", "curvine"}


@pytest.mark.parametrize(
    ("path", "doc"),
    SAMPLE_RESOURCES,
    ids=[f"{rel(p)}:{d['kind']}/{d['metadata']['name']}" for p, d in SAMPLE_RESOURCES],
)
def test_sample_validates_through_model_and_crd_schema(path: Path, doc: Doc) -> None:
    model = MODELS[doc["kind"]]
    assert doc["apiVersion"] == names.API_VERSION
    model.model_validate(doc)
    crd = load(MANIFESTS / "crds" / f"{model.crd.name}.yaml")[0]
    (version,) = crd["spec"]["versions"]
    assert schema_errors(version["schema"]["openAPIV3Schema"], doc) == []
    if doc["kind"] == "Dataset":
        assert names.dataset_name_error(doc["metadata"]["name"]) is None


def test_sample_runtimes_have_their_dataset_class_and_secrets() -> None:
    by_kind: dict[str, dict[tuple[str, str], Doc]] = {}
    for _, doc in SAMPLES:
        key = (doc["metadata"].get("namespace", ""), doc["metadata"]["name"])
        by_kind.setdefault(doc["kind"], {})[key] = doc
    for key, runtime in by_kind["CacheRuntime"].items():
        assert key in by_kind["Dataset"], f"CacheRuntime {key} has no Dataset of the same name"
        assert ("", runtime["spec"]["runtimeClassName"]) in by_kind["CacheRuntimeClass"]
    for (namespace, _), dataset in by_kind["Dataset"].items():
        spec = Dataset.model_validate(dataset).spec
        options = [*spec.shared_encrypt_options, *(o for m in spec.mounts for o in m.encrypt_options)]
        for option in options:
            ref = option.value_from.secret_key_ref
            secret = by_kind["Secret"].get((namespace, ref.name))
            assert secret is not None, f"Secret {ref.name} missing from the samples"
            assert ref.key in {**secret.get("data", {}), **secret.get("stringData", {})}


def test_clientless_sample_disables_the_client() -> None:
    runtime = CacheRuntime.model_validate(one("samples/dataset-mooncake.yaml", "CacheRuntime"))
    assert runtime.spec.client is not None
    assert runtime.spec.client.disabled
    mooncake = CacheRuntimeClass.model_validate(
        one("samples/cacheruntimeclass-mooncake.yaml", "CacheRuntimeClass")
    )
    assert mooncake.topology.client is None


# The controller's whole access (the list). Anything added must be added here too, on purpose.
CRUD = {"get", "list", "watch", "create", "update", "patch", "delete"}
EXPECTED_CLUSTER_GRANTS = {
    *(
        (names.GROUP, r, v)
        for r in ("datasets", "cacheruntimes")
        for v in ("get", "list", "watch", "update", "patch")
    ),
    *(
        (names.GROUP, r, v)
        for r in ("datasets/status", "cacheruntimes/status")
        for v in ("get", "update", "patch")
    ),
    (names.GROUP, "cacheruntimes", "delete"),
    (names.GROUP, "cacheruntimes/finalizers", "update"),
    *((names.GROUP, "cacheruntimeclasses", v) for v in ("get", "list", "watch")),
    *(
        ("", r, v)
        for r in ("configmaps", "services", "persistentvolumeclaims", "persistentvolumes")
        for v in CRUD
    ),
    *(("apps", r, v) for r in ("statefulsets", "daemonsets") for v in CRUD),
    ("", "secrets", "get"),
    ("", "pods", "list"),
    *((g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")),
}


def grants(rules: list[Doc]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_cluster_role_is_least_privilege() -> None:
    rules = one("controller/rbac.yaml", "ClusterRole")["rules"]
    for rule in rules:
        assert "*" not in [*rule["verbs"], *rule["resources"], *rule["apiGroups"]], rule
        assert "nonResourceURLs" not in rule, rule
        if "secrets" in rule["resources"]:
            assert rule["verbs"] == ["get"], "the controller only checks that a Secret exists"
    assert grants(rules) == EXPECTED_CLUSTER_GRANTS


def test_leader_election_role_is_limited_to_its_lease() -> None:
    role = one("controller/rbac.yaml", "Role")
    namespace = role["metadata"]["namespace"]
    args = one("controller/deployment.yaml", "Deployment")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    assert f"--lease-namespace={namespace}" in args
    for rule in role["rules"]:
        assert "*" not in [*rule["verbs"], *rule["resources"], *rule["apiGroups"]], rule
        if rule["resources"] == ["leases"]:
            # create cannot be limited by name; everything else must be.
            assert rule.get("resourceNames") == ["fluid-controller"] or rule["verbs"] == ["create"], rule
    assert {g for g in grants(role["rules"]) if g[1] == "leases"} == {
        ("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")
    }


def test_deployment_runs_as_the_bound_service_account() -> None:
    account = one("controller/rbac.yaml", "ServiceAccount")["metadata"]
    deployment = one("controller/deployment.yaml", "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]
    assert deployment["metadata"]["namespace"] == account["namespace"]
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert one("controller/rbac.yaml", kind)["subjects"] == [subject], kind


def test_controller_selectors_match_its_pods() -> None:
    deployment = one("controller/deployment.yaml", "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selectors = {
        "Deployment": deployment["spec"]["selector"]["matchLabels"],
        "PodDisruptionBudget": one("controller/deployment.yaml", "PodDisruptionBudget")["spec"]["selector"][
            "matchLabels"
        ],
        "Service": one("controller/deployment.yaml", "Service")["spec"]["selector"],
    }
    for kind, selector in selectors.items():
        assert selector.items() <= labels.items(), kind
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


# --- a small structural-schema checker: the subset of OpenAPI v3 the generated CRDs use -------------


def schema_errors(schema: Doc, value: Any, at: str = "") -> list[str]:
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int}
    if kind in types and (
        not isinstance(value, types[kind]) or (kind == "integer" and isinstance(value, bool))
    ):
        return [f"{at or '.'}: expected {kind}, got {type(value).__name__}"]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{at}: {value!r} not in {schema['enum']}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        errors.append(f"{at}: shorter than {schema['minLength']}")
    if isinstance(value, int) and not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        errors.append(f"{at}: {value} out of range")
    if isinstance(value, list):
        for i, item in enumerate(value):
            errors += schema_errors(schema.get("items", {}), item, f"{at}[{i}]")
    if isinstance(value, dict):
        errors += [f"{at}.{k}: required" for k in schema.get("required", []) if k not in value]
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if props is not None and key in props:
                errors += schema_errors(props[key], item, f"{at}.{key}")
            elif isinstance(extra, dict):
                errors += schema_errors(extra, item, f"{at}.{key}")
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{at}.{key}: unknown field")
    return errors


def test_schema_checker_catches_typos() -> None:
    crd = load(MANIFESTS / "crds" / f"{CacheRuntime.crd.name}.yaml")[0]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    good = {
        "spec": {"runtimeClassName": "x", "worker": {"replicas": 1, "env": [{"name": "A", "value": "b"}]}}
    }
    assert schema_errors(schema, good) == []
    bad = {"spec": {"runtimeClassname": "x", "worker": {"replicas": "1"}}}
    assert schema_errors(schema, bad) == [
        ".spec.runtimeClassName: required",
        ".spec.runtimeClassname: unknown field",
        ".spec.worker.replicas: expected integer, got str",
    ]
