"""curvine-fuse's configuration file of one mount key (SPEC §5): curvine-fuse exits 1 without one
(``--conf``, default ``conf/curvine-cluster.toml`` in its working directory), so the node service
writes one per mount key, beside the key's mount point, before starting its FUSE.

It is the node's FUSE settings (``fluid-csi --fuse-config``: what every FUSE on this node needs,
such as ``[fuse] enable_splice = false`` where the node lacks CAP_SYS_RESOURCE) with the volume's
masters as ``[client] master_addrs``. Where the node's settings say nothing about FUSE's logging,
it is ``warn`` to standard output: at curvine's default ``info`` every file operation is a line,
and standard output is the FUSE's log file (embedded) or its pod's log (standalone).

A pure function of its inputs: one key always gets the same file, byte for byte."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w

from csi.model.addresses import master_list
from csi.model.params import HasFuseParams

DEFAULT_LOG: Mapping[str, str] = {"level": "warn", "log_dir": "stdout"}


class NodeSettingsError(ValueError):
    """The node's FUSE settings file cannot be used; the message names the file and what is wrong."""


def load_node_settings(path: str | None) -> dict[str, Any]:
    """The node's FUSE settings (TOML) from ``path``; none when no file is given."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as f:
            settings = tomllib.load(f)
    except OSError as err:
        raise NodeSettingsError(f"--fuse-config {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise NodeSettingsError(f"--fuse-config {path} is not valid TOML: {err}") from None
    for table in ("client", "fuse"):
        if not isinstance(settings.get(table, {}), dict):
            raise NodeSettingsError(f"--fuse-config {path}: {table} must be a table ([{table}])")
    return settings


def fuse_config(params: HasFuseParams, node_settings: Mapping[str, Any]) -> str:
    """The configuration file's text for a FUSE of ``params`` on a node with ``node_settings``."""
    config = copy.deepcopy(dict(node_settings))
    client = config.setdefault("client", {})
    client["master_addrs"] = [
        {"hostname": host, "port": port} for host, port in master_list(params.master_addrs)
    ]
    fuse = config.setdefault("fuse", {})
    fuse.setdefault("log", dict(DEFAULT_LOG))
    return tomli_w.dumps(config)


def write_fuse_config(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a FUSE restarting meanwhile never reads half a file)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and target.read_text() == text:
        return
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text)
    tmp.replace(target)
