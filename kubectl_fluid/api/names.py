"""Every label, annotation, object, volume, env and path name the product uses, and the rules that
derive one name from another. Nothing outside this module spells them (DESIGN: one source of truth).

Kubernetes limits that shape these rules: object names in a namespace that become label values or
DNS labels must fit 63 characters, and so must the name part of a label key. Where a rule composes two
user-chosen names (namespace + dataset) and could overflow, the result is shortened deterministically
with a hash suffix (see ``fit_63``) instead of failing, so odd but legal names still work.
"""

from __future__ import annotations

import re
from typing import Final, Literal

# --- API group ------------------------------------------------------------------------------------
GROUP: Final = "data.fluid.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

DNS_LABEL_MAX: Final = 63

# The plugin's own output types: `kubectl fluid datasets -o json|yaml` prints a v1 List of these, so
# each item is an object as kubectl prints objects. No API server serves this group: it names a
# shape of output, in a group of its own so that nothing takes it for a resource of data.fluid.io.
CLI_GROUP: Final = "cli.fluid.io"
CLI_API_VERSION: Final = f"{CLI_GROUP}/{VERSION}"
KIND_DATASET_SUMMARY: Final = "DatasetSummary"

# --- pod injection (SPEC §4) ---------------------------------------------------------------------
TRUE: Final = "true"
LABEL_INJECT: Final = "fluid.io/inject"
LABEL_SERVERLESS_INJECT: Final = "serverless.fluid.io/inject"
# Pods that mount Fluid PVCs ask for mount propagation with it (upstream's serverful label).
LABEL_FUSE_SERVERFUL_INJECT: Final = "fuse.serverful.fluid.io/inject"
LABEL_INJECT_DONE: Final = "done.sidecar.fluid.io/inject"
ANNOTATION_DATASET: Final = "fluid.io/dataset"
# Fluid's own spelling of the same annotation; accepted on input, never written.
ANNOTATION_DATASETS: Final = "fluid.io/datasets"
ANNOTATION_DATASETS_IN_USE: Final = "fluid.io/datasets-in-use"
# Containers the injector must skip: Fluid's FUSE sidecars carry this prefix.
FUSE_CONTAINER_PREFIX: Final = "fluid-fuse"

WEBHOOK_MUTATE_PATH: Final = "/mutate-fluid-io-v1alpha1-schedulepod"
WEBHOOK_PLUGINS_CONFIGMAP: Final = "webhook-plugins"
# The configuration's entries, as upstream names them, by the label each one's objectSelector matches.
WEBHOOK_ENTRIES: Final = {
    "clientless.fluid.io": LABEL_INJECT,
    "fuse.serverful.fluid.io": LABEL_FUSE_SERVERFUL_INJECT,
    "sidecar.fuse.fluid.io": LABEL_SERVERLESS_INJECT,
}
# A container's mount with one of these propagations receives what is mounted on the host after it
# started (a FUSE re-made by the node service); with any other it keeps what it saw at its start.
HOST_TO_CONTAINER: Final = "HostToContainer"
PROPAGATING: Final = frozenset({HOST_TO_CONTAINER, "Bidirectional"})
# The labels a pod asks for injection with: a pod that carries none of them asked for nothing.
INJECTION_LABELS: Final = tuple(WEBHOOK_ENTRIES.values())
# A fourth entry, for the pods that asked for nothing: those that mount a volume of the CSI driver get
# HostToContainer propagation on its mounts (issue 28), so that a FUSE restarted on the node shows up
# in their running containers. It fails open: such a pod did not ask for anything, and the webhook
# being away must not stop every pod with a claim in the cluster.
WEBHOOK_PROPAGATION_ENTRY: Final = "mountpropagation.fluid.io"
# Upstream Fluid's opt-out: a pod (or namespace) labelled so is never sent to that entry.
LABEL_ENABLE_INJECTION: Final = "fluid.io/enable-injection"
FALSE: Final = "false"
# The MutatingWebhookConfiguration, the Service in front of the replicas, and the Secret holding the
# shared CA and serving certificate that ``--bootstrap-certs`` keeps (SPEC §4, TLS).
WEBHOOK_NAME: Final = "fluid-pod-admission-webhook"
WEBHOOK_SERVICE: Final = "fluid-webhook"
WEBHOOK_CERT_SECRET: Final = "fluid-webhook-certs"
WEBHOOK_CA_NAME: Final = "fluid-webhook-ca"
CLUSTER_DOMAIN: Final = "cluster.local"
# Keys of a kubernetes.io/tls Secret (and the files written from it); ``ca.key`` is ours: every replica
# must sign with the same CA, or the caBundle would only ever trust one of them.
TLS_CERT_FILE: Final = "tls.crt"
TLS_KEY_FILE: Final = "tls.key"
CA_CERT_FILE: Final = "ca.crt"
CA_KEY_FILE: Final = "ca.key"

# --- runtime config ConfigMap (SPEC §2, §3) -------------------------------------------------------
RUNTIME_CONFIG_PREFIX: Final = "fluid-runtime-config-"
RUNTIME_JSON_KEY: Final = "runtime.json"
RUNTIME_SH_KEY: Final = "runtime.sh"
# runtime.sh's values under names that carry the dataset (FLUID_DS1_MASTER_NAME), so the configs of
# several datasets compose in one shell; runtime.sh itself stays upstream's, byte for byte (SPEC §7).
RUNTIME_SCOPED_SH_KEY: Final = "runtime-scoped.sh"
# The ConfigMap (and the pod volume named after it) must be a DNS label, so the prefix eats into
# the 63 characters a Dataset name may use. The CRD enforces this with a CEL rule.
MAX_DATASET_NAME_LENGTH: Final = DNS_LABEL_MAX - len(RUNTIME_CONFIG_PREFIX)
DATASET_NAME_TOO_LONG_MESSAGE: Final = (
    f"a Dataset name may have at most {MAX_DATASET_NAME_LENGTH} characters: its runtime config "
    f"ConfigMap and pod volume are named {RUNTIME_CONFIG_PREFIX}<name>, which must fit "
    f"{DNS_LABEL_MAX} characters"
)

# Services and StatefulSets are named after the Dataset, and a Service name is a DNS-1035 label (no
# leading digit, no "."), as upstream Fluid checks it. The CRD enforces this too, in CEL (RE2 syntax).
DNS_1035_LABEL_PATTERN: Final = "^[a-z]([-a-z0-9]*[a-z0-9])?$"
_DNS_1035_LABEL: Final = re.compile(DNS_1035_LABEL_PATTERN)
DATASET_NAME_NOT_DNS_1035_MESSAGE: Final = (
    "a Dataset name must be a DNS-1035 label: lowercase letters, digits and '-', starting with a "
    "letter and ending with a letter or digit (no '.'), because its Services, StatefulSets and pod "
    "volumes are named after it"
)

# Application pods (one directory per dataset, so several datasets never collide).
POD_CONFIG_ROOT: Final = "/etc/fluid/config"
RUNTIME_CONFIG_PATH_ENV_PREFIX: Final = "FLUID_RUNTIME_CONFIG_PATH_"
SCOPED_CONFIG_PATH_ENV_PREFIX: Final = "FLUID_SCOPED_CONFIG_PATH_"

# Cache component pods (master/worker/client of one dataset) see the ConfigMap at the root itself.
COMPONENT_CONFIG_DIR: Final = POD_CONFIG_ROOT
COMPONENT_CONFIG_PATH: Final = f"{COMPONENT_CONFIG_DIR}/{RUNTIME_JSON_KEY}"
ENV_DATASET_NAME: Final = "FLUID_DATASET_NAME"
ENV_DATASET_NAMESPACE: Final = "FLUID_DATASET_NAMESPACE"
ENV_RUNTIME_CONFIG_PATH: Final = "FLUID_RUNTIME_CONFIG_PATH"
ENV_RUNTIME_MOUNT_PATH: Final = "FLUID_RUNTIME_MOUNT_PATH"
ENV_RUNTIME_COMPONENT_TYPE: Final = "FLUID_RUNTIME_COMPONENT_TYPE"
ENV_RUNTIME_COMPONENT_SVC_NAME: Final = "FLUID_RUNTIME_COMPONENT_SVC_NAME"

SECRETS_ROOT: Final = "/etc/fluid/secrets"
SECRET_VOLUME_PREFIX: Final = "cache-mnt-secret-"
# Mounts of Fluid's own schemes: upstream mounts no Secret for them (nothing to authenticate to).
NATIVE_MOUNT_SCHEMES: Final = ("local://", "pvc://")
# Tiered-store levels, where upstream mounts them in worker and client containers (and names them
# so in runtime.json): process memory is the pod's /dev/shm; emptyDir and hostPath levels get a
# directory per level and path.
TIERED_STORE_ROOT: Final = "/etc/fluid/mount/tiered-store"
PROCESS_MEMORY_MOUNT_PATH: Final = "/dev/shm"
# runtime.json's mediumType: upstream writes only these two (never SSD).
MEDIUM_MEMORY: Final = "MEM"
MEDIUM_DISK: Final = "HDD"
# emptyDir's medium that makes a level memory (core/v1 StorageMedium).
EMPTY_DIR_MEMORY: Final = "Memory"

Component = Literal["master", "worker", "client"]
COMPONENTS: Final[tuple[Component, ...]] = ("master", "worker", "client")

# --- dataset PV/PVC (SPEC §2) ---------------------------------------------------------------------
DATASET_PVC_LABEL_PREFIX: Final = "fluid.io/s-"
LABEL_DATASET_ID: Final = "fluid.io/dataset-id"
# The dataset a PV was made for. ``dataset-id`` (``{namespace}-{name}``, like the PV name) is the
# same string for ``team``/``a-data`` and ``team-a``/``data``; these two labels are not.
LABEL_DATASET_NAMESPACE: Final = "fluid.io/dataset-namespace"
LABEL_DATASET_NAME: Final = "fluid.io/dataset-name"
DATASET_FINALIZER: Final = "data.fluid.io/dataset-protection"
# On a CacheRuntimeClass while any CacheRuntime names it: deleting the class waits for them.
RUNTIME_CLASS_FINALIZER: Final = "data.fluid.io/cacheruntimeclass-protection"
# On a CacheRuntime with a client: its deletion takes the client (the FUSE of the Dataset's PVC) and
# the client's node labels down before the master and worker go (controller/teardown.py).
RUNTIME_FINALIZER: Final = "data.fluid.io/cacheruntime-protection"
CONTROLLER_FIELD_MANAGER: Final = "fluid-controller"
# The namespace the product's own workloads run in, and the controller's leader-election Lease there.
FLUID_NAMESPACE: Final = "fluid-system"
CONTROLLER_LEASE: Final = "fluid-controller"
# Every dataset PV/PVC names this class: it ties them together (and to no dynamic provisioner).
DATASET_STORAGE_CLASS: Final = "fluid"
RUNTIME_TYPE_CACHE: Final = "cache"
# Dataset status.runtimes[].category of a cache runtime, as upstream writes it.
RUNTIME_CATEGORY: Final = "Accelerate"
# Condition type the controller keeps on a CacheRuntime; the printer column reads it.
CONDITION_READY: Final = "Ready"

# --- objects the controller makes for a runtime (SPEC §2) -----------------------------------------
LABEL_APP_NAME: Final = "app.kubernetes.io/name"
LABEL_APP_INSTANCE: Final = "app.kubernetes.io/instance"
LABEL_APP_COMPONENT: Final = "app.kubernetes.io/component"
LABEL_APP_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
# The product's own workloads (manifests/, the Helm chart): part-of selects them, version (set by the
# chart) names the release they came from.
LABEL_APP_PART_OF: Final = "app.kubernetes.io/part-of"
PART_OF: Final = "fluid"
LABEL_APP_VERSION: Final = "app.kubernetes.io/version"
# The controller is both the field manager of its writes and the manager its labels name.
MANAGED_BY: Final = CONTROLLER_FIELD_MANAGER
# Upstream's labels of a runtime's workloads, Services and pods; the workloads select on them.
LABEL_CACHERUNTIME_NAME: Final = "cacheruntime.fluid.io/name"
LABEL_CACHERUNTIME_COMPONENT: Final = "cacheruntime.fluid.io/component-name"
# Worker pods: the dataset they cache and its placement; Exclusive workers repel every other
# worker on the node, Shared ones only the Exclusive.
LABEL_DATASET: Final = "fluid.io/dataset"
LABEL_DATASET_PLACEMENT: Final = "fluid.io/dataset-placement"
PLACEMENT_EXCLUSIVE: Final = "Exclusive"
PLACEMENT_SHARED: Final = "Shared"
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
# The class whose extraResources a shared ConfigMap is: another class's of the same name is a conflict.
LABEL_RUNTIME_CLASS: Final = "fluid.io/runtime-class"
# The client's hostPath volume holding the dataset's target path (its FUSE mount point on the node).
FUSE_SHARED_PATH_VOLUME: Final = "fluid-cache-runtime-shared-path"

# --- CSI driver (SPEC §5) -------------------------------------------------------------------------
CSI_DRIVER: Final = "curvine.csi.fluid.io"
# The test bed's FUSE (csi/standin): its console script, and its module for ``python -m``. No default
# install runs it; a mount it serves says so (``is_fuse_standin``), as it serves a node's directory,
# not a cache.
FUSE_STANDIN_PROGRAM: Final = "curvine-fuse-standin"
FUSE_STANDIN_MODULE: Final = "csi.standin.fusestandin"
# The node service's field manager: the only writer of FuseMount objects.
CSI_NODE_FIELD_MANAGER: Final = "fluid-csi-node"
KUBELET_PLUGINS_ROOT: Final = "/var/lib/kubelet/plugins"
FUSE_BINARY: Final = "/opt/curvine/curvine-fuse"

PARAM_MASTER_ADDRS: Final = "master-addrs"
PARAM_FS_PATH: Final = "fs-path"
PARAM_PATH_TYPE: Final = "path-type"
PARAM_MNT_PATH: Final = "mnt-path"  # legacy: accepted, ignored, mount paths are generated
PARAM_CLUSTER_ID: Final = "cluster-id"
PARAM_CURVINE_PATH: Final = "curvine-path"
DEFAULT_FS_PATH: Final = "/"
PathType = Literal["Directory", "DirectoryOrCreate"]
PATH_TYPE_DIRECTORY: Final = "Directory"
PATH_TYPE_DIRECTORY_OR_CREATE: Final = "DirectoryOrCreate"
# FUSE tuning parameters: kubectl_fluid/api/curvinefuse.py (the real curvine-fuse's flags).
# Legacy: how old StorageClasses named the master before ``master-addrs``; no longer read.
PARAM_MASTER_HOSTNAME: Final = "master-hostname"
PARAM_MASTER_RPC_PORT: Final = "master-rpc-port"
LEGACY_PARAMS: Final = (
    PARAM_MNT_PATH,
    "auto-cache",
    "kernel-cache",
    PARAM_MASTER_HOSTNAME,
    PARAM_MASTER_RPC_PORT,
    "master-web-port",
)
# Volume context keys the driver itself writes (CreateVolume) next to the parameters.
PARAM_VOLUME_HANDLE: Final = "volume-handle"
# The standalone FUSE pod's resources and priority, per StorageClass (csi/model/fusepodparams.py).
PARAM_FUSE_CPU_REQUEST: Final = "fuse-cpu-request"
PARAM_FUSE_CPU_LIMIT: Final = "fuse-cpu-limit"
PARAM_FUSE_MEMORY_REQUEST: Final = "fuse-memory-request"
PARAM_FUSE_MEMORY_LIMIT: Final = "fuse-memory-limit"
PARAM_FUSE_PRIORITY_CLASS: Final = "fuse-priority-class-name"
# Keys under these prefixes belong to Kubernetes, not to the StorageClass author: the provisioner
# adds ``csi.storage.k8s.io/*`` (secrets, fstype, pvc/pv names) to parameters and kubelet adds them
# to the publish context (pod info); the provisioner stamps ``storage.kubernetes.io/*`` into a PV's
# volume attributes. The driver ignores them instead of refusing them as unknown.
CSI_K8S_PARAM_PREFIX: Final = "csi.storage.k8s.io/"
K8S_STORAGE_PARAM_PREFIX: Final = "storage.kubernetes.io/"
VOLUME_ATTR_DATASET_NAME: Final = "dataset-name"
VOLUME_ATTR_DATASET_NAMESPACE: Final = "dataset-namespace"
VOLUME_ATTR_CLIENTLESS: Final = "clientless"

# Upstream Fluid's volume attributes of a Dataset's PV (its pkg/common: fuse.csi.fluid.io's contract),
# kept by name: the host path where the runtime's client mounts the dataset (the client DaemonSet's
# hostPath, ``target_path()``), a sub-directory of it to bind, the mount's type, and the runtime.
# A PV with these and no ``master-addrs`` is served by the runtime's client (SPEC §7); one with
# ``master-addrs`` by the CSI node's own FUSE (SPEC §5).
VOLUME_ATTR_FLUID_PATH: Final = "fluid_path"
VOLUME_ATTR_FLUID_SUB_PATH: Final = "fluid_sub_path"
VOLUME_ATTR_MOUNT_TYPE: Final = "mount_type"
VOLUME_ATTR_RUNTIME_NAMESPACE: Final = "runtime_namespace"
VOLUME_ATTR_RUNTIME_NAME: Final = "runtime_name"
# Upstream's cleanPolicy of a runtime's FUSE client: the node label goes at the last unstage
# (OnDemand) or with the runtime (OnRuntimeDeleted, upstream's default when none is set).
CLEAN_POLICY_ON_DEMAND: Final = "OnDemand"
CLEAN_POLICY_ON_RUNTIME_DELETED: Final = "OnRuntimeDeleted"

# How the node service runs FUSE for volumes with master-addrs (--mount-mode).
MountMode = Literal["embedded", "standalone"]
# A FuseMount's mode: one of those, or ``client``: the runtime's client pod runs the FUSE and the
# node service only labels the node, waits for the mount and binds beneath it (SPEC §7).
CLIENT_MODE: Final = "client"
FuseMountMode = Literal["embedded", "standalone", "client"]
KUBELET_ROOT: Final = "/var/lib/kubelet"
# Where kubelet's plugin watcher looks for registration sockets ({kubelet root}/plugins_registry).
KUBELET_PLUGINS_REGISTRY: Final = f"{KUBELET_ROOT}/plugins_registry"
# The node service's bookkeeping file inside ``--state-dir``.
CSI_STATE_FILE: Final = "node-state.json"
# A mount key is hex of this length: short enough to be a label value (63), long enough (128 bits)
# that distinct FUSE configurations never collide.
MOUNT_KEY_LENGTH: Final = 32
LABEL_NODE: Final = "fluid.io/node"
LABEL_MOUNT_KEY: Final = "fluid.io/mount-key"
FUSE_MOUNT_KEY_PREFIX_LENGTH: Final = 16
# FuseMount is cluster-scoped: its name is a DNS subdomain.
DNS_SUBDOMAIN_MAX: Final = 253


def _sha256_hex(text: str) -> str:
    """``text``'s SHA-256 in hex: the short, stable digests below are cut from it."""
    # hashlib here, not at the top: the plugin's commands read names, and most never hash one.
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def fit_63(text: str, limit: int = DNS_LABEL_MAX) -> str:
    """``text`` if it fits a DNS label / label value / label-key name part (or ``limit``), else a
    stable shortening that keeps a readable prefix and a hash of the whole, so distinct inputs stay
    distinct."""
    if len(text) <= limit:
        return text
    digest = _sha256_hex(text)[:8]
    return f"{text[: limit - 9].rstrip('-._')}-{digest}"


def dns_label(text: str) -> str:
    """``fit_63(text)`` when ``text`` has no dot; a dotted one (from a DNS-subdomain name such as a
    ConfigMap's) is rewritten *and* hashed, so ``a.b`` and ``a-b`` stay distinct."""
    if "." not in text:
        return fit_63(text)
    digest = _sha256_hex(text)[:8]
    return f"{text.replace('.', '-')[: DNS_LABEL_MAX - 9].rstrip('-')}-{digest}"


# --- runtime config -------------------------------------------------------------------------------
def runtime_config_configmap(dataset: str) -> str:
    return f"{RUNTIME_CONFIG_PREFIX}{dataset}"


def runtime_config_volume(dataset: str) -> str:
    """The pod volume carrying a dataset's runtime config: named like its ConfigMap."""
    return runtime_config_configmap(dataset)


def pod_config_dir(dataset: str) -> str:
    """Read-only mount path of a dataset's runtime config in an application container."""
    return f"{POD_CONFIG_ROOT}/{dataset}/"


def pod_runtime_sh_path(dataset: str) -> str:
    return f"{pod_config_dir(dataset)}{RUNTIME_SH_KEY}"


def shell_safe(dataset: str) -> str:
    """A dataset's name as part of a shell variable name: upper case, ``-`` and ``.`` as ``_``."""
    return dataset.upper().replace("-", "_").replace(".", "_")


def runtime_config_env_names(dataset: str) -> tuple[str, ...]:
    """Env names pointing an application at a dataset's runtime.sh: the verbatim name (SPEC asks for
    it) and, when it differs, a shell-safe upper-case one, because ``ds-1`` makes the verbatim name
    unusable as ``$VAR`` in a shell."""
    verbatim = f"{RUNTIME_CONFIG_PATH_ENV_PREFIX}{dataset}"
    safe = f"{RUNTIME_CONFIG_PATH_ENV_PREFIX}{shell_safe(dataset)}"
    return (verbatim,) if safe == verbatim else (verbatim, safe)


def pod_runtime_scoped_sh_path(dataset: str) -> str:
    return f"{pod_config_dir(dataset)}{RUNTIME_SCOPED_SH_KEY}"


def scoped_config_env_name(dataset: str) -> str:
    """The env name pointing an application at a dataset's runtime-scoped.sh (shell-safe only: it
    exists to be sourced)."""
    return f"{SCOPED_CONFIG_PATH_ENV_PREFIX}{shell_safe(dataset)}"


def scoped_variable_prefix(dataset: str) -> str:
    """What runtime-scoped.sh puts before each of runtime.sh's names: ``FLUID_{DS}_``."""
    return f"FLUID_{shell_safe(dataset)}_"


def dataset_name_error(name: str) -> str | None:
    """Why ``name`` cannot be a Dataset name, or None. Mirrors the CRD's CEL rules for callers that
    validate before the API server does (the webhook, the plugin, the controller on objects from
    older CRDs). Length first: it also bounds the work of the pattern on hostile input."""
    if len(name) > MAX_DATASET_NAME_LENGTH:
        return DATASET_NAME_TOO_LONG_MESSAGE
    return None if _DNS_1035_LABEL.fullmatch(name) else DATASET_NAME_NOT_DNS_1035_MESSAGE


def secret_mount_dir(secret: str) -> str:
    """Where a component pod mounts one Secret (read-only), one file per key."""
    return f"{SECRETS_ROOT}/{secret}"


def encrypt_option_path(secret: str, key: str) -> str:
    """Where a component pod finds one Secret key: the value of an encryptOption in runtime.json."""
    return f"{secret_mount_dir(secret)}/{key}"


def secret_volume(secret: str) -> str:
    """Pod volume of a Secret, upstream's rule: ``cache-mnt-secret-{secret}`` when it fits 63, else the
    prefix, the first 38 characters and 8 hex of sha256(secret) (63 in all). Volume names are DNS
    labels but Secret names may hold dots, which upstream leaves invalid: a dotted name takes the
    hashed form with ``.`` as ``-``, so ``a.b`` and ``a-b`` still get distinct volumes."""
    name = f"{SECRET_VOLUME_PREFIX}{secret}"
    if len(name) <= DNS_LABEL_MAX and "." not in secret:
        return name
    digest = _sha256_hex(secret)[:8]
    keep = DNS_LABEL_MAX - len(SECRET_VOLUME_PREFIX) - len(digest)
    return f"{SECRET_VOLUME_PREFIX}{secret.replace('.', '-')[:keep]}{digest}"


# Where runtimes' client pods mount their FUSE on the host (upstream's), seen by the CSI node service.
RUNTIME_MOUNT_ROOT: Final = "/runtime-mnt"


def target_path(namespace: str, dataset: str) -> str:
    """A CacheRuntime client's FUSE mount on the host, and its PV's ``fluid_path``."""
    return f"{client_shared_path(namespace, dataset)}/cache-fuse"


def client_shared_path(namespace: str, dataset: str) -> str:
    """The folder of ``target_path()``: the client's hostPath (Bidirectional). Not the mount point
    itself, as upstream has it: a FUSE that died leaves a mount there that answers ENOTCONN, and the
    kubelet and the runtime stat a hostPath to start a container, so the client could not restart."""
    return f"{RUNTIME_MOUNT_ROOT}/cache/{namespace}/{dataset}"


def empty_dir_tier_mount_path(level: int) -> str:
    """Container path of an emptyDir tiered-store level (upstream's, one per level)."""
    return f"{TIERED_STORE_ROOT}/level-{level}-index-0-emptydir"


def host_path_tier_mount_path(level: int, index: int) -> str:
    """Container path of the ``index``-th path of a hostPath tiered-store level (upstream's)."""
    return f"{TIERED_STORE_ROOT}/level-{level}-index-{index}-hostpath"


def memory_tier_volume(level: int) -> str:
    return f"tiered-store-level-{level}-memory"


def tier_volume(level: int, index: int) -> str:
    """Pod volume of an emptyDir level (index 0) or of one path of a hostPath level."""
    return f"tiered-store-level-{level}-index-{index}"


def component_config_volume(runtime: str) -> str:
    """The runtime config's volume in a component pod (upstream: ``fluid-runtime-<name>-config``)."""
    return f"fluid-runtime-{runtime}-config"


def extra_configmap_volume(runtime: str, configmap: str) -> str:
    """Volume of a class extraResources ConfigMap in a component pod (upstream:
    ``fluid-extra-<runtime>-<configMap>``), shortened when it would not fit a DNS label."""
    return dns_label(f"fluid-extra-{runtime}-{configmap}")


# The prefix of every ``fuse_node_label()``: the only node labels the CSI node service may set.
FUSE_NODE_LABEL_PREFIX: Final = "fluid.io/f-"


def client_pod_selector(runtime: str) -> str:
    """Label selector of a runtime's client pods (its DaemonSet's selector labels)."""
    component = component_name(runtime, "client")
    return f"{LABEL_CACHERUNTIME_NAME}={runtime},{LABEL_CACHERUNTIME_COMPONENT}={component}"


def fuse_node_label(namespace: str, dataset: str) -> str:
    """Label key (value ``"true"``) of the nodes where a dataset's FUSE runs: the client's
    nodeSelector and the workers' preferred node affinity (upstream's ``fluid.io/f-<ns>-<name>``)."""
    return f"fluid.io/{fit_63(f'f-{namespace}-{dataset}')}"


def shared_field_manager(namespace: str, runtime: str) -> str:
    """Field manager of one runtime's writes to an object several runtimes share (a class's extra
    ConfigMap): each runtime then owns its own ownerReference, and releasing one keeps the others'."""
    return f"{CONTROLLER_FIELD_MANAGER}/{namespace}/{runtime}"


# --- cache components -----------------------------------------------------------------------------
def component_name(dataset: str, component: Component) -> str:
    """StatefulSet (master, worker) or DaemonSet (client) of a dataset's cache component."""
    return f"{dataset}-{component}"


def component_service(dataset: str, component: Component) -> str:
    """Headless Service of a component."""
    return f"svc-{dataset}-{component}"


def service_host(service: str, namespace: str) -> str:
    """In-cluster DNS name of a Service (no cluster domain: resolvers search it)."""
    return f"{service}.{namespace}.svc"


# --- PV/PVC ---------------------------------------------------------------------------------------
def dataset_pv(namespace: str, dataset: str) -> str:
    return f"{namespace}-{dataset}"


def dataset_pvc(dataset: str) -> str:
    return dataset


def dataset_volume_handle(namespace: str, dataset: str) -> str:
    """CSI volumeHandle of a dataset's static PV: the PV's own name, unique in the cluster."""
    return dataset_pv(namespace, dataset)


def dataset_curvine_path(namespace: str, dataset: str) -> str:
    """A FUSE dataset's directory in the cache filesystem: one per dataset, never shared."""
    return f"/{namespace}/{dataset}"


def dataset_pvc_label(namespace: str, dataset: str) -> str:
    """Label key marking a dataset's PVC (value ``"true"``). The part after ``fluid.io/`` is
    limited to 63 characters, so a long namespace + name pair is shortened (``fit_63``)."""
    return f"fluid.io/{fit_63(f's-{namespace}-{dataset}')}"


def is_dataset_pvc_label(key: str) -> bool:
    return key.startswith(DATASET_PVC_LABEL_PREFIX)


def dataset_id(namespace: str, dataset: str) -> str:
    """Value of ``fluid.io/dataset-id``. Readers must not parse it (namespaces and names both may
    contain ``-``, and long pairs are shortened): a Fluid PVC's dataset is the PVC's own name."""
    return fit_63(f"{namespace}-{dataset}")


# --- CSI ------------------------------------------------------------------------------------------
def cluster_id(master_addrs: str) -> str:
    return _sha256_hex(master_addrs)[:8]


def volume_handle(cluster: str, fs_path: str, pv_name: str) -> str:
    return f"{cluster}@{fs_path}@{pv_name}"


def fuse_mounts_root(plugins_root: str = KUBELET_PLUGINS_ROOT) -> str:
    """Host directory holding every mount key's directory: the driver's own."""
    return f"{plugins_root}/kubernetes.io/csi/curvine"


def fuse_mount_key_dir(mount_key: str, plugins_root: str = KUBELET_PLUGINS_ROOT) -> str:
    """Host directory owned by one mount key (the FUSE mount point lives inside it)."""
    return f"{fuse_mounts_root(plugins_root)}/{mount_key}"


def fuse_mount_path(mount_key: str, plugins_root: str = KUBELET_PLUGINS_ROOT) -> str:
    return f"{fuse_mount_key_dir(mount_key, plugins_root)}/fuse-mount"


# curvine-fuse's configuration file of one mount key, beside its mount point (so a standalone FUSE
# pod, which mounts the key's directory, reads it at the same path).
FUSE_CONFIG_FILE: Final = "curvine-fuse.toml"


def fuse_config_path(mnt_path: str) -> str:
    """The configuration file of the FUSE mounted at ``mnt_path`` (a mount key's mount point)."""
    return f"{mnt_path.rsplit('/', 1)[0]}/{FUSE_CONFIG_FILE}"


def registration_socket_name(driver: str = CSI_DRIVER) -> str:
    """The node service's socket in kubelet's plugins_registry: ``{plugin name}-reg.sock``, the name
    kubelet's plugin watcher README recommends and node-driver-registrar uses."""
    return f"{driver}-reg.sock"


def csi_staging_root(plugins_root: str = KUBELET_PLUGINS_ROOT) -> str:
    """kubelet's directory of this driver's staging paths (other drivers' are beside it)."""
    return f"{plugins_root}/kubernetes.io/csi/{CSI_DRIVER}"


def csi_staging_path(volume_handle: str, plugins_root: str = KUBELET_PLUGINS_ROOT) -> str:
    """Where kubelet (1.24+) stages a CSI volume: a per-driver directory named by the hex sha256 of
    the volume handle. Used by the local kubelet stand-in and tests, so they stage where kubelet would."""
    digest = _sha256_hex(volume_handle)
    return f"{csi_staging_root(plugins_root)}/{digest}/globalmount"


def csi_publish_target(pod_uid: str, pv_name: str, kubelet_root: str = KUBELET_ROOT) -> str:
    """Where kubelet asks a CSI driver to publish a pod's volume."""
    return f"{kubelet_root}/pods/{pod_uid}/volumes/kubernetes.io~csi/{pv_name}/mount"


def fuse_mount_name(node: str, mount_key: str) -> str:
    """Name of the FuseMount mirroring one (node, mount key). The mount key must itself be a valid
    label value (at most 63 characters) since it is also the ``fluid.io/mount-key`` label."""
    suffix = f"-{mount_key[:FUSE_MOUNT_KEY_PREFIX_LENGTH]}"
    return f"{node[: DNS_SUBDOMAIN_MAX - len(suffix)]}{suffix}"


def fuse_mount_labels(node: str, mount_key: str) -> dict[str, str]:
    return {LABEL_NODE: fit_63(node), LABEL_MOUNT_KEY: mount_key}


# Standalone mount mode: the FUSE of one (node, mount key) runs in a pod of its own.
FUSE_POD_COMPONENT: Final = "curvine-fuse"
FUSE_POD_CONTAINER: Final = "fuse"
FUSE_POD_PREFIX: Final = "curvine-fuse"


def fuse_pod_name(node: str, mount_key: str) -> str:
    """Name of the standalone FUSE pod of one (node, mount key): a DNS label."""
    return fit_63(f"{FUSE_POD_PREFIX}-{mount_key[:FUSE_MOUNT_KEY_PREFIX_LENGTH]}-{node}")


def fuse_pod_labels(node: str, mount_key: str) -> dict[str, str]:
    return {LABEL_APP_COMPONENT: FUSE_POD_COMPONENT, **fuse_mount_labels(node, mount_key)}


def fuse_mount_node_selector(node: str) -> str:
    """Label selector for one node's FuseMounts (node names may exceed a label value's 63)."""
    return f"{LABEL_NODE}={fit_63(node)}"


def fuse_program_name(program: str) -> str:
    """The short name of a FUSE command line: its executable's base name, or the module of
    ``python -m MODULE``."""
    words = program.split()
    if "-m" in words[:-1]:
        return words[words.index("-m") + 1]
    return words[0].rsplit("/", 1)[-1] if words else ""


def is_fuse_standin(program: str) -> bool:
    return fuse_program_name(program) in (FUSE_STANDIN_PROGRAM, FUSE_STANDIN_MODULE)


# --- cache placement (issue 31, slice G) ----------------------------------------------------------
# Upstream's cache-node labels (pkg/utils/dataset/lifecycle/node.go, as its CacheRuntime engine sets
# them in Sync): on every node where one of a runtime's worker pods runs. Upstream's runtime type of a
# CacheRuntime is "cache"; its CacheRuntime has no tiered store in its RuntimeInfo, so the capacity
# label it writes is the total "0B" and no memory or disk one.
CACHE_RUNTIME_TYPE: Final = "cache"
# How many datasets cache on the node (a count, kept by each runtime that labels or unlabels it).
LABEL_DATASET_NUM: Final = "fluid.io/dataset-num"
# Upstream's key of the node an Exclusive dataset holds; the value is ``exclusive_label_value()``.
LABEL_EXCLUSIVE: Final = "fluid_exclusive"
CACHE_TOTAL_CAPACITY: Final = "0B"
# The worker pods of every runtime: the controller's one label-selected pod watch.
WORKER_POD_SELECTOR: Final = f"{LABEL_APP_COMPONENT}=worker,{LABEL_APP_MANAGED_BY}={MANAGED_BY}"
# A pod's own request for a dataset's cache nodes: ``fluid.io/dataset.{name}.sched: required``.
POD_SCHED_LABEL_PREFIX: Final = "fluid.io/dataset."
POD_SCHED_LABEL_SUFFIX: Final = ".sched"
SCHED_REQUIRED: Final = "required"
# The built-in localities of NodeAffinityWithCache's args: nodes of the workers, nodes of the FUSE.
LOCALITY_NODE: Final = "fluid.io/node"
LOCALITY_FUSE: Final = "fluid.io/fuse"


def cache_node_label(namespace: str, dataset: str) -> str:
    """Upstream's common label (value ``"true"``) of a node caching the dataset with any runtime,
    ``fluid.io/s-{ns}-{name}``: the key ``NodeAffinityWithCache`` steers pods to. The same rule as
    ``dataset_pvc_label()`` (upstream uses one key for both)."""
    return dataset_pvc_label(namespace, dataset)


def cache_runtime_node_label(namespace: str, dataset: str) -> str:
    """Upstream's runtime label (value ``"true"``), ``fluid.io/s-cache-{ns}-{name}``: which nodes this
    runtime labelled, and so which it must unlabel."""
    return f"fluid.io/{fit_63(f's-{CACHE_RUNTIME_TYPE}-{namespace}-{dataset}')}"


def cache_total_capacity_label(namespace: str, dataset: str) -> str:
    """Upstream's total cache capacity label, ``fluid.io/s-h-cache-t-{ns}-{name}``."""
    return f"fluid.io/{fit_63(f's-h-{CACHE_RUNTIME_TYPE}-t-{namespace}-{dataset}')}"


def exclusive_label_value(namespace: str, dataset: str) -> str:
    """Value of ``fluid_exclusive`` on a node an Exclusive dataset holds: ``{ns}_{name}``."""
    return fit_63(f"{namespace}_{dataset}")


def pod_sched_label(dataset: str) -> str:
    """The label a pod sets to ``required`` to be placed only on the dataset's cache nodes."""
    return f"{POD_SCHED_LABEL_PREFIX}{dataset}{POD_SCHED_LABEL_SUFFIX}"


def sched_label_dataset(key: str) -> str | None:
    """The dataset of a ``fluid.io/dataset.{name}.sched`` label key (upstream's regex
    ``^fluid\\.io/dataset\\.([A-Za-z0-9.-]*)\\.sched$``), else None."""
    shortest = len(POD_SCHED_LABEL_PREFIX) + len(POD_SCHED_LABEL_SUFFIX)
    if len(key) < shortest or not key.startswith(POD_SCHED_LABEL_PREFIX):
        return None
    if not key.endswith(POD_SCHED_LABEL_SUFFIX):
        return None
    middle = key[len(POD_SCHED_LABEL_PREFIX) : len(key) - len(POD_SCHED_LABEL_SUFFIX)]
    if not all(c.isascii() and (c.isalnum() or c in ".-") for c in middle):
        return None
    return middle


# --- DataLoad (issue 31, slice F) ----------------------------------------------------------------
KIND_DATALOAD: Final = "DataLoad"
# The operation's name in a class's dataOperationSpecs and the key of a Dataset's status.operationRef
# (upstream's lock: the DataLoad running on the Dataset).
OPERATION_DATALOAD: Final = "DataLoad"
# Upstream's phases of a data operation and the duration an unfinished one shows.
PHASE_PENDING: Final = "Pending"
PHASE_EXECUTING: Final = "Executing"
PHASE_COMPLETE: Final = "Complete"
PHASE_FAILED: Final = "Failed"
DURATION_UNFINISHED: Final = "Unfinished"
# Upstream's Event reasons of data operations (pkg/common/constants.go).
REASON_OPERATION_NOT_VALID: Final = "DataOperationNotValid"
REASON_OPERATION_NOT_SUPPORTED: Final = "DataOperationNotSupport"
REASON_OPERATION_WAITING: Final = "DataOperationWaiting"
REASON_OPERATION_EXECUTING: Final = "DataOperationExecuting"
REASON_OPERATION_SUCCEEDED: Final = "DataOperationSucceed"
REASON_OPERATION_FAILED: Final = "DataOperationFailed"
# The env upstream's cache dataloader chart gives the loader (charts/fluid-dataloader/cache).
ENV_DATALOAD_METADATA: Final = "FLUID_DATALOAD_METADATA"
ENV_DATALOAD_DATA_PATH: Final = "FLUID_DATALOAD_DATA_PATH"
ENV_DATALOAD_PATH_REPLICAS: Final = "FLUID_DATALOAD_PATH_REPLICAS"
# Labels upstream's chart puts on the Job (role dataload-job) and its pod (role dataload-pod).
LABEL_DATALOAD_RELEASE: Final = "release"
LABEL_DATALOAD_ROLE: Final = "role"
LABEL_DATALOAD_APP: Final = "app"
LABEL_DATALOAD_TARGET: Final = "targetDataset"
DATALOAD_JOB_ROLE: Final = "dataload-job"
DATALOAD_POD_ROLE: Final = "dataload-pod"
DATALOAD_APP: Final = "cache"
DATALOAD_CONTAINER: Final = "dataloader"
DATALOAD_BACKOFF_LIMIT: Final = 3


def dataload_release(dataload: str) -> str:
    """Upstream's release name of a DataLoad (``GetDataLoadReleaseName``)."""
    return f"{dataload}-loader"


def dataload_job(dataload: str) -> str:
    """The loader Job of a DataLoad, as upstream's chart names it: ``{name}-loader-job``."""
    return fit_63(f"{dataload_release(dataload)}-job")


# A Cron DataLoad's CronJob carries role dataload-cronjob (upstream's chart); its Jobs the Job's labels.
DATALOAD_CRONJOB_ROLE: Final = "dataload-cronjob"
# The API server refuses a longer CronJob name: it names its Jobs with an 11-character suffix.
CRONJOB_NAME_MAX: Final = 52


def dataload_cronjob(dataload: str) -> str:
    """A Cron DataLoad's CronJob: the Job's name (upstream's), shortened to what a CronJob may be."""
    return fit_63(f"{dataload_release(dataload)}-job", CRONJOB_NAME_MAX)


POLICY_CRON: Final = "Cron"
DURATION_RUNNING_AGAIN: Final = "-"  # upstream's duration of a Cron DataLoad whose next Job runs


# --- execution entries (issue 31): mountUFS and reportSummary run in the first master pod
# Upstream's Dataset condition "the cache system for the dataset is updated" (DatasetUpdateReady): True
# once mountUFS has mounted every spec.mounts entry, False with the failure.
CONDITION_UFS_UPDATE_READY: Final = "UpdateReady"
REASON_UFS_MOUNTED: Final = "UFSMounted"
REASON_MOUNT_UFS_FAILED: Final = "MountUFSFailed"
REASON_REPORT_SUMMARY_FAILED: Final = "ReportSummaryFailed"
# Upstream's common.MinExecutionTimeoutSeconds: an entry's timeout is at least this.
MIN_EXECUTION_TIMEOUT_SECONDS: Final = 20
# Upstream requeues a runtime every 90 s (utils.defaultRuntimeReconcileDuration); its cache states
# come with that pass, so reportSummary runs as often.
REPORT_SUMMARY_PERIOD_SECONDS: Final = 90.0
# Upstream schemes the cache does not mount (common.IsFluidNativeScheme): not expected in mountUFS's output.
FLUID_NATIVE_SCHEMES: Final = ("local://", "pvc://")


def master_pod_name(dataset: str) -> str:
    """The first master pod (its StatefulSet's ordinal 0): where the class's entries run."""
    return f"{component_name(dataset, 'master')}-0"


def master_pods_selector() -> str:
    """Every runtime's master pods (the controller's own pod watch)."""
    return f"{LABEL_APP_MANAGED_BY}={MANAGED_BY},{LABEL_APP_COMPONENT}=master"


# --- inspect (issue 32)
# ``kubectl fluid inspect dataset DS -o json|yaml``: one dataset and its parts, of the plugin's own group.
KIND_DATASET_INSPECTION: Final = "DatasetInspection"

# --- diagnose (issue 32)
# generateName of the pod ``kubectl fluid diagnose`` creates with dryRun=All to ask whether the API
# server reaches the webhook (never stored).
DIAGNOSE_PROBE_PREFIX: Final = "fluid-diagnose-probe-"

# --- debug pod (issue 32) -------------------------------------------------------------------------
# fluid-system's pods by their component label (manifests/): the node's CSI node pod, the webhook.
CSI_NODE_DAEMONSET: Final = "fluid-csi-node"
CSI_NODE_COMPONENT: Final = "csi-node"
CSI_NODE_CONTAINER: Final = "csi-driver"
WEBHOOK_COMPONENT: Final = "webhook"

# --- the webhook on N worker processes (issue 33) ---------------------------------------------------
# Every answer of fluid-webhook names the process that gave it (its pid): with ``--workers N`` the
# kernel spreads connections over N processes on one port, and a probe or a test must tell them apart.
WEBHOOK_WORKER_HEADER: Final = "fluid-webhook-worker"
# prometheus_client's own variable: where the workers' metrics live, summed by whichever answers /metrics.
PROMETHEUS_MULTIPROC_DIR_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"
# The heartbeat file a worker's event loop touches; the supervisor replaces a worker that stops.
WEBHOOK_HEARTBEAT_ENV: Final = "FLUID_WEBHOOK_HEARTBEAT"
