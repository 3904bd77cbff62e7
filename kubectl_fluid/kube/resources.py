"""Where each kind lives in the API: group, version, plural, scope. Paths are built here only."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

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


PODS = Resource("", "v1", "pods", "Pod", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
SERVICES = Resource("", "v1", "services", "Service", True)
EVENTS = Resource("", "v1", "events", "Event", True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
NODES = Resource("", "v1", "nodes", "Node", False)
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
)

# The product's own kinds. Spelled here rather than read from the models, so that paths never import
# pydantic (the plugin's start-up); a unit test keeps them equal to the models' CRD facts.
DATASETS = Resource(names.GROUP, names.VERSION, "datasets", "Dataset", True)
CACHERUNTIMES = Resource(names.GROUP, names.VERSION, "cacheruntimes", "CacheRuntime", True)
CACHERUNTIMECLASSES = Resource(names.GROUP, names.VERSION, "cacheruntimeclasses", "CacheRuntimeClass", False)
FUSEMOUNTS = Resource(names.GROUP, names.VERSION, "fusemounts", "FuseMount", False)
