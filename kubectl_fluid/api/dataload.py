"""The DataLoad kind (``data.fluid.io/v1alpha1``): load a Dataset's paths into its cache.

The shape is upstream Fluid's (``api/v1alpha1/dataload_types.go``, status ``OperationStatus`` of
``status.go``), so upstream's manifests apply unchanged under ``--validate=strict``. The core/v1
parts (affinity, tolerations, resources) are open objects (``kubetypes.py`` says why). The
controller's part is ``controller/dataload/``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, DATE_TIME, Condition, CrdInfo, KubeModel, PrinterColumn, Resource
from kubectl_fluid.api.cacheruntime import PodMetadata
from kubectl_fluid.api.kubetypes import KubeObject

Policy = Literal["Once", "Cron", "OnEvent"]
Phase = Literal["", "Pending", "Executing", "Complete", "Failed"]


class TargetDataset(KubeModel):
    """The Dataset a data operation is about."""

    name: str = Field(description="Name of the Dataset to load.")
    namespace: str | None = Field(default=None, description="Its namespace: the DataLoad's own.")


class ObjectRef(KubeModel):
    api_version: str | None = None
    kind: str
    name: str
    namespace: str | None = None


class Prefer(KubeModel):
    name: str
    weight: int


class Require(KubeModel):
    name: str


class AffinityStrategy(KubeModel):
    depend_on: ObjectRef | None = None
    policy: str | None = None
    prefers: list[Prefer] | None = None
    requires: list[Require] | None = None


class OperationRef(ObjectRef):
    """The operation this one runs after (upstream's workflow of data operations)."""

    affinity_strategy: AffinityStrategy | None = None


class TargetPath(KubeModel):
    """A path of the Dataset to load, and how many replicas of it."""

    path: str = Field(description="A path in the Dataset to load.")
    replicas: int | None = Field(default=None, description="How many cache replicas to load (default 1).")


class DataLoadSpec(KubeModel):
    """What to load, how often, and the loader pod's settings."""

    dataset: TargetDataset | None = Field(default=None, description="The Dataset to load.")
    load_metadata: bool | None = Field(default=None, description="Load the metadata too.")
    target: list[TargetPath] | None = Field(default=None, description="Paths to load (default: /).")
    options: dict[str, str] | None = Field(default=None, description="Extra properties for the runtime.")
    pod_metadata: PodMetadata | None = Field(default=None, description="Labels and annotations of its pod.")
    affinity: KubeObject | None = Field(default=None, description="core/v1 Affinity of its pod.")
    tolerations: list[KubeObject] | None = Field(default=None, description="core/v1 Tolerations.")
    node_selector: dict[str, str] | None = Field(default=None, description="Node selector of its pod.")
    scheduler_name: str | None = Field(default=None, description="Scheduler of its pod.")
    policy: Policy = Field(default="Once", description="Once, Cron or OnEvent.")
    schedule: str | None = Field(default=None, description="Cron schedule, for policy Cron.")
    run_after: OperationRef | None = Field(
        default=None, description="The operation to run after (not run by this product: refused)."
    )
    ttl_seconds_after_finished: int | None = Field(
        default=None, description="Seconds to keep it after it finished or failed."
    )
    resources: KubeObject | None = Field(default=None, description="core/v1 ResourceRequirements.")


class WaitingStatus(KubeModel):
    """What a data operation waits for."""

    operation_complete: bool | None = None


class OperationStatus(KubeModel):
    """Upstream's status of every data operation."""

    phase: Phase | None = Field(default=None, description="Pending, Executing, Complete or Failed.")
    duration: str | None = Field(default=None, description="How long it took (Unfinished until it ends).")
    conditions: list[Condition] = Field(default_factory=list, description="How its phase changed.")
    infos: dict[str, str] | None = Field(default=None, description="Name-value facts of the operation.")
    last_schedule_time: str | None = Field(
        default=None, description="When a Cron operation last ran.", json_schema_extra=DATE_TIME
    )
    last_successful_time: str | None = Field(
        default=None, description="When a Cron operation last completed.", json_schema_extra=DATE_TIME
    )
    waiting_for: WaitingStatus | None = Field(default=None, description="What it waits for.")
    node_affinity: KubeObject | None = Field(default=None, description="core/v1 NodeAffinity of its pods.")


class DataLoad(Resource):
    """Load (part of) a Dataset into its cache, by a Job its runtime's class describes."""

    crd: ClassVar[CrdInfo] = CrdInfo(
        kind="DataLoad",
        plural="dataloads",
        scope="Namespaced",
        printer_columns=(
            PrinterColumn("Dataset", ".spec.dataset.name"),
            PrinterColumn("Phase", ".status.phase"),
            AGE,
            PrinterColumn("Duration", ".status.duration"),
        ),
        short_names=("load",),
    )

    kind: str = names.KIND_DATALOAD
    spec: DataLoadSpec = Field(default_factory=DataLoadSpec)
    status: OperationStatus | None = None
