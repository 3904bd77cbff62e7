"""One Mooncake client of the Mooncake bench (bench_mooncake.py), in a process of its own: it
configures itself one way, then times put and get of fresh keys and prints its samples as one JSON
line on stdout.

    sh -c '. "$FLUID_RUNTIME_CONFIG_PATH_KV" && exec python -m tests.bench.mooncake_kv injected'
    MOONCAKE_MASTER=127.0.0.1:50051 ... python -m tests.bench.mooncake_kv by-hand

- ``injected``: from the dataset's runtime.sh alone, sourced by the shell as an application's pod
  does, read the way the demo application reads it (hack/demo/mooncake_app.py: ``connection_from_env``,
  ``Connection.setup_args``), so the bench measures what a user's app gets;
- ``by-hand``: from Mooncake's own ``MOONCAKE_*`` variables (``MooncakeConfig.load_from_env()``) and
  ``setup()``'s positional form, as shared/reference/mooncake.md section 5 configures a client.

Both contribute no memory (segment 0): every put lands in the runtime's worker, every get is a TCP
transfer out of it, as for an application beside the cache. Only the configuration differs, so the
two sides' figures differ by what the configuration does, and by noise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

# Values timed, and how many of each per process: a small value (latency bound) and a large one
# (bandwidth bound), each count a fraction of a second's work, so a process's Mooncake close (~1.5 s)
# dominates its run and many processes interleave in a minute.
COUNTS = {4 << 10: 500, 1 << 20: 100}
SIZES = tuple(COUNTS)
WARMUP = 10  # untimed puts and gets of each size first: connections, buffers, code paths


def injected_setup() -> dict[str, object]:
    """``setup(dict)`` arguments from runtime.sh's variables, as the demo application builds them."""
    from demo.mooncake_app import connection_from_env, own_address

    return connection_from_env(os.environ, own_address()).setup_args()


def by_hand_setup() -> dict[str, object]:
    """The same arguments from Mooncake's ``MOONCAKE_*`` variables, through Mooncake's own reader."""
    from mooncake.mooncake_config import MooncakeConfig

    c = MooncakeConfig.load_from_env()
    return {
        "local_hostname": c.local_hostname,
        "metadata_server": c.metadata_server,
        "global_segment_size": c.global_segment_size,
        "local_buffer_size": c.local_buffer_size,
        "protocol": c.protocol,
        "rdma_devices": c.device_name or "",
        "master_server_addr": c.master_server_address,
    }


def connect(args: dict[str, object], positional: bool) -> Any:
    from mooncake.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    # The by-hand way is positional: setup(local_hostname, metadata_server, …, master_server_addr).
    rc = store.setup(*args.values()) if positional else store.setup(args)
    if rc != 0:
        sys.exit(f"error: Mooncake setup {args} failed: rc={rc}")
    return store


def timed(store: Any, tag: str, size: int, count: int) -> dict[str, Any]:
    """``count`` puts then ``count`` gets of fresh ``size``-byte values: each call's seconds, each
    batch's wall seconds; every value read back is checked, and the keys removed after."""
    values = [os.urandom(size) for _ in range(count)]
    keys = [f"{tag}-{size}-{i}" for i in range(count)]
    put_each, get_each, got = [], [], []
    t0 = time.perf_counter()
    for key, value in zip(keys, values, strict=True):
        t = time.perf_counter()
        rc = store.put(key, value)
        put_each.append(time.perf_counter() - t)
        if rc != 0:
            sys.exit(f"error: put {key} ({size} bytes) failed: rc={rc}")
    put_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    for key in keys:
        t = time.perf_counter()
        got.append(store.get(key))
        get_each.append(time.perf_counter() - t)
    get_wall = time.perf_counter() - t0
    bad = [k for k, v, g in zip(keys, values, got, strict=True) if v != g]
    if bad:
        sys.exit(f"error: {len(bad)} of {count} values of {size} bytes came back wrong (first {bad[0]})")
    for key in keys:
        store.remove(key, True)  # within the lease: forced
    return {"put": put_each, "get": get_each, "put_wall": put_wall, "get_wall": get_wall}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.mooncake_kv", description=__doc__)
    p.add_argument("how", choices=("injected", "by-hand"))
    p.add_argument("--tag", default=str(os.getpid()), help="key prefix, unique per process")
    a = p.parse_args(argv)
    args = injected_setup() if a.how == "injected" else by_hand_setup()
    t0 = time.perf_counter()
    store = connect(args, positional=a.how == "by-hand")
    setup_s = time.perf_counter() - t0
    try:
        for size in SIZES:
            timed(store, f"{a.tag}-warm", size, WARMUP)
        figures = {str(size): timed(store, a.tag, size, count) for size, count in COUNTS.items()}
    finally:
        store.close()
    print(json.dumps({"how": a.how, "setup": args, "setup_s": setup_s, "sizes": figures}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
