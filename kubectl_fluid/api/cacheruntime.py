"""CacheRuntime: the cache cluster serving one Dataset of the same name, with upstream Fluid's
v1alpha1 shape (``api/v1alpha1/cacheruntime_types.go``, ``cacheruntime_status.go``).

Components are structs, not pointers, as upstream has them: an absent ``master`` reads as an empty
one (enabled, one replica). A component runs when the class defines it and ``disabled`` is not set;
``spec.client.disabled: true`` (or a class without a client) makes the runtime clientless.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, Condition, CrdInfo, KubeModel, PrinterColumn, Resource
from kubectl_fluid.api.kubetypes import KubeObject, Quantity

RuntimePhase = Literal["", "NotReady", "PartialReady", "Ready"]
CleanPolicy = Literal["OnRuntimeDeleted", "OnDemand"]


class VersionSpec(KubeModel):
    image: str | None = None
    image_tag: str | None = None
    image_pull_policy: str | None = None

    def reference(self) -> str | None:
        """``image:imageTag``, only when both are set (upstream overrides the image only then)."""
        return f"{self.image}:{self.image_tag}" if self.image and self.image_tag else None


class PodMetadata(KubeModel):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class ProcessMemoryMediumSource(KubeModel):
    """Cache in the component process's own memory; the quota is its size."""

    quota: Quantity


class EmptyDirMediumSource(KubeModel):
    quota: Quantity
    medium: str | None = Field(default=None, description='emptyDir medium: "" (node disk) or "Memory".')


class HostPathMediumSource(KubeModel):
    paths: list[str] = Field(min_length=1)
    quotas: list[Quantity] = Field(min_length=1)
    type: str | None = Field(default=None, description="core/v1 HostPathType of the paths.")


class RuntimeTieredStoreLevel(KubeModel):
    """One level of the cache: one of processMemory, emptyDir or hostPath (checked by the
    controller, as upstream does), with its watermarks."""

    process_memory: ProcessMemoryMediumSource | None = None
    empty_dir: EmptyDirMediumSource | None = None
    host_path: HostPathMediumSource | None = None
    high: str | None = Field(default=None, description="High watermark ratio, e.g. 0.95.")
    low: str | None = Field(default=None, description="Low watermark ratio, e.g. 0.7.")

    def media(self) -> list[str]:
        present = (
            ("processMemory", self.process_memory),
            ("emptyDir", self.empty_dir),
            ("hostPath", self.host_path),
        )
        return [name for name, value in present if value is not None]


class RuntimeTieredStore(KubeModel):
    levels: list[RuntimeTieredStoreLevel] | None = None


class RuntimeComponentCommonSpec(KubeModel):
    """What a runtime may set on each of its components (upstream's RuntimeComponentCommonSpec)."""

    disabled: bool | None = None
    runtime_version: VersionSpec | None = None
    options: dict[str, str] | None = None
    pod_metadata: PodMetadata | None = None
    resources: KubeObject | None = Field(default=None, description="core/v1 ResourceRequirements.")
    env: list[KubeObject] | None = Field(default=None, description="core/v1 EnvVars.")
    volume_mounts: list[KubeObject] | None = Field(default=None, description="core/v1 VolumeMounts.")
    args: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    node_selector: dict[str, str] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-map-type": "atomic"}
    )
    tolerations: list[KubeObject] | None = Field(default=None, description="core/v1 Tolerations.")

    # Set by the subclasses that have them; None where a component has no such field.
    def replica_count(self) -> int | None:
        return None

    def tiered_levels(self) -> list[RuntimeTieredStoreLevel]:
        return []


class CacheRuntimeMasterSpec(RuntimeComponentCommonSpec):
    replicas: int = Field(default=1, ge=0)

    def replica_count(self) -> int | None:
        return self.replicas


class CacheRuntimeWorkerSpec(RuntimeComponentCommonSpec):
    replicas: int = Field(default=1, ge=0)
    tiered_store: RuntimeTieredStore | None = None

    def replica_count(self) -> int | None:
        return self.replicas

    def tiered_levels(self) -> list[RuntimeTieredStoreLevel]:
        return list((self.tiered_store.levels if self.tiered_store else None) or ())


class CacheRuntimeClientSpec(RuntimeComponentCommonSpec):
    tiered_store: RuntimeTieredStore | None = None
    clean_policy: CleanPolicy = "OnRuntimeDeleted"

    def tiered_levels(self) -> list[RuntimeTieredStoreLevel]:
        return list((self.tiered_store.levels if self.tiered_store else None) or ())


class CacheRuntimeSpec(KubeModel):
    """The runtime's class and what it changes of each component the class defines."""

    runtime_class_name: str = Field(
        min_length=1, description="Name of the CacheRuntimeClass whose templates the components run."
    )
    master: CacheRuntimeMasterSpec = Field(
        default_factory=CacheRuntimeMasterSpec,
        description="The master (a StatefulSet): replicas and overrides.",
    )
    worker: CacheRuntimeWorkerSpec = Field(
        default_factory=CacheRuntimeWorkerSpec,
        description="The workers (a StatefulSet): replicas, cache tiers and overrides.",
    )
    client: CacheRuntimeClientSpec = Field(
        default_factory=CacheRuntimeClientSpec,
        description="The client; disabled: true makes the runtime clientless.",
    )
    options: dict[str, str] | None = Field(
        default=None, description="Options of every component, rendered into the runtime config."
    )
    pod_metadata: PodMetadata | None = Field(
        default=None, description="Labels and annotations of every component's pods."
    )
    image_pull_secrets: list[KubeObject] | None = Field(
        default=None, description="core/v1 LocalObjectReferences."
    )
    volumes: list[KubeObject] | None = Field(
        default=None, description="core/v1 Volumes the components' volumeMounts may name."
    )

    def component(self, component: names.Component) -> RuntimeComponentCommonSpec:
        spec: RuntimeComponentCommonSpec = getattr(self, component)
        return spec


class RuntimeComponentStatus(KubeModel):
    phase: RuntimePhase = ""
    reason: str | None = None
    message: str | None = None
    ready_replicas: int | None = None
    current_replicas: int | None = None
    desired_replicas: int | None = None
    unavailable_replicas: int | None = None
    available_replicas: int | None = None


class CacheRuntimeStatus(KubeModel):
    """What the controller observed of the runtime and its components."""

    value_file: str | None = Field(
        default=None, description="The ConfigMap holding runtime.json and runtime.sh."
    )
    setup_duration: str | None = Field(default=None, description="How long the runtime took to become ready.")
    conditions: list[Condition] = Field(
        default_factory=list,
        description="The latest observations of its state; Ready says why when it is not.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    selector: str | None = Field(default=None, description="Label selector of the workers' pods.")
    cache_affinity: KubeObject | None = Field(
        default=None, description="core/v1 NodeAffinity of the workers."
    )
    master: RuntimeComponentStatus | None = Field(
        default=None, description="The master's phase and replicas."
    )
    worker: RuntimeComponentStatus | None = Field(
        default=None, description="The workers' phase and replicas."
    )
    client: RuntimeComponentStatus | None = Field(default=None, description="The client's phase and pods.")
    mount_time: str | None = Field(default=None, description="When the data sources were last mounted.")
    # The product's own.
    observed_generation: int | None = Field(
        default=None, description="The generation of the spec the conditions describe."
    )
    mounted_ufs: str | None = Field(
        default=None,
        description="What mountUFS last mounted: the master pod's uid, its container's restart count "
        "and a hash of the Dataset's spec.mounts ({uid}/{restarts}/{hash}); any changed runs it again.",
    )


class CacheRuntime(Resource):
    """A cache cluster (master, worker, optional client) serving the Dataset of the same name."""

    crd: ClassVar[CrdInfo] = CrdInfo(
        kind="CacheRuntime",
        plural="cacheruntimes",
        scope="Namespaced",
        # Upstream prints Age and a Status column whose .status.phase does not exist; these say more.
        printer_columns=(
            PrinterColumn("RuntimeClass", ".spec.runtimeClassName"),
            PrinterColumn("Ready", f'.status.conditions[?(@.type=="{names.CONDITION_READY}")].status'),
            AGE,
        ),
    )

    kind: str = "CacheRuntime"
    spec: CacheRuntimeSpec
    status: CacheRuntimeStatus | None = None
