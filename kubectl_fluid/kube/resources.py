"""Where each kind lives in the API: group, version, plural, scope. Paths are built here only, and
read back here only (``scope_of``: which resource a path names, for RBAC's words in messages)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from kubectl_fluid.api import names


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str | None = None) -> str:
        """``/api/v1/pods``, ``/api/v1/namespaces/ns/pods``, ``/apis/g/v/namespaces/ns/plural``; a
        namespaced resource without a namespace is the all-namespaces collection."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{root}/{self.plural}"

    def object_path(self, namespace: str | None, name: str) -> str:
        return f"{self.collection_path(namespace)}/{quote(name, safe='')}"

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


# The server's build (``kubectl version``): not a resource, so no Resource builds it.
VERSION_PATH = "/version"


@dataclass(frozen=True)
class Scope:
    """What an API path names: ``resource`` is the plural, ``plural/sub`` for a subresource."""

    group: str
    resource: str
    namespace: str | None
    named: bool  # an object, as opposed to a collection


def scope_of(path: str) -> Scope | None:
    """The resource an API path (query allowed) names, the inverse of ``Resource``'s paths:
    ``/apis/g/v/namespaces/a/plural/x`` → ``Scope("g", "plural", "a", True)``; ``/api/v1/namespaces/a``
    is the namespace ``a`` itself. None for a path outside ``/api`` and ``/apis``."""
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
    group = ""
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    return Scope(group, resource, namespace, named)


PODS = Resource("", "v1", "pods", "Pod", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
SERVICES = Resource("", "v1", "services", "Service", True)
EVENTS = Resource("", "v1", "events", "Event", True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
NODES = Resource("", "v1", "nodes", "Node", False)
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
CSINODES = Resource("storage.k8s.io", "v1", "csinodes", "CSINode", False)
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet", True)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
CRONJOBS = Resource("batch", "v1", "cronjobs", "CronJob", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
)


def pod_log_path(namespace: str, name: str) -> str:
    """A pod's log (``kubectl logs``): the ``log`` subresource."""
    return f"{PODS.object_path(namespace, name)}/log"


# The product's own kinds. Spelled here rather than read from the models, so that paths never import
# pydantic (the plugin's start-up); a unit test keeps them equal to the models' CRD facts.
DATASETS = Resource(names.GROUP, names.VERSION, "datasets", "Dataset", True)
CACHERUNTIMES = Resource(names.GROUP, names.VERSION, "cacheruntimes", "CacheRuntime", True)
CACHERUNTIMECLASSES = Resource(names.GROUP, names.VERSION, "cacheruntimeclasses", "CacheRuntimeClass", False)
FUSEMOUNTS = Resource(names.GROUP, names.VERSION, "fusemounts", "FuseMount", False)
DATALOADS = Resource(names.GROUP, names.VERSION, "dataloads", names.KIND_DATALOAD, True)
