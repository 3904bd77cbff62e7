"""The FUSE command line (SPEC §5): an argv list handed straight to exec, never a shell string, so
no parameter value is ever parsed by a shell. It is the real curvine-fuse's: ``--conf`` (the mount
key's configuration file, csi/fuse/fuseconfig.py), ``--master-addrs``, ``--fs-path``, ``--mnt-path``,
then the tuning flags in sorted key order, so one mount key always yields byte-identical argv (and
FuseMount ``fuseArgs``). A flag without a value (``debug``, ``readonly``) stands alone.

``--master-addrs`` is left out when a master is an IPv6 address: curvine-fuse splits each of its
entries at the first colon. The configuration file names the masters either way, which is what
curvine-fuse falls back to."""

from __future__ import annotations

from csi.model.addresses import has_ipv6
from csi.model.params import HasFuseParams
from kubectl_fluid.api import curvinefuse as cf
from kubectl_fluid.api import names

VALIDATE_COMMAND = "validate-config"


def fuse_args(params: HasFuseParams, mnt_path: str) -> list[str]:
    """The arguments after the binary."""
    args = [cf.flag(cf.FLAG_CONF), names.fuse_config_path(mnt_path)]
    if not has_ipv6(params.master_addrs):
        args += [cf.flag(cf.FLAG_MASTER_ADDRS), params.master_addrs]
    args += [cf.flag(cf.FLAG_FS_PATH), params.fs_path, cf.flag(cf.FLAG_MNT_PATH), mnt_path]
    for key, value in sorted(params.tuning):
        args += [cf.flag(key)] if key in cf.FUSE_PRESENCE_PARAMS else [cf.flag(key), value]
    return args


def fuse_argv(binary: str, params: HasFuseParams, mnt_path: str) -> list[str]:
    return [binary, *fuse_args(params, mnt_path)]
