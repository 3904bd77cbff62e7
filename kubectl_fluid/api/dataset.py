"""Dataset: where the data lives (mounts) and how pods may access it (SPEC §1)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from kubectl_fluid.api import names
from kubectl_fluid.api.base import AGE, Condition, CrdInfo, KubeModel, PrinterColumn, Resource

AccessMode = Literal["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
DatasetPhase = Literal["Pending", "Bound", "Failed", "NotBound", "Updating"]


class SecretKeyRef(KubeModel):
    """A key of a Secret in the Dataset's namespace."""

    name: str = Field(min_length=1)
    key: str = Field(min_length=1)


class EncryptOptionSource(KubeModel):
    secret_key_ref: SecretKeyRef


class EncryptOption(KubeModel):
    """An option whose value is secret: components read it from a file, never from the spec."""

    name: str = Field(min_length=1, description="Option name, as the cache system expects it.")
    value_from: EncryptOptionSource


class Mount(KubeModel):
    """One data source of the Dataset."""

    mount_point: str = Field(min_length=5, description="URI of the source, e.g. s3://bucket/dir.")
    name: str = Field(description="Name of the mount; also its default path.")
    path: str | None = Field(default=None, description="Path of the mount in the dataset, default /{name}.")
    options: dict[str, str] = Field(default_factory=dict)
    encrypt_options: list[EncryptOption] = Field(default_factory=list)
    read_only: bool = False
    shared: bool = False

    # The default depends on another field, so it cannot live in the CRD schema; it is applied
    # wherever a Dataset is read, which is the only place it matters.
    @model_validator(mode="after")
    def _default_path(self) -> Mount:
        if not self.path:
            self.path = f"/{self.name}"
        return self


class DatasetSpec(KubeModel):
    mounts: list[Mount] = Field(default_factory=list)
    shared_options: dict[str, str] = Field(
        default_factory=dict, description="Options of every mount; a mount's own options win."
    )
    shared_encrypt_options: list[EncryptOption] = Field(
        default_factory=list, description="Encrypt options of every mount; a mount's own win by name."
    )
    # A plain default (pydantic copies it per instance) so the CRD schema carries it too.
    access_modes: list[AccessMode] = Field(default=["ReadOnlyMany"])


class DatasetRuntime(KubeModel):
    """The runtime bound to the Dataset."""

    name: str
    namespace: str
    type: str = names.RUNTIME_TYPE_CACHE
    category: str | None = None


class DatasetStatus(KubeModel):
    phase: DatasetPhase | None = None
    runtimes: list[DatasetRuntime] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)


# The same rules as ``names.dataset_name_error``, each with a message saying why it exists.
_NAME_RULE: dict[str, Any] = {
    "x-kubernetes-validations": [
        {
            "rule": f"size(self.metadata.name) <= {names.MAX_DATASET_NAME_LENGTH}",
            "message": names.DATASET_NAME_TOO_LONG_MESSAGE,
        },
        {
            "rule": f"self.metadata.name.matches('{names.DNS_1035_LABEL_PATTERN}')",
            "message": names.DATASET_NAME_NOT_DNS_1035_MESSAGE,
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
        printer_columns=(PrinterColumn("Phase", ".status.phase"), AGE),
    )

    kind: str = "Dataset"
    spec: DatasetSpec
    status: DatasetStatus | None = None
