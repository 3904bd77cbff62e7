"""The mount key (which FUSE process a volume uses) and the host paths derived from it (SPEC §5).

The key is the first 32 hex characters (128 bits) of the sha256 of one compact JSON array::

    ["fluid-mount-key/v1", master_addrs, fs_path, [[key, value], ...]]

of the *normalised* parameters (csi/model/params.py), tuning pairs sorted by key, and, only where a
volume sets them, the FUSE pod's settings as a fifth element (csi/model/fusepodparams.py). JSON
quoting keeps the fields apart (no separator character can make two inputs collide); the version tag
lets a future encoding change the key deliberately. Normalisation makes equivalent spellings share
one FUSE; the tuning makes differently tuned volumes get their own. The key is stable across
processes, hosts and Python versions (no ``hash()``), and as lower-case hex of 32 characters it is a
valid label value.
"""

from __future__ import annotations

import hashlib
import json

from csi.model.errors import InvalidParameter
from csi.model.fspaths import normalize_path, relative_to
from csi.model.params import HasFuseParams
from kubectl_fluid.api import names

_KEY_VERSION = "fluid-mount-key/v1"


def mount_key(params: HasFuseParams) -> str:
    fields: list[object] = [
        _KEY_VERSION,
        params.master_addrs,
        params.fs_path,
        [list(pair) for pair in sorted(params.tuning)],
    ]
    if params.pod:
        # Only when given: a volume without FUSE pod settings keeps the key it always had (a node
        # upgraded under staged volumes finds them by it).
        fields.append([list(pair) for pair in sorted(params.pod)])
    encoded = json.dumps(fields, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(encoded.encode()).hexdigest()[: names.MOUNT_KEY_LENGTH]


def fuse_mount_dir(root: str, key: str) -> str:
    """The host FUSE mount point of ``key``; ``root`` stands for /var/lib/kubelet/plugins."""
    return names.fuse_mount_path(key, root)


def mount_key_dir(root: str, key: str) -> str:
    """The host directory holding ``key``'s mount point (removed with it)."""
    return names.fuse_mount_key_dir(key, root)


# Beside a key's mount point: one directory per staged volume, where the node service binds the
# volume's directory in the FUSE mount, the source of the volume's pod binds. kubelet's staging path
# stays a plain directory, as Curvine's own driver leaves it: kubelet refuses to unstage a volume
# whose staging path shares its mount's source with any mount outside that path (its device
# references), so two volumes of one directory, each bound at its staging path, would hold each
# other staged for ever.
VOLUMES_DIR = "volumes"


def volumes_dir(mnt_path: str) -> str:
    """The directory of a key's volume sources (beside its mount point ``mnt_path``)."""
    return f"{mnt_path.rsplit('/', 1)[0]}/{VOLUMES_DIR}"


def volume_source(mnt_path: str, volume_id: str) -> str:
    """Where the volume ``volume_id`` of the key mounted at ``mnt_path`` is bound (any volume id: the
    name is its sha256)."""
    return f"{volumes_dir(mnt_path)}/{hashlib.sha256(volume_id.encode()).hexdigest()}"


def staging_path(root: str, volume_handle: str) -> str:
    """Where kubelet stages ``volume_handle``, for callers that stand in for kubelet."""
    return names.csi_staging_path(volume_handle, root)


def volume_dir(fs_path: str, curvine_path: str) -> str:
    """A volume's directory relative to its FUSE mount's root ("" for the whole mount, else starting
    with "/"): the FUSE mount serves ``fs_path``, so that is ``curvine_path`` relative to ``fs_path``.
    A curvine-path outside fs-path is refused: the FUSE cannot reach it."""
    fs_root = normalize_path(fs_path, names.PARAM_FS_PATH)
    path = normalize_path(curvine_path, names.PARAM_CURVINE_PATH)
    below = relative_to(path, fs_root)
    if below is None:
        raise InvalidParameter(names.PARAM_CURVINE_PATH, f"{path} is outside {names.PARAM_FS_PATH} {fs_root}")
    return below


def pod_sub_path(mnt_path: str, fs_path: str, curvine_path: str) -> str:
    """The host directory to bind into pods for a volume: mnt-path + ``volume_dir``; with fs-path
    ``/`` that is mnt-path + curvine-path. (A name for messages: binds resolve ``volume_dir``
    beneath the mount instead, csi/fuse/beneath.py.)"""
    below = volume_dir(fs_path, curvine_path)
    base = mnt_path.rstrip("/") or "/"
    if not below:
        return base
    return f"{base.rstrip('/')}{below}"
