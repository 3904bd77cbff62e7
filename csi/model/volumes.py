"""Volume identities (SPEC §5): what CreateVolume derives from a volume's parameters and name, the
volume handle's format, and reading a volume context back at NodeStage.

- ``cluster-id``: first 8 hex of sha256(normalised master-addrs) (names.cluster_id).
- ``volumeHandle``: ``{cluster-id}@{fs-path}@{pv-name}``; neither fs-path nor a volume name may hold
  ``@``, so the handle splits back unambiguously.
- ``curvine-path``: ``{fs-path}/{pv-name}``, one slash under the root.
- VolumeContext: those three plus the normalised parameters (csi/model/params.py ``to_context``).

A static PV picks any unique handle and names ``master-addrs`` and ``curvine-path`` itself
(``fs-path`` defaults to ``/``). Its ``cluster-id`` (or a dynamic volume's) is informational: the
FUSE a volume uses is decided by master-addrs, fs-path and tuning alone, so a cluster-id computed by
an older normalisation can never keep a volume from mounting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from csi.model.errors import ClientlessVolume, InvalidParameter
from csi.model.fspaths import join, normalize_path
from csi.model.params import DRIVER_CONTEXT_KEYS, VolumeParams, normalize_curvine_path, parse_params
from kubectl_fluid.api import curvinefuse, names

# The CSI request field a new volume's name comes from; it names the problem in errors.
NAME_FIELD = "name"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CLUSTER_ID = re.compile(r"[0-9a-f]{8}")
_HANDLE_SEPARATOR = "@"
# Keys a volume context carries besides the parameters: the driver's own, and the dataset
# attributes the controller writes on a dataset's static PV.
CONTEXT_KEYS = (
    *DRIVER_CONTEXT_KEYS,
    names.VOLUME_ATTR_DATASET_NAME,
    names.VOLUME_ATTR_DATASET_NAMESPACE,
    names.VOLUME_ATTR_CLIENTLESS,
)
_CONTEXT_IGNORED_PREFIXES = (names.CSI_K8S_PARAM_PREFIX, names.K8S_STORAGE_PARAM_PREFIX)


class CreatedVolume(NamedTuple):
    cluster_id: str
    volume_handle: str
    curvine_path: str
    volume_context: dict[str, str]


@dataclass(frozen=True)
class VolumeHandle:
    cluster_id: str
    fs_path: str
    pv_name: str

    @property
    def curvine_path(self) -> str:
        return join(self.fs_path, self.pv_name)

    def __str__(self) -> str:
        return names.volume_handle(self.cluster_id, self.fs_path, self.pv_name)


@dataclass(frozen=True)
class ContextVolume:
    """A volume as NodeStage sees it: its parameters and its directory in the cache filesystem."""

    params: VolumeParams
    curvine_path: str


def validate_volume_name(pv_name: str) -> str:
    """A CreateVolume name becomes a directory and the last part of the handle: it must be one path
    segment without ``@``."""
    if not pv_name or pv_name in (".", ".."):
        raise InvalidParameter(NAME_FIELD, f"must be a non-empty directory name, got {pv_name!r}")
    if "/" in pv_name or _HANDLE_SEPARATOR in pv_name or _CONTROL.search(pv_name):
        raise InvalidParameter(
            NAME_FIELD, f"must not contain '/', '@' or control characters, got {pv_name!r}"
        )
    return pv_name


def create_volume_ids(params: VolumeParams, pv_name: str) -> CreatedVolume:
    name = validate_volume_name(pv_name)
    cluster = names.cluster_id(params.master_addrs)
    handle = names.volume_handle(cluster, params.fs_path, name)
    curvine_path = join(params.fs_path, name)
    context = {
        **params.to_context(),
        names.PARAM_CLUSTER_ID: cluster,
        names.PARAM_VOLUME_HANDLE: handle,
        names.PARAM_CURVINE_PATH: curvine_path,
    }
    return CreatedVolume(cluster, handle, curvine_path, context)


def parse_volume_handle(handle: str) -> VolumeHandle | None:
    """The parts of a handle CreateVolume made, or None for any other handle (a static PV's)."""
    parts = handle.split(_HANDLE_SEPARATOR)
    if len(parts) != 3:
        return None
    cluster, fs_path, pv_name = parts
    if not _CLUSTER_ID.fullmatch(cluster):
        return None
    try:
        canonical = normalize_path(fs_path, names.PARAM_FS_PATH)
        validate_volume_name(pv_name)
    except InvalidParameter:
        return None
    # Only the exact spelling CreateVolume writes: "/a//b" would name the same directory as "/a/b"
    # under a second handle.
    return VolumeHandle(cluster, fs_path, pv_name) if canonical == fs_path else None


def is_clientless(context: Mapping[str, str]) -> bool:
    return context.get(names.VOLUME_ATTR_CLIENTLESS, "").strip().lower() == names.TRUE


def clientless_message(context: Mapping[str, str]) -> str:
    dataset = context.get(names.VOLUME_ATTR_DATASET_NAME)
    namespace = context.get(names.VOLUME_ATTR_DATASET_NAMESPACE)
    which = f'dataset "{dataset}"' if dataset else "this dataset"
    if dataset and namespace:
        which = f'dataset "{namespace}/{dataset}"'
    label = f'{names.LABEL_INJECT}: "{names.TRUE}"'
    return (
        f"{which} is clientless: its runtime has no FUSE client, so its PVC cannot be mounted; remove "
        f"the PVC from the pod and give the pod the label {label} and the annotation "
        f"{names.ANNOTATION_DATASET}: {dataset or '<dataset>'} to get its runtime config injected"
    )


def reader_only_context(context: Mapping[str, str]) -> dict[str, str]:
    """The context of a volume staged with a reader-only access mode (ReadOnlyMany, a Dataset's
    default): its FUSE mounted read-only (curvine-fuse ``--readonly``, MS_RDONLY on the mount), a
    FUSE of its own (the tuning is part of the mount key). Read-only binds alone do not hold: a
    container runtime binds the target into the container afresh and, unless the pod's volumeMount
    says readOnly, clears the bind's read-only flag (runc 1.5 does); a read-only superblock it
    cannot clear."""
    return {**context, curvinefuse.PARAM_READONLY: "true"}


def parse_volume_context(context: Mapping[str, str]) -> ContextVolume:
    """A NodeStage volume context → its parameters and curvine-path. A clientless dataset's context
    raises ClientlessVolume (there is nothing to mount); a missing ``curvine-path`` or any invalid
    key raises InvalidParameter naming it."""
    if is_clientless(context):
        raise ClientlessVolume(clientless_message(context))
    params = parse_params(context, context_keys=CONTEXT_KEYS, ignored_prefixes=_CONTEXT_IGNORED_PREFIXES)
    curvine_path = context.get(names.PARAM_CURVINE_PATH)
    if curvine_path is None:
        raise InvalidParameter(
            names.PARAM_CURVINE_PATH, "is required: the volume's directory in the cache filesystem"
        )
    return ContextVolume(params, normalize_curvine_path(curvine_path, params.fs_path))
