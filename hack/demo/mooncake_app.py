#!/usr/bin/env python3
"""A demo application of a clientless Mooncake dataset: put one key, or get it back.

Its only configuration is the dataset's runtime.sh, which the webhook mounts into the pod and names
in ``FLUID_RUNTIME_CONFIG_PATH_{DS}``; the pod's command sources it and runs this script:

    sh -c '. "$FLUID_RUNTIME_CONFIG_PATH_DEMO" && exec python mooncake_app.py put KEY VALUE'
    sh -c '. "$FLUID_RUNTIME_CONFIG_PATH_DEMO" && exec python mooncake_app.py get KEY'

Several datasets in one process: runtime.sh's names are the same for every dataset, so each
dataset's ``runtime-scoped.sh`` is sourced instead, whose names carry it (``FLUID_DEMO_MASTER_NAME``);
``copy`` gets KEY from one dataset's store and puts it into the other's, two clients in one process:

    sh -c '. "$FLUID_SCOPED_CONFIG_PATH_DEMO" && . "$FLUID_SCOPED_CONFIG_PATH_DEMO2" &&
           exec python mooncake_app.py copy KEY demo demo2'

From those shell variables it builds its Mooncake client (``connection_from_env``):
- master: ``{MASTER_NAME}-0.{MASTER_SERVICE_NAME}:{rpc_port}`` — pod 0 of the master StatefulSet through
  its headless Service, on the ``rpc_port`` of ``MASTER_OPTIONS`` (the port the master listens on);
- ``metadata_server`` and ``protocol`` from ``WORKER_OPTIONS``: every client of the store must speak
  what the runtime's worker speaks;
- this client's own address: the pod's hostname resolved (its pod IP), which peers connect back to.

The application contributes no memory to the store (``global_segment_size=0``): the runtime's worker
(a long-lived ``mooncake_client``) holds the cache, so a value put by one pod outlives that pod and
another pod gets it. ``get`` prints the value alone on stdout and exits 1 when the key is missing;
Mooncake's own logs go to stderr.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Largest value this client can put or get: Mooncake stages every value in this buffer.
LOCAL_BUFFER_SIZE = 16 << 20
USAGE = "usage: mooncake_app.py put KEY VALUE | get KEY | copy KEY FROM_DATASET TO_DATASET"


class ConfigError(Exception):
    """runtime.sh was not sourced, or describes a runtime this app cannot use."""


@dataclass(frozen=True)
class Connection:
    master_server_addr: str
    metadata_server: str
    protocol: str
    local_hostname: str

    def setup_args(self) -> dict[str, object]:
        """``MooncakeDistributedStore.setup(dict)`` keys (note ``master_server_addr``: the dict form
        silently ignores unknown keys, so a misspelt one would fall back to a default master)."""
        return {
            "local_hostname": self.local_hostname,
            "metadata_server": self.metadata_server,
            "global_segment_size": 0,
            "local_buffer_size": LOCAL_BUFFER_SIZE,
            "protocol": self.protocol,
            "rdma_devices": "",
            "master_server_addr": self.master_server_addr,
        }


def _options(env: Mapping[str, str], name: str) -> dict[str, str]:
    raw = env.get(name, "{}")
    try:
        options = json.loads(raw)
    except ValueError as e:
        raise ConfigError(f"{name} is not JSON: {raw!r}") from e
    if not isinstance(options, dict):
        raise ConfigError(f"{name} is not a JSON object: {raw!r}")
    return {str(k): str(v) for k, v in options.items()}


def scoped_prefix(dataset: str) -> str:
    """What a dataset's runtime-scoped.sh puts before each of runtime.sh's names: ``FLUID_{DS}_``,
    the name upper-cased with ``-`` and ``.`` as ``_`` (kubectl-fluid's README)."""
    return "FLUID_" + dataset.upper().replace("-", "_").replace(".", "_") + "_"


def connection_from_env(env: Mapping[str, str], local_hostname: str, prefix: str = "") -> Connection:
    """The Mooncake client configuration that the runtime.sh variables in ``env`` describe (each
    name after ``prefix``: a dataset's ``scoped_prefix()`` for its runtime-scoped.sh)."""
    if prefix + "MASTER_ENABLED" not in env:
        which, source = (
            ("runtime.sh", '"$FLUID_RUNTIME_CONFIG_PATH_<DATASET>"')
            if not prefix
            else (f"runtime-scoped.sh ({prefix}*)", '"$FLUID_SCOPED_CONFIG_PATH_<DATASET>"')
        )
        raise ConfigError(
            f"{which} is not sourced: run me as sh -c '. {source} && exec python mooncake_app.py …'"
        )
    if env[prefix + "MASTER_ENABLED"] != "true":
        raise ConfigError(f"the dataset's runtime has no master ({prefix}MASTER_ENABLED is not 'true')")
    master = _options(env, prefix + "MASTER_OPTIONS")
    worker = _options(env, prefix + "WORKER_OPTIONS")
    port = master.get("rpc_port", "")
    if not port.isdigit():
        raise ConfigError(
            f"{prefix}MASTER_OPTIONS has no numeric rpc_port: {env.get(prefix + 'MASTER_OPTIONS')!r}"
        )
    return Connection(
        master_server_addr=f"{env[prefix + 'MASTER_NAME']}-0.{env[prefix + 'MASTER_SERVICE_NAME']}:{port}",
        metadata_server=worker.get("metadata_server", "P2PHANDSHAKE"),
        protocol=worker.get("protocol", "tcp"),
        local_hostname=local_hostname,
    )


def own_address() -> str:
    """The pod's IP, as Kubernetes maps the pod's hostname in its /etc/hosts."""
    return socket.gethostbyname(socket.gethostname())


def log(message: str) -> None:
    print(f"[mooncake-app] {message}", file=sys.stderr, flush=True)


def put(store: Any, key: str, value: bytes) -> int:
    t0 = time.monotonic()
    # upsert, not put: put keeps an existing value silently, and the demo may run again.
    rc = store.upsert(key, value)
    if rc != 0:
        print(f"error: put {key!r} failed: rc={rc}", file=sys.stderr)
        return 1
    log(f"put {key!r} ({len(value)} bytes) in {time.monotonic() - t0:.4f}s")
    return 0


def get(store: Any, key: str) -> int:
    t0 = time.monotonic()
    # get returns b"" for a missing key too: is_exist tells them apart.
    if store.is_exist(key) != 1:
        print(f"error: key {key!r} not found", file=sys.stderr)
        return 1
    value: bytes = store.get(key)
    log(f"get {key!r} ({len(value)} bytes) in {time.monotonic() - t0:.4f}s")
    sys.stdout.buffer.write(value + b"\n")
    sys.stdout.flush()
    return 0


def connect(conn: Connection) -> Any:
    """A Mooncake client of ``conn``'s master; None (after saying why) when setup fails."""
    from mooncake.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    t0 = time.monotonic()
    rc = store.setup(conn.setup_args())
    if rc != 0:
        print(
            f"error: Mooncake setup against master {conn.master_server_addr} failed: rc={rc}", file=sys.stderr
        )
        return None
    elapsed = time.monotonic() - t0
    log(f"connected to master {conn.master_server_addr} as {conn.local_hostname} in {elapsed:.3f}s")
    return store


def copy(key: str, source: Connection, target: Connection) -> int:
    """KEY got from one dataset's store and put into the other's, by two clients of this process."""
    stores = [connect(source), connect(target)]
    try:
        if None in stores:
            return 1
        if stores[0].is_exist(key) != 1:
            print(f"error: key {key!r} not found at {source.master_server_addr}", file=sys.stderr)
            return 1
        value: bytes = stores[0].get(key)
        if put(stores[1], key, value) != 0:
            return 1
        log(f"copied {key!r} from {source.master_server_addr} to {target.master_server_addr}")
        return 0
    finally:
        for store in stores:
            if store is not None:
                store.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    shapes = {"put": 3, "get": 2, "copy": 4}
    if not args or shapes.get(args[0]) != len(args):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        if args[0] == "copy":
            source, target = (
                connection_from_env(os.environ, own_address(), scoped_prefix(d)) for d in args[2:]
            )
        else:
            conn = connection_from_env(os.environ, own_address())
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # Fail within seconds when the master is unreachable, not after Mooncake's default 20 retries
    # of ~4.5 s; an operator who wants more patience sets the variable in the pod spec.
    os.environ.setdefault("MC_STORE_CLIENT_SETUP_RETRIES", "3")
    if args[0] == "copy":
        return copy(args[1], source, target)
    store = connect(conn)
    if store is None:
        return 1
    try:
        return put(store, args[1], args[2].encode()) if args[0] == "put" else get(store, args[1])
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
