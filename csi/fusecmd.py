"""The FUSE command line (SPEC §5): an argv list handed straight to exec, never a shell string, so
no parameter value is ever parsed by a shell. Tuning flags follow in sorted key order, so one mount
key always yields byte-identical argv (and FuseMount ``fuseArgs``)."""

from __future__ import annotations

from csi.params import HasFuseParams
from kubectl_fluid.api import names


def fuse_args(params: HasFuseParams, mnt_path: str) -> list[str]:
    """The arguments after the binary."""
    args = [
        names.fuse_flag(names.PARAM_MASTER_ADDRS),
        params.master_addrs,
        names.fuse_flag(names.PARAM_FS_PATH),
        params.fs_path,
        names.fuse_flag(names.PARAM_MNT_PATH),
        mnt_path,
    ]
    for key, value in sorted(params.tuning):
        args += [names.fuse_flag(key), value]
    return args


def fuse_argv(binary: str, params: HasFuseParams, mnt_path: str) -> list[str]:
    return [binary, *fuse_args(params, mnt_path)]
