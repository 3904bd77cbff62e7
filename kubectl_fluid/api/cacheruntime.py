"""CacheRuntime: the cache cluster serving one Dataset of the same name (SPEC §1)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field, model_validator

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, Condition, CrdInfo, KubeModel, PrinterColumn, Resource


class ProcessMemory(KubeModel):
    """Cache in the component process's own memory: no volume is mounted."""


class EmptyDirMedium(KubeModel):
    medium: str = Field(default="", description='emptyDir storage medium: "" (node disk) or "Memory".')


class HostPathMedium(KubeModel):
    path: str = Field(min_length=1, pattern="^/", description="Absolute directory on the node.")


# Cache systems use one to three tiers; the bound also lets the API server cost the CEL rule below.
MAX_TIERED_STORE_LEVELS = 8
_MEDIUMS = ("processMemory", "emptyDir", "hostPath")
_EXACTLY_ONE_MEDIUM = "exactly one of processMemory, emptyDir, hostPath must be set"


class Medium(KubeModel):
    """Where a tiered-store level keeps its data: exactly one of the fields."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    # Constant cost: the API server budgets CEL per list item, and a
                    # list-building rule over unbounded levels exceeded that budget.
                    "rule": " + ".join(f"(has(self.{m}) ? 1 : 0)" for m in _MEDIUMS) + " == 1",
                    "message": _EXACTLY_ONE_MEDIUM,
                }
            ]
        }
    )

    process_memory: ProcessMemory | None = None
    empty_dir: EmptyDirMedium | None = None
    host_path: HostPathMedium | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Medium:
        if sum(m is not None for m in (self.process_memory, self.empty_dir, self.host_path)) != 1:
            raise ValueError(_EXACTLY_ONE_MEDIUM)
        return self


class TieredStoreLevel(KubeModel):
    medium: Medium
    quota: str | None = Field(default=None, description="Capacity of the level, a quantity such as 2Gi.")
    high: str | None = Field(default=None, description="High watermark ratio, e.g. 0.95.")
    low: str | None = Field(default=None, description="Low watermark ratio, e.g. 0.7.")


class TieredStore(KubeModel):
    levels: list[TieredStoreLevel] = Field(default_factory=list, max_length=MAX_TIERED_STORE_LEVELS)


class ComponentSpec(KubeModel):
    """One cache component (master, worker or client); unset fields come from the runtime class."""

    disabled: bool = False
    replicas: int = Field(default=1, ge=0)
    options: dict[str, str] = Field(default_factory=dict)
    image: str | None = None
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    env: list[dict[str, Any]] = Field(default_factory=list, description="Container env (core/v1 EnvVar).")
    resources: dict[str, Any] = Field(
        default_factory=dict, description="Container resources (core/v1 ResourceRequirements)."
    )
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list, description="core/v1 Tolerations.")


class CachingComponentSpec(ComponentSpec):
    """A component that stores cached data (worker, client)."""

    tiered_store: TieredStore | None = None


class CacheRuntimeSpec(KubeModel):
    runtime_class_name: str = Field(min_length=1, description="Name of the CacheRuntimeClass.")
    options: dict[str, str] = Field(default_factory=dict, description="Options of every component.")
    master: ComponentSpec | None = None
    worker: CachingComponentSpec | None = None
    client: CachingComponentSpec | None = Field(
        default=None, description="The client; disabled: true makes the runtime clientless."
    )

    def component(self, component: names.Component) -> ComponentSpec | None:
        spec: ComponentSpec | None = getattr(self, component)
        return spec


class CacheRuntimeStatus(KubeModel):
    phase: str | None = None
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)


class CacheRuntime(Resource):
    """A cache cluster (master, worker, optional client) serving the Dataset of the same name."""

    crd: ClassVar[CrdInfo] = CrdInfo(
        kind="CacheRuntime",
        plural="cacheruntimes",
        scope="Namespaced",
        printer_columns=(
            PrinterColumn("RuntimeClass", ".spec.runtimeClassName"),
            PrinterColumn("Ready", f'.status.conditions[?(@.type=="{names.CONDITION_READY}")].status'),
            AGE,
        ),
    )

    kind: str = "CacheRuntime"
    spec: CacheRuntimeSpec
    status: CacheRuntimeStatus | None = None
