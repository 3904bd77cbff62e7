"""CacheRuntimeClass: how to run one kind of cache system (SPEC §1). Cluster-scoped and, like
StorageClass, without spec/status: its fields sit at the top level."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, CrdInfo, KubeModel, PrinterColumn, Resource


class ComponentPort(KubeModel):
    name: str | None = None
    container_port: int = Field(ge=1, le=65535)
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class ComponentTemplate(KubeModel):
    """Defaults for one component of every runtime of this class."""

    image: str | None = None
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    options: dict[str, str] = Field(
        default_factory=dict, description="Options; a runtime's own options win over these."
    )
    ports: list[ComponentPort] = Field(default_factory=list)


class Topology(KubeModel):
    """The components runtimes of this class have; a missing one is not run."""

    master: ComponentTemplate | None = None
    worker: ComponentTemplate | None = None
    client: ComponentTemplate | None = None

    def component(self, component: names.Component) -> ComponentTemplate | None:
        template: ComponentTemplate | None = getattr(self, component)
        return template


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
    file_system_type: str = Field(min_length=1, description="The cache system, e.g. mooncake.")
    topology: Topology = Field(default_factory=Topology)
