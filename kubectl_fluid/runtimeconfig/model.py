"""The runtime config of one dataset: the data behind both runtime.json and runtime.sh (SPEC §3).

These models are the single schema of both files. Field declaration order is the order of the
exports in runtime.sh; runtime.json sorts its keys. A field's runtime.sh name is its JSON name in
upper case unless an ``Env`` marker says otherwise, so a new field is exported without further work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


@dataclass(frozen=True)
class Env:
    """The runtime.sh name of a field, where SPEC names it differently from its upper-cased JSON key
    (for arrays, the plural: items use it without the trailing S)."""

    name: str


class ConfigModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class TieredStoreLevelConfig(ConfigModel):
    medium_type: str
    mount_paths: list[str]
    quotas: list[str]
    high: str
    low: str


class ServiceConfig(ConfigModel):
    name: str


class ComponentConfig(ConfigModel):
    enabled: bool
    name: str
    replicas: int
    service: ServiceConfig
    options: dict[str, str]
    tiered_store_levels: Annotated[list[TieredStoreLevelConfig], Env("TIEREDSTORE_LEVELS")]


class MountConfig(ConfigModel):
    name: str
    path: str
    mount_point: str
    read_only: bool
    shared: bool
    options: dict[str, str]
    encrypt_options: dict[str, str]


class RuntimeConfig(ConfigModel):
    """Scalars and scalar lists of this root are exported with the prefix ``RUNTIME_``; objects and
    object lists (mounts, components) name their own prefix (SPEC §3)."""

    target_path: str
    access_modes: list[str]
    mounts: list[MountConfig]
    # None: the component is disabled or the runtime has none. runtime.json omits it; runtime.sh
    # still exports its names with zero values.
    master: ComponentConfig | None
    worker: ComponentConfig | None
    client: ComponentConfig | None
