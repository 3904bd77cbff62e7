"""CacheRuntimeClass: how to run one kind of cache system, with upstream Fluid's v1alpha1 shape
(``api/v1alpha1/cacheruntimeclass_types.go``). Cluster-scoped and, like StorageClass, without
spec/status: its fields sit at the top level.

The product builds each component's workload from ``topology.<component>.template`` (a
PodTemplateSpec), makes a headless Service where ``service.headless`` is set, mounts the class's
``extraResources`` ConfigMaps a component's ``dependencies`` name, and renders ``options`` into the
runtime config. ``executionEntries`` and ``dataOperationSpecs`` are accepted and kept, not run.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, CrdInfo, KubeModel, PrinterColumn, Resource
from kubectl_fluid.api.kubetypes import KubeObject


class HeadlessService(KubeModel):
    """Present (even as ``{}``) to have a headless Service; upstream supports no other kind."""


class RuntimeComponentService(KubeModel):
    headless: HeadlessService | None = None


class SecretMountDependency(KubeModel):
    enabled: bool | None = None


class ConfigMapDependency(KubeModel):
    name: str | None = Field(default=None, description="A ConfigMap of the class's extraResources.")
    mount_path: str | None = None


class ExtraResourcesDependency(KubeModel):
    config_maps: list[ConfigMapDependency] | None = None


class RuntimeComponentDependencies(KubeModel):
    secret_mount: SecretMountDependency | None = Field(
        default=None,
        description="Mount the Dataset's encryptOptions Secrets (default: master and worker yes, client no).",
    )
    extra_resources: ExtraResourcesDependency | None = None


class ExecutionEntry(KubeModel):
    command: list[str]
    timeout: int | None = Field(default=None, description="Seconds; at least 20 are given.")


class ExecutionEntries(KubeModel):
    mount_ufs: ExecutionEntry | None = Field(default=None, alias="mountUFS")
    report_summary: ExecutionEntry | None = None
    # Curvine's own class (curvine-docker/fluid/cache-runtime/) spells it so. A CRD's schema is exact:
    # kubectl's strict validation would refuse the whole class, a lenient apply drop the entry.
    report_summary_capitalised: ExecutionEntry | None = Field(
        default=None,
        alias="ReportSummary",
        description="Curvine's spelling of reportSummary; reportSummary wins when both are set.",
    )

    def summary(self) -> ExecutionEntry | None:
        """The reportSummary entry, under either spelling."""
        return self.report_summary or self.report_summary_capitalised


class RuntimeComponentDefinition(KubeModel):
    """One component of every runtime of this class."""

    options: dict[str, str] | None = Field(
        default=None, description="Options; a runtime's own options win over these."
    )
    template: KubeObject | None = Field(default=None, description="A core/v1 PodTemplateSpec.")
    service: RuntimeComponentService | None = None
    dependencies: RuntimeComponentDependencies | None = None
    execution_entries: ExecutionEntries | None = None

    def has_service(self) -> bool:
        return self.service is not None and self.service.headless is not None


class RuntimeTopology(KubeModel):
    """The components runtimes of this class have; a missing one is not run."""

    master: RuntimeComponentDefinition | None = None
    worker: RuntimeComponentDefinition | None = None
    client: RuntimeComponentDefinition | None = None

    def component(self, component: names.Component) -> RuntimeComponentDefinition | None:
        definition: RuntimeComponentDefinition | None = getattr(self, component)
        return definition


class ConfigMapExtraResource(KubeModel):
    name: str | None = None
    data: dict[str, str] | None = None


class RuntimeExtraResources(KubeModel):
    config_maps: list[ConfigMapExtraResource] | None = None


class DataOperationSpec(KubeModel):
    name: Literal["DataLoad", "DataBackup", "DataMigrate", "DataProcess"]
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None


class CacheRuntimeClass(Resource):
    """A kind of cache system (e.g. mooncake, curvine) and the templates of its components."""

    crd: ClassVar[CrdInfo] = CrdInfo(
        kind="CacheRuntimeClass",
        plural="cacheruntimeclasses",
        scope="Cluster",
        printer_columns=(PrinterColumn("FileSystemType", ".fileSystemType"), AGE),
        short_names=("crc",),
    )

    kind: str = "CacheRuntimeClass"
    file_system_type: str = Field(min_length=1, description="The cache system, e.g. mooncakefs.")
    topology: RuntimeTopology | None = Field(
        default=None,
        description="The components (master, worker, client) runtimes of this class run, each from a "
        "pod template; a component left out is not run (no client: the runtimes are clientless).",
    )
    extra_resources: RuntimeExtraResources | None = Field(
        default=None,
        description="ConfigMaps shared by the runtimes of the class, which components mount through "
        "their dependencies.",
    )
    data_operation_specs: list[DataOperationSpec] | None = Field(
        default=None,
        description="How data operations (DataLoad...) run for this class: image, command, args.",
    )

    def component(self, component: names.Component) -> RuntimeComponentDefinition | None:
        return self.topology.component(component) if self.topology is not None else None
