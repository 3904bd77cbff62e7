"""Dataset: where the data lives (mounts) and how pods may access it, with upstream Fluid's
v1alpha1 shape (``api/v1alpha1/dataset_types.go``) so a Fluid user's manifests apply unchanged.

The product acts on ``mounts``, ``sharedOptions``, ``sharedEncryptOptions``, ``accessModes``,
``placement``, ``nodeAffinity`` and ``tolerations``; the rest of upstream's spec is accepted and kept.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, Condition, CrdInfo, KubeModel, PrinterColumn, Resource
from kubectl_fluid.api.kubetypes import KubeObject

DatasetPhase = Literal["Pending", "Bound", "Failed", "NotBound", "Updating", "DataMigrating", ""]
PlacementMode = Literal["Exclusive", "Shared", ""]
DEFAULT_ACCESS_MODES = ("ReadOnlyMany",)


class SecretKeySelector(KubeModel):
    """A key of a Secret in the Dataset's namespace. Upstream's schema leaves ``key`` optional; the
    runtime config needs it, so a missing key is a condition on the runtime, not a refusal here."""

    name: str = Field(min_length=1)
    key: str | None = None


class EncryptOptionSource(KubeModel):
    secret_key_ref: SecretKeySelector | None = None


class EncryptOption(KubeModel):
    """An option whose value is secret: components read it from a file, never from the spec."""

    name: str = Field(min_length=1, description="Option name, as the cache system expects it.")
    value_from: EncryptOptionSource | None = None


class Mount(KubeModel):
    """One data source of the Dataset."""

    mount_point: str = Field(min_length=5, description="URI of the source, e.g. s3://bucket/dir.")
    options: dict[str, str] | None = None
    name: str | None = Field(default=None, description="Name of the mount; also its default path.")
    path: str | None = Field(
        default=None, description="Absolute path of the mount in the dataset, default /{name}."
    )
    read_only: bool | None = None
    shared: bool | None = None
    encrypt_options: list[EncryptOption] | None = None

    def dataset_path(self) -> str:
        """Where the mount sits in the dataset, as upstream computes it: ``path`` when absolute (a
        relative one is ignored), else ``/{name}``."""
        return path_in_dataset(self.path, self.name)


def path_in_dataset(path: str | None, name: str | None) -> str:
    """Mount.dataset_path()'s rule, for a mount as stored."""
    if path and path.startswith("/"):
        return path
    return "/" + (name or "").lstrip("/")


def cache_mount_paths(mounts: list[dict[str, Any]] | None) -> list[str]:
    """Where each mount the cache mounts sits in the dataset (upstream's
    GenUFSPathInUnifiedNamespace), in the mounts' order: ``path`` when absolute (a relative one is
    ignored), else ``/{name}``; Fluid-native schemes, which the cache does not mount, left out. Read
    from the stored mounts as they are, so a mount the model would refuse still counts."""
    return [
        path_in_dataset(str(m.get("path") or ""), str(m.get("name") or ""))
        for m in mounts or []
        if not str(m.get("mountPoint", "")).startswith(names.FLUID_NATIVE_SCHEMES)
    ]


class User(KubeModel):
    uid: int
    gid: int
    user: str
    group: str


class CacheableNodeAffinity(KubeModel):
    required: KubeObject | None = Field(default=None, description="A core/v1 NodeSelector.")


class DatasetRuntime(KubeModel):
    """A runtime bound to the Dataset."""

    name: str | None = None
    namespace: str | None = None
    category: str | None = None
    type: str | None = None
    master_replicas: int | None = None


class DataRestoreLocation(KubeModel):
    path: str | None = None
    node_name: str | None = None


class DatasetSpec(KubeModel):
    """What the Dataset holds and how pods may use it."""

    mounts: list[Mount] | None = Field(
        default=None,
        min_length=1,
        description="The data sources (e.g. s3://bucket/dir), each at its own path of the dataset.",
    )
    owner: User | None = Field(default=None, description="The user and group that own the dataset's files.")
    node_affinity: CacheableNodeAffinity | None = Field(
        default=None,
        description="Nodes the dataset may be cached on; pods that use the dataset are scheduled by it.",
    )
    tolerations: list[KubeObject] | None = Field(
        default=None, description="core/v1 Tolerations of the cache's pods, for tainted cache nodes."
    )
    access_modes: list[str] | None = Field(
        default=None,
        description="How the dataset's volume may be mounted (PersistentVolume access modes); "
        "default [ReadOnlyMany].",
    )
    runtimes: list[DatasetRuntime] | None = Field(
        default=None,
        description="Runtimes that serve the dataset (upstream's; the status names the bound one).",
    )
    placement: PlacementMode | None = Field(
        default=None,
        description='Exclusive (also "", the default): a node caches this dataset alone; Shared: '
        "a node may cache other datasets too.",
    )
    data_restore_location: DataRestoreLocation | None = Field(
        default=None, description="Where a backup of the dataset's metadata is restored from."
    )
    shared_options: dict[str, str] | None = Field(
        default=None, description="Options of every mount; a mount's own options win."
    )
    shared_encrypt_options: list[EncryptOption] | None = Field(
        default=None, description="Encrypt options of every mount; a mount's own win by name."
    )

    def all_mounts(self) -> list[Mount]:
        return list(self.mounts or ())

    def effective_access_modes(self) -> list[str]:
        return list(self.access_modes or DEFAULT_ACCESS_MODES)

    def is_exclusive(self) -> bool:
        return self.placement in (None, "", "Exclusive")


class HcfsStatus(KubeModel):
    endpoint: str | None = None
    underlayer_file_system_version: str | None = None


class DatasetStatus(KubeModel):
    """What the controller observed of the Dataset."""

    mounts: list[Mount] | None = Field(default=None, description="The mounts the cache has mounted.")
    ufs_total: str | None = Field(default=None, description="Total size of the data sources.")
    phase: DatasetPhase | None = Field(
        default=None, description="Bound once a runtime serves the dataset; NotBound while none can."
    )
    runtimes: list[DatasetRuntime] | None = Field(
        default=None, description="The runtime bound to the dataset."
    )
    conditions: list[Condition] = Field(
        default_factory=list, description="The latest observations of its state."
    )
    cache_states: dict[str, str] | None = Field(
        default=None,
        description="Cached size, capacity, percentage and hit ratio, as the cache reports them.",
    )
    hcfs: HcfsStatus | None = Field(
        default=None, description="The HCFS endpoint, where the cache offers one."
    )
    file_num: str | None = Field(default=None, description="Number of files in the data sources.")
    data_load_ref: str | None = Field(
        default=None, description="The DataLoad running on the dataset, if any."
    )
    data_backup_ref: str | None = Field(
        default=None, description="The DataBackup running on the dataset, if any."
    )
    operation_ref: dict[str, str] | None = Field(
        default=None, description="The data operation running on the dataset, by kind."
    )
    dataset_ref: list[str] | None = Field(
        default=None, description="Datasets that refer to this one (namespace/name)."
    )
    # The product's own.
    observed_generation: int | None = Field(
        default=None, description="The generation of the spec the conditions describe."
    )


# The same rules as ``names.dataset_name_error``, each with a message saying why it exists. They sit
# on the root (a rule may not sit on metadata), so each names its field: without ``fieldPath`` the API
# server reports a failing root rule as ``<nil>: Invalid value``.
_NAME_FIELD = {"fieldPath": ".metadata.name", "reason": "FieldValueInvalid"}
_NAME_RULE: dict[str, Any] = {
    "x-kubernetes-validations": [
        {
            "rule": f"size(self.metadata.name) <= {names.MAX_DATASET_NAME_LENGTH}",
            "message": names.DATASET_NAME_TOO_LONG_MESSAGE,
            **_NAME_FIELD,
        },
        {
            "rule": f"self.metadata.name.matches('{names.DNS_1035_LABEL_PATTERN}')",
            "message": names.DATASET_NAME_NOT_DNS_1035_MESSAGE,
            **_NAME_FIELD,
        },
    ]
}


class Dataset(Resource):
    """A set of data sources a cache runtime serves to pods."""

    model_config = ConfigDict(json_schema_extra=_NAME_RULE)
    crd: ClassVar[CrdInfo] = CrdInfo(
        kind="Dataset",
        plural="datasets",
        scope="Namespaced",
        # Upstream's columns, so `kubectl get dataset` reads as it does with Fluid.
        printer_columns=(
            PrinterColumn("Ufs Total Size", ".status.ufsTotal"),
            PrinterColumn("Cached", ".status.cacheStates.cached"),
            PrinterColumn("Cache Capacity", ".status.cacheStates.cacheCapacity"),
            PrinterColumn("Cached Percentage", ".status.cacheStates.cachedPercentage"),
            PrinterColumn("Phase", ".status.phase"),
            PrinterColumn("HCFS URL", ".status.hcfs.endpoint", priority=10),
            PrinterColumn("TOTAL FILES", ".status.fileNum", priority=11),
            PrinterColumn("CACHE HIT RATIO", ".status.cacheStates.cacheHitRatio", priority=10),
            AGE,
        ),
        short_names=("dataset",),
    )

    kind: str = "Dataset"
    spec: DatasetSpec = Field(default_factory=DatasetSpec)
    status: DatasetStatus | None = None
