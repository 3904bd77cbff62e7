"""The YAML under manifests/: well-formed objects, samples the API accepts, least-privilege RBAC.

The samples are checked twice: through the pydantic models (what the controller reads) and against
the committed CRD schemas for unknown or mistyped fields, which the models (``extra="ignore"``) and
the API server (it prunes unknown fields) would both let pass silently."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
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


# --- the webhook (SPEC §4) ---------------------------------------------------------------------------

WEBHOOK_RBAC = "webhook/rbac.yaml"
WEBHOOK_DEPLOYMENT = "webhook/deployment.yaml"
WEBHOOK_PLUGINS = "webhook/plugins.yaml"
WEBHOOK_CONFIGURATION = "webhook/mutatingwebhookconfiguration.yaml"
PROFILE_KEY = "plugins.yaml"

# The webhook's whole access (the list), as (group, resource, verb, resourceNames), where ()
# means any name. Read-only caches cluster-wide; the bootstrap writes only its own two objects (and
# watches its webhook configuration by name, to repair a reset caBundle at once).
READ = ("get", "list", "watch")
EXPECTED_WEBHOOK_CLUSTER_GRANTS = {
    *((names.GROUP, r, v, ()) for r in ("datasets", "cacheruntimes") for v in READ),
    *(("", r, v, ()) for r in ("configmaps", "persistentvolumeclaims") for v in READ),
    *(
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", v, (names.WEBHOOK_NAME,))
        for v in ("get", "patch", "update", "list", "watch")
    ),
}
# Secrets only here, in the webhook's namespace. create cannot be limited by name; the rest is.
EXPECTED_WEBHOOK_NAMESPACE_GRANTS = {
    ("", "secrets", "create", ()),
    *(("", "secrets", v, (names.WEBHOOK_CERT_SECRET,)) for v in ("get", "update")),
}
# The shipped profile (issue 4), in the file's shape (``plugins:`` on top, as Fluid's ConfigMap); also
# the webhook's built-in default (checked below).
EXPECTED_PROFILE = {
    "plugins": {
        "clientless": {"withDataset": ["RuntimeConfigInjector"], "withoutDataset": []},
        "serverful": {
            "withDataset": ["MountPropagationInjector", "DatasetUsageInjector"],
            "withoutDataset": [],
        },
        "serverless": {"withDataset": ["DatasetUsageInjector"], "withoutDataset": []},
    }
}


def named_grants(rules: list[Doc]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {
        (group, resource, verb, tuple(rule.get("resourceNames", ())))
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def webhook_container() -> Doc:
    container: Doc
    (container,) = one(WEBHOOK_DEPLOYMENT, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def flags(container: Doc) -> dict[str, str]:
    """``--name=value`` arguments by name; bare switches map to ``""``."""
    pairs = (arg.removeprefix("--").partition("=") for arg in container["args"])
    return {name: value for name, _, value in pairs}


def container_port(container: Doc, port: int | str) -> int:
    """A port reference (number or name) resolved against the container's declared ports."""
    declared = {p["name"]: p["containerPort"] for p in container["ports"]}
    number = declared[port] if isinstance(port, str) else port
    assert number in declared.values(), f"port {port} is not declared by the container"
    return number


def profile_from_configmap() -> Any:
    configmap = one(WEBHOOK_PLUGINS, "ConfigMap")
    return yaml.safe_load(configmap["data"][PROFILE_KEY])


def plain(value: Any) -> Any:
    """Mappings as dicts and sequences as lists, so a profile built in code compares with parsed YAML."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def test_webhook_configuration_matches_spec() -> None:
    config = one(WEBHOOK_CONFIGURATION, "MutatingWebhookConfiguration")
    assert config["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert config["metadata"]["name"] == names.WEBHOOK_NAME
    (webhook,) = config["webhooks"]
    # No caBundle (the webhook patches it in) and no url (in-cluster, through the Service).
    assert webhook["clientConfig"].keys() == {"service"}
    assert webhook == {
        "name": "schedulepod.fluid.io",
        "clientConfig": {
            "service": {
                "namespace": names.FLUID_NAMESPACE,
                "name": names.WEBHOOK_SERVICE,
                "path": names.WEBHOOK_MUTATE_PATH,
                "port": 443,
            }
        },
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ],
        "objectSelector": {"matchLabels": {names.LABEL_INJECT: names.TRUE}},
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", names.FLUID_NAMESPACE],
                }
            ]
        },
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "timeoutSeconds": 5,
        "reinvocationPolicy": "IfNeeded",
        "matchPolicy": "Equivalent",
        "admissionReviewVersions": ["v1"],
    }


def test_webhook_rbac_is_least_privilege() -> None:
    cluster_roles = find(WEBHOOK_RBAC, "ClusterRole")
    roles = find(WEBHOOK_RBAC, "Role")
    for rule in [r for role in (*cluster_roles, *roles) for r in role["rules"]]:
        assert "*" not in [*rule["verbs"], *rule["resources"], *rule["apiGroups"]], rule
        assert "nonResourceURLs" not in rule, rule
    cluster = {g for role in cluster_roles for g in named_grants(role["rules"])}
    assert not {g for g in cluster if g[1] == "secrets"}, "no Secret access cluster-wide"
    assert cluster == EXPECTED_WEBHOOK_CLUSTER_GRANTS
    for role in roles:
        assert role["metadata"]["namespace"] == names.FLUID_NAMESPACE
    assert {g for role in roles for g in named_grants(role["rules"])} == EXPECTED_WEBHOOK_NAMESPACE_GRANTS


def test_webhook_roles_are_bound_to_its_service_account() -> None:
    account = one(WEBHOOK_RBAC, "ServiceAccount")["metadata"]
    assert account["namespace"] == names.FLUID_NAMESPACE
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    for role_kind, binding_kind in (("ClusterRole", "ClusterRoleBinding"), ("Role", "RoleBinding")):
        roles = {role["metadata"]["name"] for role in find(WEBHOOK_RBAC, role_kind)}
        bindings = find(WEBHOOK_RBAC, binding_kind)
        refs = {b["roleRef"]["name"] for b in bindings if b["roleRef"]["kind"] == role_kind}
        assert refs == roles, binding_kind
        for binding in bindings:
            assert binding["subjects"] == [subject], binding["metadata"]["name"]
            if binding_kind == "RoleBinding":
                assert binding["metadata"]["namespace"] == names.FLUID_NAMESPACE
    deployment = one(WEBHOOK_DEPLOYMENT, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]
    assert deployment["metadata"]["namespace"] == account["namespace"]


def test_webhook_service_targets_the_container_port() -> None:
    deployment = one(WEBHOOK_DEPLOYMENT, "Deployment")
    container = webhook_container()
    service = one(WEBHOOK_DEPLOYMENT, "Service")
    assert service["metadata"]["name"] == names.WEBHOOK_SERVICE
    assert service["metadata"]["namespace"] == names.FLUID_NAMESPACE
    (port,) = service["spec"]["ports"]
    config = one(WEBHOOK_CONFIGURATION, "MutatingWebhookConfiguration")
    assert port["port"] == config["webhooks"][0]["clientConfig"]["service"]["port"]
    serving = container_port(container, port["targetPort"])
    assert serving == int(flags(container)["port"])
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    pdb = one(WEBHOOK_DEPLOYMENT, "PodDisruptionBudget")
    for kind, selector in {
        "Deployment": deployment["spec"]["selector"]["matchLabels"],
        "PodDisruptionBudget": pdb["spec"]["selector"]["matchLabels"],
        "Service": service["spec"]["selector"],
    }.items():
        assert selector.items() <= labels.items(), kind
    # Every replica serves (SPEC §4); a drain always leaves one.
    assert deployment["spec"]["replicas"] >= 2
    assert pdb["spec"]["minAvailable"] == 1
    # Health is served over TLS on the admission port.
    assert int(flags(container)["health-port"]) == serving
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert (get["path"], get["scheme"], container_port(container, get["port"])) == (
            path,
            "HTTPS",
            serving,
        )


def test_webhook_deployment_flags_match_the_other_objects() -> None:
    container = webhook_container()
    args = flags(container)
    assert container["command"] == ["fluid-webhook"]
    assert args["service"] == names.WEBHOOK_SERVICE
    assert args["webhook-config"] == names.WEBHOOK_NAME
    assert "bootstrap-certs" in args
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}
    # The root filesystem is read-only: the bootstrapped certificate goes to a writable emptyDir.
    volumes = {
        v["name"]: v for v in one(WEBHOOK_DEPLOYMENT, "Deployment")["spec"]["template"]["spec"]["volumes"]
    }
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    certs = mounts[args["cert-dir"]]
    assert "emptyDir" in volumes[certs["name"]]
    assert not certs.get("readOnly", False)
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]


def test_webhook_deployment_mounts_the_plugin_profile() -> None:
    deployment = one(WEBHOOK_DEPLOYMENT, "Deployment")
    configmap = one(WEBHOOK_PLUGINS, "ConfigMap")
    assert configmap["metadata"]["name"] == names.WEBHOOK_PLUGINS_CONFIGMAP
    assert configmap["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    container = webhook_container()
    (volume,) = [
        v
        for v in deployment["spec"]["template"]["spec"]["volumes"]
        if v.get("configMap", {}).get("name") == configmap["metadata"]["name"]
    ]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mount.get("readOnly") is True
    (item,) = volume["configMap"]["items"]
    assert item["key"] in configmap["data"]
    assert flags(container)["profile"] == f"{mount['mountPath'].rstrip('/')}/{item['path']}"


def test_webhook_profile_names_registered_plugins() -> None:
    profile = profile_from_configmap()
    assert profile == EXPECTED_PROFILE
    registry = importlib.import_module("webhook.plugins.registry")
    used = {p for group in profile["plugins"].values() for plugins in group.values() for p in plugins}
    assert used <= set(registry.PLUGINS), "an unknown plugin name stops the webhook's start-up"


def test_webhook_profile_configmap_is_the_built_in_default() -> None:
    from webhook.profile import DEFAULT_PROFILE, load_profile

    assert profile_from_configmap() == yaml.safe_load(DEFAULT_PROFILE)
    # What the webhook does with the file at start-up: it loads, with nothing to warn about.
    text = one(WEBHOOK_PLUGINS, "ConfigMap")["data"][PROFILE_KEY]
    _, warnings = load_profile(text)
    assert warnings == []


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
