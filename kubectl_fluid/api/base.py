"""Shared pieces of the API models: the Kubernetes-JSON model base, object metadata, conditions, and
the CRD facts (names, scope, printer columns) each resource class declares for the CRD generator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from kubectl_fluid.api import names

# Kubernetes JSON spells initialisms in capitals (volumeID, podUID), which plain camelCase misses.
_INITIALISMS = {"id": "ID", "uid": "UID"}


def kube_camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(_INITIALISMS.get(part, part.capitalize()) for part in rest)


class KubeModel(BaseModel):
    """Base of every API model: camelCase on the wire, snake_case in Python (both accepted on
    input). Unknown fields are ignored because objects read from the API server carry fields newer
    than these models (and the server already validated them against the CRD)."""

    model_config = ConfigDict(alias_generator=kube_camel, populate_by_name=True, extra="ignore")

    def to_kube(self) -> dict[str, Any]:
        """The Kubernetes JSON form: camelCase, unset optionals left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


DATE_TIME: dict[str, Any] = {"format": "date-time"}


class ObjectMeta(KubeModel):
    """The parts of metav1.ObjectMeta the product reads. The CRD schema never includes it: the API
    server validates metadata itself."""

    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    owner_references: list[dict[str, Any]] = Field(default_factory=list)


class Condition(KubeModel):
    """A condition as Fluid's DatasetCondition and RuntimeCondition shape it (metav1.Condition's
    fields, with upstream's ``lastUpdateTime`` and ``lastProbeTime`` accepted too)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = Field(default=None, json_schema_extra=DATE_TIME)
    last_update_time: str | None = Field(default=None, json_schema_extra=DATE_TIME)
    last_probe_time: str | None = Field(default=None, json_schema_extra=DATE_TIME)
    observed_generation: int | None = None


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: Literal["string", "integer", "number", "boolean", "date"] = "string"
    description: str = ""
    priority: int = 0


@dataclass(frozen=True)
class CrdInfo:
    kind: str
    plural: str
    scope: Literal["Namespaced", "Cluster"]
    printer_columns: tuple[PrinterColumn, ...] = ()
    short_names: tuple[str, ...] = ()
    # `kubectl get fluid` lists every kind of the product.
    categories: tuple[str, ...] = ("fluid",)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def name(self) -> str:
        return f"{self.plural}.{names.GROUP}"


AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date")


class Resource(KubeModel):
    """A top-level object of group data.fluid.io. Subclasses set ``crd`` and a ``kind`` default."""

    crd: ClassVar[CrdInfo]

    api_version: str = names.API_VERSION
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
