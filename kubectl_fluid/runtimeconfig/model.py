"""The runtime config of one dataset: the data behind both runtime.json and runtime.sh (SPEC §3).

These models are the single schema of both files, shaped as upstream Fluid's CacheRuntimeConfig
(``pkg/common``): fields are declared in upstream's order, which is runtime.json's, and each model's
``sh_order`` gives runtime.sh's order of the same fields (upstream's shell form orders them
differently); a model whose ``sh_order`` misses a field, or names one it lacks, fails at import.

runtime.json leaves a field out where it is empty (false, 0, "", [], {}), as upstream's ``omitempty``
does, unless it is marked ``Kept``; an absent component (None) is left out. runtime.sh exports
every field, empty or not. A field's runtime.sh name is its JSON name in upper case unless an
``Env`` marker says otherwise, so a new field is exported without further work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


@dataclass(frozen=True)
class Env:
    """The runtime.sh name of a field, where SPEC names it differently from its upper-cased JSON key
    (for arrays, the plural: items use it without the trailing S)."""

    name: str


@dataclass(frozen=True)
class Kept:
    """runtime.json writes this field even when empty: upstream's JSON tag has no omitempty."""


class ConfigModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    sh_order: ClassVar[tuple[str, ...]]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if sorted(cls.sh_order) != sorted(cls.model_fields):
            raise TypeError(f"{cls.__name__}.sh_order must list each of its fields once: {cls.sh_order}")


class TieredStoreLevelConfig(ConfigModel):
    """One cache level: where the component finds it (``mountPaths``), what it is (``MEM`` or
    ``HDD``), how large each path is (``quotas``, canonical quantities) and its watermarks."""

    sh_order = ("medium_type", "mount_paths", "quotas", "high", "low")

    mount_paths: list[str] = Field(default_factory=list)
    medium_type: str
    quotas: list[str] = Field(default_factory=list)
    high: str = ""
    low: str = ""


class ServiceConfig(ConfigModel):
    sh_order = ("name",)

    # "" where the class gives the component no Service.
    name: Annotated[str, Kept()] = ""


class ComponentConfig(ConfigModel):
    sh_order = ("enabled", "name", "replicas", "service", "options", "tiered_store_levels")

    enabled: bool = True
    name: str
    options: dict[str, str] = Field(default_factory=dict)
    # 0 for the client, which has none: runtime.json leaves it out, runtime.sh says 0.
    replicas: int = 0
    service: Annotated[ServiceConfig, Kept()] = Field(default_factory=ServiceConfig)
    tiered_store_levels: Annotated[list[TieredStoreLevelConfig], Env("TIEREDSTORE_LEVELS")] = Field(
        default_factory=list
    )


class MountConfig(ConfigModel):
    sh_order = ("name", "path", "mount_point", "read_only", "shared", "options", "encrypt_options")

    mount_point: Annotated[str, Kept()]
    options: dict[str, str] = Field(default_factory=dict)
    # Option name → the file holding its value in a component pod (/etc/fluid/secrets/{secret}/{key}).
    encrypt_options: dict[str, str] = Field(default_factory=dict)
    name: str = ""
    path: str = ""
    read_only: bool = False
    shared: bool = False


class RuntimeConfig(ConfigModel):
    """Scalars and scalar lists of this root are exported with the prefix ``RUNTIME_``; objects and
    object lists (mounts, components) name their own prefix (SPEC §3)."""

    sh_order = ("target_path", "access_modes", "mounts", "master", "worker", "client")

    mounts: list[MountConfig] = Field(default_factory=list)
    access_modes: list[str]
    target_path: str
    # None: the class does not define the component, or the runtime disables it. runtime.json
    # leaves it out; runtime.sh still exports its names with zero values.
    master: ComponentConfig | None = None
    worker: ComponentConfig | None = None
    client: ComponentConfig | None = None
