"""StorageClass parameters (SPEC §5) → ``VolumeParams``, validated and normalised.

Accepted keys:
- ``master-addrs`` (required, see csi/model/addresses.py), ``fs-path`` (default ``/``, see
  csi/model/fspaths.py), ``path-type`` (``Directory``, the default, or ``DirectoryOrCreate``, exact spelling);
- the FUSE tuning keys (csi/model/tuning.py), kept as sorted ``(flag name, value)`` pairs in the form the
  real curvine-fuse takes them (the design document's ``entry-timeout: "0.5"`` is kept as
  ``entry-timeout-ms: "500"``); two keys for one setting are refused, and so are combinations
  curvine-fuse refuses (``congestion-threshold`` above ``max-background``...);
- keys curvine-fuse dropped (``node-cache-size``): accepted and ignored with a warning, like the
  legacy keys, so a StorageClass written for the older CLI still provisions;
- the standalone FUSE pod's resources and priority (``fuse-memory-limit``...: csi/model/fusepodparams.py),
  kept as sorted ``(key, value)`` pairs in canonical form;
- legacy keys (``mnt-path``, ``auto-cache``, ...): accepted so old StorageClasses keep working, and
  ignored with a warning, since mount paths are generated and the other keys no longer mean anything;
- ``csi.storage.k8s.io/*``: Kubernetes' own (the provisioner passes secrets' names and PVC/PV names
  under it), ignored.
Anything else is an ``InvalidParameter`` naming the key. Keys are checked in sorted order, so a
StorageClass with several mistakes always reports the same one first.

Volume contexts carry more keys (the driver's own ``cluster-id``, ``curvine-path``...): csi/model/volumes.py
parses those with ``context_keys`` and ``ignored_prefixes`` widened.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from csi.model.addresses import EXPECTED, normalize_master_addrs
from csi.model.errors import InvalidParameter
from csi.model.fspaths import normalize_path, relative_to
from csi.model.fusepodparams import POD_PARAMS, PodSettings, check_pod_settings, normalize_pod_param
from csi.model.tuning import check_combination, normalize_tuning, tuning_name
from kubectl_fluid.api import curvinefuse, names

PathType = names.PathType
PATH_TYPES: tuple[PathType, ...] = (names.PATH_TYPE_DIRECTORY, names.PATH_TYPE_DIRECTORY_OR_CREATE)
Tuning = tuple[tuple[str, str], ...]

# Keys CreateVolume writes into each volume's context: never the StorageClass author's to set.
DRIVER_CONTEXT_KEYS = (names.PARAM_CLUSTER_ID, names.PARAM_CURVINE_PATH, names.PARAM_VOLUME_HANDLE)
_LEGACY_OLD_MASTER = (names.PARAM_MASTER_HOSTNAME, names.PARAM_MASTER_RPC_PORT)


class HasFuseParams(Protocol):
    """What decides a FUSE process: anything with these (VolumeParams, FuseParams)."""

    @property
    def master_addrs(self) -> str: ...
    @property
    def fs_path(self) -> str: ...
    @property
    def tuning(self) -> Tuning: ...
    @property
    def pod(self) -> PodSettings: ...


class FuseParams(BaseModel):
    """The parameters one FUSE process is started with; equal FuseParams share one FUSE. A pydantic
    model because the node's state file stores it and must be validated when read back."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    master_addrs: str
    fs_path: str
    tuning: Tuning = ()
    # The standalone FUSE pod's resources and priority (a state file written before it has none).
    pod: PodSettings = ()


@dataclass(frozen=True)
class VolumeParams:
    """Validated, normalised parameters of one volume. ``warnings`` are for the caller to log (or
    return to the user); they take no part in equality."""

    master_addrs: str
    fs_path: str = names.DEFAULT_FS_PATH
    path_type: PathType = names.PATH_TYPE_DIRECTORY
    tuning: Tuning = ()
    pod: PodSettings = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def fuse(self) -> FuseParams:
        return fuse_params(self)

    def to_context(self) -> dict[str, str]:
        """The normalised parameters as volume-context entries (legacy keys dropped: ignored anyway)."""
        return {
            names.PARAM_MASTER_ADDRS: self.master_addrs,
            names.PARAM_FS_PATH: self.fs_path,
            names.PARAM_PATH_TYPE: self.path_type,
            **dict(self.tuning),
            **dict(self.pod),
        }


def fuse_params(params: HasFuseParams) -> FuseParams:
    if isinstance(params, FuseParams):
        return params
    return FuseParams(
        master_addrs=params.master_addrs, fs_path=params.fs_path, tuning=params.tuning, pod=params.pod
    )


def parse_params(
    raw: Mapping[str, str],
    *,
    context_keys: Collection[str] = (),
    ignored_prefixes: Collection[str] = (names.CSI_K8S_PARAM_PREFIX,),
) -> VolumeParams:
    """Validate StorageClass parameters. ``context_keys`` are further keys the caller accepts and
    reads itself (volume contexts); keys starting with one of ``ignored_prefixes`` are skipped."""
    master_addrs: str | None = None
    fs_path: str = names.DEFAULT_FS_PATH
    path_type: PathType = names.PATH_TYPE_DIRECTORY
    tuning: dict[str, str] = {}
    pod = dict(normalize_pod_param(key, raw[key]) for key in sorted(raw) if key in POD_PARAMS)
    given_as: dict[str, str] = {}  # tuning name -> the key it was given under
    warnings: list[str] = []
    for key in sorted(raw):
        value = raw[key]
        if key == names.PARAM_MASTER_ADDRS:
            master_addrs = normalize_master_addrs(value)
        elif key == names.PARAM_FS_PATH:
            fs_path = normalize_path(value, key)
        elif key == names.PARAM_PATH_TYPE:
            path_type = _path_type(value)
        elif (name := tuning_name(key)) is not None:
            if name in given_as:
                raise InvalidParameter(
                    given_as[name] if given_as[name] != name else key,
                    f"{given_as[name]} and {key} are one setting (curvine-fuse --{name}); give only {name}",
                )
            given_as[name] = key
            pair = normalize_tuning(key, value)
            if pair is not None:
                tuning[pair[0]] = pair[1]
        elif key in names.LEGACY_PARAMS or key in curvinefuse.FUSE_DROPPED_PARAMS:
            warnings.append(_legacy_warning(key))
        elif key in (*POD_PARAMS, *context_keys) or any(
            key.startswith(prefix) for prefix in ignored_prefixes
        ):
            continue
        elif key in DRIVER_CONTEXT_KEYS:
            raise InvalidParameter(
                key, "is set by the driver for each volume; remove it from the StorageClass"
            )
        else:
            raise InvalidParameter(key, _unknown(key))
    if master_addrs is None:
        raise InvalidParameter(names.PARAM_MASTER_ADDRS, _missing_master_message(raw))
    check_combination(tuning)
    check_pod_settings(pod)
    return VolumeParams(
        master_addrs=master_addrs,
        fs_path=fs_path,
        path_type=path_type,
        tuning=tuple(sorted(tuning.items())),
        pod=tuple(sorted(pod.items())),
        warnings=tuple(warnings),
    )


def normalize_curvine_path(curvine_path: str, fs_path: str) -> str:
    """Validate a volume's ``curvine-path`` (static PVs name it themselves): absolute, no ``..``, no
    ``@``, and inside the volume's ``fs-path`` (equal is allowed: the volume is the whole fs-path)."""
    path = normalize_path(curvine_path, names.PARAM_CURVINE_PATH)
    if relative_to(path, fs_path) is None:
        raise InvalidParameter(names.PARAM_CURVINE_PATH, f"{path} is outside {names.PARAM_FS_PATH} {fs_path}")
    return path


def _path_type(value: str) -> PathType:
    for path_type in PATH_TYPES:
        if value == path_type:
            return path_type
    raise InvalidParameter(names.PARAM_PATH_TYPE, f"must be one of {', '.join(PATH_TYPES)}, got {value!r}")


def _legacy_warning(key: str) -> str:
    if key == names.PARAM_MNT_PATH:
        return f'parameter "{key}" is ignored: FUSE mount paths are generated per mount key'
    if key in curvinefuse.FUSE_DROPPED_PARAMS:
        return f'parameter "{key}" is ignored: curvine-fuse no longer has --{key}'
    return f'parameter "{key}" is accepted for compatibility and ignored'


def _missing_master_message(raw: Mapping[str, str]) -> str:
    message = f"is required: the cache masters as {EXPECTED}"
    if any(key in raw for key in _LEGACY_OLD_MASTER):
        message += f" ({' and '.join(_LEGACY_OLD_MASTER)} are no longer read)"
    return message


def _unknown(key: str) -> str:
    why = curvinefuse.FUSE_DRIVER_FLAGS.get(key)
    if why is not None:
        return f"is a curvine-fuse flag the driver sets itself: {why}"
    return f"is not a parameter of {names.CSI_DRIVER}; {_SUPPORTED}"


_SUPPORTED = (
    f"supported are {names.PARAM_MASTER_ADDRS}, {names.PARAM_FS_PATH}, {names.PARAM_PATH_TYPE}, "
    "curvine-fuse's tuning flags by their long names (curvine-fuse --help: io-threads, entry-timeout-ms, "
    f"client.block-size, ...), the FUSE pod's {', '.join(POD_PARAMS)}, the older keys "
    f"{', '.join([*curvinefuse.FUSE_RENAMED_PARAMS, *curvinefuse.FUSE_SECONDS_PARAMS])}, and the legacy keys "
    f"{', '.join([*names.LEGACY_PARAMS, *curvinefuse.FUSE_DROPPED_PARAMS])}"
)
