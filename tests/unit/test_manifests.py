"""The YAML under manifests/: well-formed objects, samples the API accepts, least-privilege RBAC.

The samples are checked twice: through the pydantic models (what the controller reads) and against
the committed CRD schemas for unknown or mistyped fields, which the models (``extra="ignore"``) and
the API server (it prunes unknown fields) would both let pass silently."""

from __future__ import annotations

import argparse
import importlib
import re
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
        options = [
            *(spec.shared_encrypt_options or ()),
            *(o for m in spec.all_mounts() for o in m.encrypt_options or ()),
        ]
        for option in options:
            assert option.value_from is not None
            ref = option.value_from.secret_key_ref
            assert ref is not None
            secret = by_kind["Secret"].get((namespace, ref.name))
            assert secret is not None, f"Secret {ref.name} missing from the samples"
            assert ref.key in {**secret.get("data", {}), **secret.get("stringData", {})}


def test_the_clientless_sample_class_defines_no_client() -> None:
    # Upstream's way to a clientless runtime: the class has no client, so no runtime needs to say so.
    runtime = CacheRuntime.model_validate(one("samples/dataset-mooncake.yaml", "CacheRuntime"))
    assert not runtime.spec.client.disabled
    mooncake = CacheRuntimeClass.model_validate(
        one("samples/cacheruntimeclass-mooncake.yaml", "CacheRuntimeClass")
    )
    assert mooncake.component("client") is None
    assert mooncake.component("master") is not None


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
    # patch: the finalizer that guards a class while runtimes use it.
    *((names.GROUP, "cacheruntimeclasses", v) for v in ("get", "list", "watch", "patch")),
    *(
        ("", r, v)
        for r in ("configmaps", "services", "persistentvolumeclaims", "persistentvolumes")
        for v in CRUD
    ),
    *(("apps", r, v) for r in ("statefulsets", "daemonsets") for v in CRUD),
    ("", "secrets", "get"),
    ("", "pods", "list"),
    # Cache placement: the worker pods watched (label-selected), their nodes' cache labels read and
    # patched; the masters' pods watched, and the classes' execution entries run in them.
    ("", "pods", "watch"),
    ("", "nodes", "get"),
    *(("", "pods/exec", v) for v in ("get", "create")),
    *((g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")),
    # Lost nodes: their readiness watched, their FuseMounts' status marked Unknown (never the objects).
    *(("", "nodes", v) for v in ("list", "watch")),
    # A runtime gone: its client's fluid.io/f-* labels taken off the Nodes (controller/fuselabels.py).
    ("", "nodes", "patch"),
    *((names.GROUP, "fusemounts", v) for v in ("list", "watch")),
    (names.GROUP, "fusemounts/status", "patch"),
    # DataLoads (controller/dataload/): watched, their status written, deleted after their TTL; their
    # Jobs created and watched (a DataLoad deleted takes its Job through the owner reference, which
    # blocks owner deletion: update on the DataLoad's finalizers).
    *((names.GROUP, "dataloads", v) for v in ("list", "watch", "delete")),
    (names.GROUP, "dataloads/status", "patch"),
    (names.GROUP, "dataloads/finalizers", "update"),
    *(("batch", r, v) for r in ("jobs", "cronjobs") for v in ("list", "watch", "create")),
    ("batch", "cronjobs", "patch"),
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
    # Watched only (never a GET each): which claims the CSI driver serves.
    *(("", "persistentvolumes", v, ()) for v in ("list", "watch")),
    *(("storage.k8s.io", "storageclasses", v, ()) for v in ("list", "watch")),
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
        "clientless": {
            "withDataset": ["RuntimeConfigInjector", "MountPropagationInjector"],
            "withoutDataset": [],
        },
        "serverful": {
            "withDataset": [
                "MountPropagationInjector",
                "RequireNodeWithFuse",
                "NodeAffinityWithCache",
                "DatasetUsageInjector",
            ],
            "withoutDataset": ["MountPropagationInjector"],
        },
        "serverless": {"withDataset": ["DatasetUsageInjector"], "withoutDataset": []},
    },
    "pluginConfig": [
        {
            "name": "NodeAffinityWithCache",
            "args": "preferred:\n  - name: fluid.io/node\n    weight: 100\nrequired:\n  - fluid.io/node\n",
        }
    ],
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
    # Upstream's three entries, each for the pods that opted in with its label, all failing closed;
    # then the propagation entry for all other pods (test_the_propagation_entry_...).
    *labelled, propagation = config["webhooks"]
    assert propagation["name"] == names.WEBHOOK_PROPAGATION_ENTRY
    assert {w["name"]: w["objectSelector"] for w in labelled} == {
        entry: {"matchLabels": {label: names.TRUE}} for entry, label in names.WEBHOOK_ENTRIES.items()
    }
    for webhook in labelled:
        # No caBundle (the webhook patches it in) and no url (in-cluster, through the Service).
        assert webhook["clientConfig"].keys() == {"service"}
        assert {k: v for k, v in webhook.items() if k not in ("name", "objectSelector")} == {
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


def test_the_propagation_entry_takes_every_other_pod_with_a_claim_and_fails_open() -> None:
    """Issue 28, item 1: pods that asked for nothing still get HostToContainer on the driver's
    volumes; such a pod is never refused for the webhook being away, and a labelled pod is left to
    its own entry (which fails closed)."""
    config = one(WEBHOOK_CONFIGURATION, "MutatingWebhookConfiguration")
    [entry] = [w for w in config["webhooks"] if w["name"] == names.WEBHOOK_PROPAGATION_ENTRY]
    assert entry["failurePolicy"] == "Ignore"
    assert entry["clientConfig"]["service"]["path"] == names.WEBHOOK_MUTATE_PATH
    not_true = {
        (e["key"], e["operator"], tuple(e["values"])) for e in entry["objectSelector"]["matchExpressions"]
    }
    assert not_true == {
        *((label, "NotIn", (names.TRUE,)) for label in names.INJECTION_LABELS),
        (names.LABEL_ENABLE_INJECTION, "NotIn", (names.FALSE,)),
    }
    namespaces = entry["namespaceSelector"]["matchExpressions"]
    assert {"key": names.LABEL_ENABLE_INJECTION, "operator": "NotIn", "values": [names.FALSE]} in namespaces
    [condition] = entry["matchConditions"]
    assert names.CSI_DRIVER in condition["expression"]
    assert "persistentVolumeClaim" in condition["expression"]


def test_each_webhook_entry_selects_the_group_its_label_routes_to() -> None:
    from webhook.routing import route

    config = one(WEBHOOK_CONFIGURATION, "MutatingWebhookConfiguration")
    groups = {
        w["name"]: route({"metadata": {"labels": w["objectSelector"]["matchLabels"]}})
        for w in config["webhooks"]
        if w["name"] != names.WEBHOOK_PROPAGATION_ENTRY
    }
    assert groups == {
        "clientless.fluid.io": "clientless",
        "fuse.serverful.fluid.io": "serverful",
        "sidecar.fuse.fluid.io": "serverless",
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


def test_webhook_deployment_args_are_the_webhook_s_own_flags() -> None:
    from webhook.collect import MAX_DATASETS_PER_POD
    from webhook.main import parse_args

    args = parse_args(webhook_container()["args"])
    assert args.max_datasets_per_pod == MAX_DATASETS_PER_POD == 64
    with pytest.raises(SystemExit):
        parse_args(["--max-datasets-per-pod=0"])


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
            # The root's metadata is ObjectMeta, which the API server checks and keeps whole; the CRD
            # may only declare name there (for a CEL rule's fieldPath).
            elif (
                props is not None
                and not schema.get("x-kubernetes-preserve-unknown-fields")
                and at != ".metadata"
            ):
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


# --- the CSI driver (SPEC §5) ------------------------------------------------------------------------

CSI_DRIVER_OBJECT = "csi/csidriver.yaml"
CSI_RBAC = "csi/rbac.yaml"
CSI_CONTROLLER = "csi/controller-deployment.yaml"
CSI_NODE = "csi/node-daemonset.yaml"
STORAGE_CLASS_SAMPLE = "samples/storageclass-curvine.yaml"
STATIC_PV_SAMPLE = "samples/pv-curvine-static.yaml"
VERSIONS_ENV = MANIFESTS.parent / "hack" / "versions.env"
# Third-party images: the Kubernetes CSI sidecars, each pinned to a release.
SIDECAR_IMAGE = re.compile(r"registry\.k8s\.io/sig-storage/(?P<name>[a-z0-9-]+):(?P<tag>v\d+\.\d+\.\d+)")
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")
KUBELET_REGISTRY = "/var/lib/kubelet/plugins_registry"

# The provisioner's whole access (external-provisioner v5.3.0 for a driver with CREATE_DELETE_VOLUME
# and nothing else: no topology, no ControllerPublish, no snapshots, clones or capacity).
EXPECTED_PROVISIONER_GRANTS = {
    *(("", "persistentvolumes", v, ()) for v in ("get", "list", "watch", "create", "patch", "delete")),
    *(("", "persistentvolumeclaims", v, ()) for v in ("get", "list", "watch", "update")),
    *(("storage.k8s.io", "storageclasses", v, ()) for v in READ),
    ("", "nodes", "get", ()),
    *(("", "events", v, ()) for v in ("create", "patch")),
}
# The node service's: the FuseMount mirror, its Node, FUSE pods (standalone mode) in fluid-system only.
EXPECTED_CSI_NODE_CLUSTER_GRANTS = {
    *((names.GROUP, "fusemounts", v, ()) for v in CRUD),
    *((names.GROUP, "fusemounts/status", v, ()) for v in ("get", "update", "patch")),
    # Its Node: read, and watched for its readiness (the mirror publishes again when it is back).
    *(("", "nodes", v, ()) for v in READ),
    # After a FUSE restart: a pod and its PV read one by one, an Event on a pod that cannot see it.
    ("", "pods", "get", ()),
    ("", "persistentvolumes", "get", ()),
    ("", "events", "create", ()),
    # Client mode (SPEC §7): its Node's fluid.io/f-* labels (node-label-policy.yaml narrows the
    # patch), the runtime's cleanPolicy, and the client pod on this node (by labels and nodeName).
    ("", "nodes", "patch", ()),
    (names.GROUP, "cacheruntimes", "get", ()),
    ("", "pods", "list", ()),
}
EXPECTED_CSI_NODE_NAMESPACE_GRANTS = {
    *(("", "pods", v, ()) for v in ("get", "list", "watch", "create", "delete")),
    # Each FUSE pod's budget (csi/fuse/fusebudget.py), applied; it goes with its pod (no delete).
    *(("policy", "poddisruptionbudgets", v, ()) for v in ("get", "create", "patch")),
}


def provisioner_lease() -> str:
    """The Lease csi-provisioner elects its leader with: the driver name, sanitised (csi-lib-utils)."""
    return re.sub(r"[^a-zA-Z0-9-]", "-", names.CSI_DRIVER)


def pinned(key: str) -> str:
    for line in VERSIONS_ENV.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip()
    raise AssertionError(f"{key} is not pinned in {VERSIONS_ENV}")


def pod_spec(path: str, kind: str) -> Doc:
    spec: Doc = one(path, kind)["spec"]["template"]["spec"]
    return spec


def container_named(pod: Doc, name: str) -> Doc:
    container: Doc
    (container,) = [c for c in pod["containers"] if c["name"] == name]
    return container


def sidecar(pod: Doc, image_name: str) -> Doc:
    container: Doc
    (container,) = [
        c
        for c in pod["containers"]
        if (m := SIDECAR_IMAGE.fullmatch(c["image"])) is not None and m["name"] == image_name
    ]
    return container


def driver_args(container: Doc) -> argparse.Namespace:
    """The driver container's command line as ``fluid-csi`` itself parses it, after kubelet's
    ``$(VAR)`` expansion (a fieldRef variable becomes ``<VAR>``)."""
    from csi.main import parse_args

    assert container["command"] == ["fluid-csi"]
    env = {e["name"]: e.get("value", f"<{e['name']}>") for e in container.get("env", [])}
    expanded = [re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], arg) for arg in container["args"]]
    return parse_args(expanded)


def socket_of(endpoint: str) -> str:
    from csi.rpc.server import socket_path

    return str(socket_path(endpoint))


def volume_source(pod: Doc, container: Doc, path: str) -> tuple[Doc, Doc]:
    """The volumeMount of ``container`` that ``path`` lies in (the deepest one) and its volume."""
    mounts = [
        m
        for m in container["volumeMounts"]
        if path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/")
    ]
    assert mounts, f"{path} is on no volume of container {container['name']}"
    mount = max(mounts, key=lambda m: len(m["mountPath"]))
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return mount, volume


def host_path_at_same_path(pod: Doc, container: Doc, path: str) -> Doc:
    """The mount holding ``path``, checked to be a hostPath mounted at its own host path: kubelet
    hands the driver host paths, so inside and outside must agree."""
    mount, volume = volume_source(pod, container, path)
    assert "hostPath" in volume, f"{path} is not on the host"
    assert volume["hostPath"]["path"] == mount["mountPath"], f"{path}: host and container paths differ"
    return mount


def product_image() -> str:
    image: str = pod_spec("controller/deployment.yaml", "Deployment")["containers"][0]["image"]
    return image


def curvine_image() -> str:
    """Curvine's image at the commit the test bed pins (hack/images/curvine.py builds it)."""
    return f"kubectl-fluid/curvine:{pinned('CURVINE_VERSION')}"


def copied_fuse_binary(pod: Doc, container: Doc, binary: str) -> None:
    """``binary`` is in ``container`` because an init container copied it there from Curvine's image."""
    [copy_in] = pod["initContainers"]
    assert copy_in["image"] == curvine_image()
    assert copy_in["command"][:2] == ["cp", binary]
    [target] = copy_in["volumeMounts"]
    assert copy_in["command"][2] == target["mountPath"].rstrip("/") + "/"
    mount, volume = volume_source(pod, container, binary)
    assert mount["name"] == target["name"]
    assert "emptyDir" in volume
    assert mount["mountPath"] == str(Path(binary).parent)


def fuse_settings(pod: Doc, container: Doc, config: str) -> None:
    """``--fuse-config`` is the key of ConfigMap fluid-csi-fuse-settings (fuse-settings.yaml)."""
    _, volume = volume_source(pod, container, config)
    assert volume["configMap"]["name"] == one("csi/fuse-settings.yaml", "ConfigMap")["metadata"]["name"]
    assert Path(config).name in one("csi/fuse-settings.yaml", "ConfigMap")["data"]


def test_csi_driver_object_matches_spec() -> None:
    driver = one(CSI_DRIVER_OBJECT, "CSIDriver")
    assert driver["apiVersion"] == "storage.k8s.io/v1"
    assert driver["metadata"]["name"] == names.CSI_DRIVER
    spec = driver["spec"]
    assert spec["attachRequired"] is False  # no ControllerPublish capability
    assert spec["podInfoOnMount"] is True
    assert spec["volumeLifecycleModes"] == ["Persistent"]
    # A shared filesystem: kubelet must never chown a volume recursively for one pod's fsGroup.
    assert spec["fsGroupPolicy"] == "None"


def test_every_workload_image_is_ours_or_a_pinned_sidecar() -> None:
    ours = product_image()
    seen = set()
    for path, doc in objects():
        if rel(path).startswith("samples/") or doc["kind"] not in WORKLOADS:
            continue
        pod = doc["spec"]["template"]["spec"]
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            image = container["image"]
            where = f"{rel(path)}: {container['name']}"
            if image not in (ours, curvine_image()):
                match = SIDECAR_IMAGE.fullmatch(image)
                assert match is not None, f"{where}: {image} is not ours, Curvine's or a pinned sidecar"
                seen.add(match["name"])
    assert seen == {"csi-provisioner"}
    # The provisioner the e2e suite builds and runs (hack/versions.env) is the one shipped.
    provisioner = sidecar(pod_spec(CSI_CONTROLLER, "Deployment"), "csi-provisioner")
    assert provisioner["image"].endswith(f":{pinned('CSI_PROVISIONER_VERSION')}")


def test_every_component_workload_carries_the_products_version() -> None:
    # `kubectl fluid version` reads it (the image is kubectl-fluid:latest, which names no release),
    # as it reads the Helm chart's label; a release bumps kubectl_fluid.__version__ and this with it.
    from kubectl_fluid import __version__

    components = [
        (rel(path), doc)
        for path, doc in objects()
        if not rel(path).startswith("samples/")
        and doc["kind"] in ("Deployment", "DaemonSet")
        and doc["metadata"]["labels"].get(names.LABEL_APP_PART_OF) == names.PART_OF
    ]
    assert len(components) == 4
    for where, doc in components:
        assert doc["metadata"]["labels"].get(names.LABEL_APP_VERSION) == __version__, where
        # On the workload only: a version bump alone must not look like a change of the pods.
        assert names.LABEL_APP_VERSION not in doc["spec"]["template"]["metadata"]["labels"], where


def test_csi_controller_shares_its_socket_with_the_provisioner() -> None:
    deployment = one(CSI_CONTROLLER, "Deployment")
    assert deployment["metadata"]["namespace"] == names.FLUID_NAMESPACE
    pod = pod_spec(CSI_CONTROLLER, "Deployment")
    driver = container_named(pod, "csi-driver")
    args = driver_args(driver)
    assert args.mode == "controller"
    socket = socket_of(args.endpoint)
    provisioner = sidecar(pod, "csi-provisioner")
    provisioner_flags = flags(provisioner)
    assert socket_of(provisioner_flags["csi-address"]) == socket
    driver_mount, volume = volume_source(pod, driver, socket)
    provisioner_mount, same = volume_source(pod, provisioner, socket)
    assert volume is same
    assert "emptyDir" in volume
    assert driver_mount["mountPath"] == provisioner_mount["mountPath"]
    # Leader election among replicas, in the namespace of the Role that grants its Lease.
    assert "leader-election" in provisioner_flags
    (role,) = [
        r for r in find(CSI_RBAC, "Role") if r["metadata"]["name"] == "fluid-csi-provisioner-leader-election"
    ]
    assert provisioner_flags["leader-election-namespace"] == role["metadata"]["namespace"]
    assert "node-deployment" not in provisioner_flags
    # Health: the driver's own port, and the provisioner's leader-election check.
    assert driver["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container_port(driver, driver["livenessProbe"]["httpGet"]["port"]) == args.health_port
    assert container_port(driver, driver["readinessProbe"]["httpGet"]["port"]) == args.health_port
    get = provisioner["livenessProbe"]["httpGet"]
    assert get["path"] == "/healthz/leader-election"
    assert f":{container_port(provisioner, get['port'])}" == provisioner_flags["http-endpoint"]
    # The controller's backend is Curvine itself, through FUSE mounts of each cluster's root made by
    # Curvine's own curvine-fuse: privileged, with /dev/fuse, the mounts under its state dir.
    assert args.backend == "curvine"
    assert args.backend_root is None
    copied_fuse_binary(pod, driver, args.fuse_binary)
    fuse_settings(pod, driver, args.fuse_config)
    _, fuse = volume_source(pod, driver, "/dev/fuse")
    assert fuse["hostPath"] == {"path": "/dev/fuse", "type": "CharDevice"}
    assert "emptyDir" in volume_source(pod, driver, args.state_dir)[1]
    assert driver["securityContext"]["privileged"] is True
    assert driver["securityContext"]["readOnlyRootFilesystem"] is True
    for container in [provisioner, *pod["initContainers"]]:
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_csi_node_mounts_propagate_to_the_host() -> None:
    daemonset = one(CSI_NODE, "DaemonSet")
    assert daemonset["metadata"]["namespace"] == names.FLUID_NAMESPACE
    pod = pod_spec(CSI_NODE, "DaemonSet")
    driver = container_named(pod, "csi-driver")
    args = driver_args(driver)
    assert args.mode == "node"
    node_name = next(e for e in driver["env"] if e["name"] == "NODE_NAME")
    assert node_name["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert args.node_id == "<NODE_NAME>"
    # Bidirectional propagation needs a privileged container; FUSE and mount(2) need root.
    security = driver["securityContext"]
    assert security["privileged"] is True
    assert security["runAsUser"] == 0
    assert args.mount_root == names.KUBELET_PLUGINS_ROOT
    # Everything the driver mounts lies on a Bidirectional hostPath mount at its own host path: the
    # FUSE mount of a key, kubelet's staging path of a volume, and a pod's target.
    key = "0" * names.MOUNT_KEY_LENGTH
    for path in (
        names.fuse_mount_path(key, args.mount_root),
        names.csi_staging_path("c0ffee00@/@pvc-1", args.mount_root),
        names.csi_publish_target("0c6b4a52-1b1e-4f0e-9a57-0d2f3c1e5a77", "pvc-1"),
    ):
        mount = host_path_at_same_path(pod, driver, path)
        assert mount.get("mountPropagation") == "Bidirectional", path
    # The state file and live FUSE mounts outlive the container (recovery after a restart).
    assert "mountPropagation" not in host_path_at_same_path(pod, driver, args.state_dir)
    _, fuse = volume_source(pod, driver, "/dev/fuse")
    assert fuse["hostPath"] == {"path": "/dev/fuse", "type": "CharDevice"}
    assert container_port(driver, driver["livenessProbe"]["httpGet"]["port"]) == args.health_port


def test_csi_node_propagates_only_the_drivers_own_directories() -> None:
    # Bidirectional on all of kubelet's CSI directory would hand this container (and any path a
    # tenant could make it bind) every other driver's staged volumes.
    pod = pod_spec(CSI_NODE, "DaemonSet")
    driver = container_named(pod, "csi-driver")
    args = driver_args(driver)
    propagated = {m["mountPath"]: m.get("mountPropagation") for m in driver["volumeMounts"]}
    # Client mode (SPEC §7): it sees the runtimes' client mounts, and makes none there.
    assert propagated.pop(names.RUNTIME_MOUNT_ROOT) == "HostToContainer"
    assert {path for path, how in propagated.items() if how} == {
        names.fuse_mounts_root(args.mount_root),
        names.csi_staging_root(args.mount_root),
        f"{names.KUBELET_ROOT}/pods",
    }
    other = f"{args.mount_root}/kubernetes.io/csi/other.csi.example.com/{'0' * 64}/globalmount"
    assert not [m for m in driver["volumeMounts"] if other.startswith(m["mountPath"].rstrip("/") + "/")]


def test_csi_node_runs_curvines_own_fuse_in_standalone_pods() -> None:
    from csi.fuse.fusepods import FusePodManager
    from csi.main import build_fuse_runner

    pod = pod_spec(CSI_NODE, "DaemonSet")
    node = container_named(pod, "csi-driver")
    args = driver_args(node)
    # Standalone: only a FUSE in a pod of its own survives a restart of this container.
    assert args.mount_mode == "standalone"
    runner = build_fuse_runner(args)
    assert isinstance(runner, FusePodManager)
    key = "0" * names.MOUNT_KEY_LENGTH
    mnt = names.fuse_mount_path(key, args.mount_root)
    body = runner.pod_body(key, [*args.fuse_binary.split(), "--mnt-path", mnt], mnt)
    (fuse,) = body["spec"]["containers"]
    # The real curvine-fuse from Curvine's image; nothing of the development stand-in anywhere.
    assert (fuse["image"], fuse["command"][0]) == (curvine_image(), names.FUSE_BINARY)
    assert args.fuse_binary == names.FUSE_BINARY
    assert not fuse["env"]
    assert not args.fuse_host_path
    assert not args.fuse_env
    assert host_path_at_same_path(body["spec"], fuse, mnt)["mountPropagation"] == "Bidirectional"
    # Not BestEffort, and above ordinary pods: the kubelet would evict it (and the kernel OOM-kill
    # it) first, taking every volume of its key on the node with it.
    assert fuse["resources"]["requests"]["memory"]
    assert fuse["resources"]["requests"]["cpu"]
    assert fuse["resources"]["limits"]["memory"]
    assert body["spec"]["priorityClassName"] == "system-node-critical"
    # The node service has the same program (validate-config, embedded mode) and the settings.
    copied_fuse_binary(pod, node, args.fuse_binary)
    fuse_settings(pod, node, args.fuse_config)


def test_no_default_install_names_the_stand_in() -> None:
    for path, doc in objects():
        if not rel(path).startswith("samples/"):
            assert "standin" not in yaml.safe_dump(doc).replace("-", ""), f"{rel(path)} names the stand-in"
    chart = MANIFESTS.parent / "charts" / "kubectl-fluid"
    for file in [chart / "values.yaml", *(chart / "templates").iterdir()]:
        text = "\n".join(line for line in file.read_text().splitlines() if "is gone" not in line)
        assert "standin" not in text.replace("-", ""), f"{file.name} names the stand-in"


def test_the_fuse_pod_policy_pins_what_the_node_daemonset_runs() -> None:
    """fuse-pod-policy.yaml's image, program and mount root are the DaemonSet's, and it governs only
    the node service's own ServiceAccount."""
    args = driver_args(container_named(pod_spec(CSI_NODE, "DaemonSet"), "csi-driver"))
    policy = one("csi/fuse-pod-policy.yaml", "ValidatingAdmissionPolicy")
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert variables["image"] == f"'{args.fuse_image}'"
    assert variables["program"] == f"'{args.fuse_binary}'"
    assert variables["mountRoot"] == f"'{names.fuse_mounts_root(args.mount_root)}/'"
    assert variables["hostPaths"] == repr(["/dev/fuse", *args.fuse_host_path])
    [account] = [d for d in find(CSI_RBAC, "ServiceAccount") if d["metadata"]["name"] == "fluid-csi-node"]
    user = f"system:serviceaccount:{account['metadata']['namespace']}:{account['metadata']['name']}"
    [condition] = policy["spec"]["matchConditions"]
    assert condition["expression"] == f"request.userInfo.username == '{user}'"
    binding = one("csi/fuse-pod-policy.yaml", "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}


def test_csi_node_registers_the_driver_with_kubelet_itself() -> None:
    from csi.main import build_registration

    pod = pod_spec(CSI_NODE, "DaemonSet")
    # No node-driver-registrar sidecar: the node service serves kubelet's plugin registration.
    assert [c["name"] for c in pod["containers"]] == ["csi-driver"]
    driver = container_named(pod, "csi-driver")
    args = driver_args(driver)
    registration = build_registration(args)
    assert registration is not None
    # Its socket is in kubelet's plugin watcher directory on the host, at the same path; that
    # directory is kubelet's to make (a kubelet with another root would never look in a made one).
    assert str(registration.path.parent) == KUBELET_REGISTRY
    mount, volume = volume_source(pod, driver, str(registration.path))
    assert volume["hostPath"] == {"path": KUBELET_REGISTRY, "type": "Directory"}
    assert mount["mountPath"] == KUBELET_REGISTRY
    assert "mountPropagation" not in mount
    # It tells kubelet the CSI socket's host path: the per-driver plugin directory.
    socket = socket_of(args.endpoint)
    driver_mount, socket_volume = volume_source(pod, driver, socket)
    host_dir = f"{names.KUBELET_PLUGINS_ROOT}/{names.CSI_DRIVER}"
    assert socket_volume["hostPath"]["path"] == host_dir
    relative = Path(socket).relative_to(driver_mount["mountPath"])
    assert registration.servicer.info.endpoint == f"{host_dir}/{relative}"
    # Liveness (the registration socket still there) and readiness on the driver's health port.
    assert container_port(driver, driver["livenessProbe"]["httpGet"]["port"]) == args.health_port
    assert container_port(driver, driver["readinessProbe"]["httpGet"]["port"]) == args.health_port


def test_every_container_with_liveness_waits_for_a_slow_start() -> None:
    # On a busy node the Python start took longer than liveness's 5 s + 3 x 10 s: kubelet killed the
    # container (exit 137) before it served, again and again (the real node, seven pods starting:
    # the CSI node first, then the controller, webhook and CSI controller restarted 1-5 times). The
    # csi-provisioner sidecar serves its health port only once it reaches that Python driver: killed
    # at its liveness's 10 s, it restarted once in a cold make demo.
    seen = []
    for path in ("controller/deployment.yaml", WEBHOOK_DEPLOYMENT, CSI_CONTROLLER, CSI_NODE):
        for workload in [d for kind in WORKLOADS for d in find(path, kind)]:
            for container in workload["spec"]["template"]["spec"]["containers"]:
                if "livenessProbe" not in container:
                    continue
                seen.append(container["name"])
                startup = container["startupProbe"]
                assert startup["httpGet"] == container["livenessProbe"]["httpGet"], container["name"]
                assert startup["periodSeconds"] * startup["failureThreshold"] >= 120, container["name"]
    assert len(seen) == 5, seen


def test_csi_rbac_is_least_privilege() -> None:
    by_name = {role["metadata"]["name"]: role for role in find(CSI_RBAC, "ClusterRole")}
    roles = {role["metadata"]["name"]: role for role in find(CSI_RBAC, "Role")}
    for rule in [r for role in (*by_name.values(), *roles.values()) for r in role["rules"]]:
        assert "*" not in [*rule["verbs"], *rule["resources"], *rule["apiGroups"]], rule
        assert "nonResourceURLs" not in rule, rule
        assert "secrets" not in rule["resources"], rule
    assert named_grants(by_name["fluid-csi-provisioner"]["rules"]) == EXPECTED_PROVISIONER_GRANTS
    assert named_grants(by_name["fluid-csi-node"]["rules"]) == EXPECTED_CSI_NODE_CLUSTER_GRANTS
    for role in roles.values():
        assert role["metadata"]["namespace"] == names.FLUID_NAMESPACE
    assert named_grants(roles["fluid-csi-provisioner-leader-election"]["rules"]) == {
        ("coordination.k8s.io", "leases", "create", ()),
        *(("coordination.k8s.io", "leases", v, (provisioner_lease(),)) for v in ("get", "update")),
    }
    assert named_grants(roles["fluid-csi-node-fuse-pods"]["rules"]) == EXPECTED_CSI_NODE_NAMESPACE_GRANTS


def test_csi_roles_are_bound_to_the_workloads_service_accounts() -> None:
    accounts = {a["metadata"]["name"]: a["metadata"] for a in find(CSI_RBAC, "ServiceAccount")}
    workloads = {
        "fluid-csi-controller": pod_spec(CSI_CONTROLLER, "Deployment"),
        "fluid-csi-node": pod_spec(CSI_NODE, "DaemonSet"),
    }
    assert set(accounts) == set(workloads)
    for name, pod in workloads.items():
        assert pod["serviceAccountName"] == name
        assert accounts[name]["namespace"] == names.FLUID_NAMESPACE
    bound: dict[str, set[str]] = {}
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        roles = {role["metadata"]["name"] for role in find(CSI_RBAC, role_kind)}
        for binding in find(CSI_RBAC, kind):
            assert binding["roleRef"]["kind"] == role_kind
            assert binding["roleRef"]["name"] in roles
            (subject,) = binding["subjects"]
            assert subject["kind"] == "ServiceAccount"
            assert subject["namespace"] == names.FLUID_NAMESPACE
            bound.setdefault(subject["name"], set()).add(binding["roleRef"]["name"])
    assert bound == {
        "fluid-csi-controller": {"fluid-csi-provisioner", "fluid-csi-provisioner-leader-election"},
        "fluid-csi-node": {"fluid-csi-node", "fluid-csi-node-fuse-pods"},
    }


def test_storage_class_sample_passes_the_drivers_validator() -> None:
    from csi.model.params import parse_params

    storage_class = one(STORAGE_CLASS_SAMPLE, "StorageClass")
    assert storage_class["provisioner"] == names.CSI_DRIVER
    parameters = storage_class["parameters"]
    assert set(parameters) == {names.PARAM_MASTER_ADDRS, names.PARAM_FS_PATH, names.PARAM_PATH_TYPE}
    params = parse_params(parameters)
    assert params.warnings == ()
    assert params.path_type == names.PATH_TYPE_DIRECTORY_OR_CREATE
    assert params.fs_path == parameters[names.PARAM_FS_PATH] != names.DEFAULT_FS_PATH
    assert storage_class["reclaimPolicy"] == "Delete"
    # The driver cannot expand volumes (no EXPAND_VOLUME capability).
    assert storage_class.get("allowVolumeExpansion", False) is False


def test_static_pv_sample_is_a_valid_volume_bound_to_its_claim() -> None:
    from csi.model.volumes import parse_volume_context, parse_volume_handle

    pv = one(STATIC_PV_SAMPLE, "PersistentVolume")
    pvc = one(STATIC_PV_SAMPLE, "PersistentVolumeClaim")
    csi = pv["spec"]["csi"]
    assert csi["driver"] == names.CSI_DRIVER
    attributes = csi["volumeAttributes"]
    assert set(attributes) == {names.PARAM_MASTER_ADDRS, names.PARAM_CURVINE_PATH}
    volume = parse_volume_context(attributes)  # what NodeStage does with it
    assert volume.params.fs_path == names.DEFAULT_FS_PATH
    assert volume.curvine_path == attributes[names.PARAM_CURVINE_PATH]
    # Never a handle DeleteVolume would take for a provisioned directory and remove.
    assert parse_volume_handle(csi["volumeHandle"]) is None
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    # Bound to each other, and to no StorageClass (no provisioner may step in).
    assert pv["spec"]["claimRef"] == {
        "namespace": pvc["metadata"]["namespace"],
        "name": pvc["metadata"]["name"],
    }
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""
    assert set(pvc["spec"]["accessModes"]) <= set(pv["spec"]["accessModes"])
    assert pvc["spec"]["resources"]["requests"]["storage"] == pv["spec"]["capacity"]["storage"]


def workload_containers() -> Iterator[tuple[str, Doc]]:
    for path, doc in objects():
        if not rel(path).startswith("samples/") and doc["kind"] in WORKLOADS:
            pod = doc["spec"]["template"]["spec"]
            for container in [*pod.get("initContainers", []), *pod["containers"]]:
                yield f"{rel(path)}: {container['name']}", container


def test_container_port_names_are_valid_service_names() -> None:
    # What the API server demands of a named port (IANA_SVC_NAME): at most 15 characters.
    service_name = re.compile(r"(?=.{1,15}$)[a-z0-9]+(-[a-z0-9]+)*")
    for where, container in workload_containers():
        for port in container.get("ports", []):
            assert service_name.fullmatch(port["name"]), where
            assert re.search("[a-z]", port["name"]), f"{where}: a port name needs a letter"


def test_image_runs_as_the_uid_the_non_root_workloads_name() -> None:
    dockerfile = (MANIFESTS.parent / "Dockerfile").read_text()
    (user,) = re.findall(r"^USER\s+(\S+)\s*$", dockerfile, re.MULTILINE)
    uid = int(user.partition(":")[0])
    for path in ("controller/deployment.yaml", WEBHOOK_DEPLOYMENT):
        assert pod_spec(path, "Deployment")["securityContext"]["runAsUser"] == uid, path
    # Every product workload runs the one image the Dockerfile builds (beside it, the CSI pods copy
    # curvine-fuse from Curvine's image in their init containers).
    images = {c["image"] for _, c in workload_containers() if not SIDECAR_IMAGE.fullmatch(c["image"])}
    assert images == {product_image(), curvine_image()}
