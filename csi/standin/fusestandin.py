"""A stand-in for ``curvine-fuse``: a small real FUSE filesystem with the same command line, shipped for
development and tests (SPEC §5). It serves a local directory instead of a Curvine cluster.

Usage::

    python -m csi.standin.fusestandin [--conf FILE] --master-addrs H:P[,H:P…] --fs-path /x \\
        --mnt-path /mnt/dir [--io-threads N] [--entry-timeout-ms MS] [--debug] [--client.block-size 64MB] …
    python -m csi.standin.fusestandin validate-config …the same flags…

It takes the real curvine-fuse's command line (Curvine bff4e7d, ``curvine-fuse --help``): ``--conf``,
``--master-addrs``, ``--fs-path``, ``--mnt-path`` and every tuning flag of
``kubectl_fluid.api.curvinefuse.FUSE_TUNING_PARAMS`` (``--debug`` and ``--readonly`` without a
value, the others as ``--key value``), and the ``validate-config`` subcommand (checks the command
line, exit 0, mounts nothing). Anything else is a usage error (exit 2), as with the real binary.
``--conf``, when given, must be a readable TOML file (curvine-fuse exits 1 otherwise); when
``--master-addrs`` is absent the masters come from its ``[client] master_addrs``, as in curvine-fuse.

What it serves: ``$CURVINE_STANDIN_DATA/{cluster-id}{fs-path}`` (default data root
``/var/lib/curvine-standin``), where cluster-id is the first 8 hex of sha256(master-addrs), the same
id the CSI controller puts into volume handles. The directory is created when missing. Stand-ins
for one master-addrs share one tree, so an fs-path ``/a`` mount sees what the ``/`` mount wrote
under ``a/``, as two Curvine clients of one cluster would.

Tuning flags: ``--entry-timeout-ms``, ``--attr-timeout-ms`` and ``--negative-timeout-ms`` become the
kernel's cache timeouts and default to 0 here (curvine-fuse's own defaults are 1000, 1000 and 0),
so that several mounts of one tree, and writes made straight into the backing directory, are seen
at once; ``--direct-io true`` turns on direct I/O; ``--readonly`` mounts read-only, as curvine-fuse
does (MS_RDONLY). Switches must be ``true`` or ``false``, as clap
takes them. The others are checked for presence only and otherwise ignored: they tune Curvine's
client, which this is not.

Process contract, for the node service that supervises it:

- It runs in the foreground, multithreaded (libfuse's worker threads; the GIL serialises the Python).
- Once the mount is live it prints one line, ``ready``, to stdout and flushes it; nothing else goes
  to stdout (diagnostics go to stderr). A supervisor may instead poll ``/proc/self/mountinfo``: the
  mount is there before ``ready`` is printed, and calls made meanwhile simply wait for it.
- The mount is ``allow_other`` (bind mounts into pods' mount namespaces and other users must reach
  it) with ``default_permissions`` (the kernel checks modes; the daemon runs as root). Its source
  in the mount table is ``curvine-standin-{cluster-id}``, its type ``fuse.curvine-standin``.
- SIGTERM, SIGINT or SIGHUP: libfuse unmounts and the process exits 0, leaving nothing in the mount
  table. Files still open through the mount do not hold it: it is detached, and their late
  ``close`` gets ENOTCONN.
- ``kill -9`` (or a crash) leaves the mount point broken: ``stat`` on it fails with ENOTCONN until
  someone runs ``fusermount3 -u MNT`` or ``umount -l MNT``. The stand-in never does that to a mount it
  did not make: started on a stale or already mounted ``--mnt-path`` it refuses with a message
  (exit 1); the node service decides about remounting.
- Exit codes: 0 clean stop, 1 could not mount (or libfuse failed), 2 bad command line.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes.util
import errno
import logging
import os
import re
import signal
import stat
import sys
import threading
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from csi.standin.fusestandin_fs import Passthrough
from kubectl_fluid.api import curvinefuse as cf
from kubectl_fluid.api import names

DATA_ROOT_ENV = "CURVINE_STANDIN_DATA"
DEFAULT_DATA_ROOT = "/var/lib/curvine-standin"
READY_LINE = "ready"
FS_TYPE = "fuse.curvine-standin"
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

VALIDATE_COMMAND = "validate-config"
# Tuning flags the stand-in gives a meaning to; the rest are accepted and ignored.
_TIMEOUT_FLAGS = cf.FUSE_MILLISECONDS_PARAMS

log = logging.getLogger("curvine-standin")


class StandinError(Exception):
    """A failure to report on stderr before exiting ``EXIT_FAILED``."""


@dataclass(frozen=True)
class Options:
    master_addrs: str
    fs_path: str
    mnt_path: str
    tuning: dict[str, str] = field(default_factory=dict)

    @property
    def cluster_id(self) -> str:
        return names.cluster_id(self.master_addrs)


def build_parser() -> argparse.ArgumentParser:
    # allow_abbrev=False: the real binary does not take "--master" for "--master-addrs", and a
    # prefix match could hide a misspelt tuning key from the test that should catch it.
    p = argparse.ArgumentParser(
        prog="curvine-fuse (stand-in)",
        description="Serve a local directory per Curvine cluster-id over FUSE.",
        allow_abbrev=False,
    )
    p.add_argument("-c", "--conf", metavar="FILE")
    p.add_argument("--master-addrs", metavar="HOST:PORT[,HOST:PORT]")
    p.add_argument("--fs-path", default="/", metavar="/PATH")
    p.add_argument("--mnt-path", required=True, metavar="DIR")
    for key in cf.FUSE_TUNING_PARAMS:
        if key in cf.FUSE_PRESENCE_PARAMS:
            p.add_argument(f"--{key}", action="store_true", dest=key)
        else:
            p.add_argument(f"--{key}", metavar="VALUE", dest=key)
    return p


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Parse and validate; any problem exits 2 with argparse's ``error:`` line on stderr, a
    configuration file that cannot be read exits 1."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    conf = _read_conf(ns.conf) if ns.conf else {}
    try:
        master_addrs = _check_master_addrs(ns.master_addrs or _conf_masters(conf))
        fs_path = _check_fs_path(ns.fs_path)
        if not ns.mnt_path:
            raise ValueError("--mnt-path: must not be empty")
        tuning = {}
        for key in cf.FUSE_TUNING_PARAMS:
            value = getattr(ns, key)
            if value is True:
                tuning[key] = "true"
            elif value not in (None, False):
                tuning[key] = value
        for key in _TIMEOUT_FLAGS:
            if key in tuning:
                _parse_milliseconds(key, tuning[key])
        for key in (*cf.FUSE_SWITCH_PARAMS, *cf.FUSE_CLIENT_SWITCH_PARAMS):
            if key in tuning:
                _parse_bool(key, tuning[key])
    except ValueError as exc:
        parser.error(str(exc))
    return Options(master_addrs, fs_path, os.path.abspath(ns.mnt_path), tuning)


def _read_conf(path: str) -> dict[str, object]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"curvine-standin: error: --conf {path}: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_FAILED) from None


def _conf_masters(conf: dict[str, object]) -> str:
    """``[client] master_addrs`` as master-addrs text (IPv6 hosts in brackets), "" when absent."""
    client = conf.get("client")
    masters = client.get("master_addrs", []) if isinstance(client, dict) else []
    entries = []
    for master in masters if isinstance(masters, list) else []:
        host, port = str(master.get("hostname", "")), master.get("port", "")
        entries.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    if not entries:
        raise ValueError("--master-addrs: needed when --conf names no [client] master_addrs")
    return ",".join(entries)


def _check_master_addrs(value: str) -> str:
    for addr in value.split(","):
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"--master-addrs: {addr!r} is not host:port")
    return value


def _check_fs_path(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"--fs-path: {value!r} is not absolute")
    parts = [part for part in value.split("/") if part and part != "."]
    if ".." in parts:
        raise ValueError(f"--fs-path: {value!r} contains '..'")
    return "/" + "/".join(parts)


def _parse_milliseconds(key: str, value: str) -> float:
    """Seconds, for libfuse, of curvine-fuse's whole milliseconds."""
    if not value.isdigit():
        raise ValueError(f"--{key}: {value!r} is not a whole number of milliseconds >= 0")
    return int(value) / 1000


def _parse_bool(key: str, value: str) -> bool:
    # clap's bool, as the real binary parses it: nothing but these two.
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"--{key}: {value!r} is not true or false")


def data_root() -> str:
    return os.environ.get(DATA_ROOT_ENV) or DEFAULT_DATA_ROOT


def backing_dir(opts: Options, root: str | None = None) -> str:
    """``{data_root}/{cluster-id}{fs-path}``: the directory this invocation serves."""
    base = os.path.join(root or data_root(), opts.cluster_id)
    return base if opts.fs_path == "/" else base + opts.fs_path


def _unescape_mountinfo(field_text: str) -> str:
    # The kernel writes space, tab, newline and backslash in mount points as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_text)


def mount_points(mountinfo: str = "/proc/self/mountinfo") -> list[str]:
    """Mount points listed in a mountinfo file, in order (a path mounted twice appears twice)."""
    with open(mountinfo, encoding="utf-8", errors="surrogateescape") as f:
        return [_unescape_mountinfo(line.split(" ")[4]) for line in f if line.strip()]


def check_mount_point(mnt: str) -> str:
    """The canonical mount point, created when missing; ``StandinError`` when it cannot take a mount."""
    try:
        st = os.stat(mnt)
    except FileNotFoundError:
        try:
            os.makedirs(mnt, exist_ok=True)
        except OSError as exc:
            raise _mount_point_error(mnt, exc) from None
    except OSError as exc:
        raise _mount_point_error(mnt, exc) from None
    else:
        if not stat.S_ISDIR(st.st_mode):
            raise StandinError(f"mount point {mnt} is not a directory")
    real = os.path.realpath(mnt)
    if real in mount_points():
        raise StandinError(
            f"mount point {real} is already mounted; refusing to mount over it "
            "(stop its FUSE process or unmount it first)"
        )
    return real


def _mount_point_error(mnt: str, exc: OSError) -> StandinError:
    if exc.errno == errno.ENOTCONN:
        return StandinError(
            f"mount point {mnt} is a stale FUSE mount (Transport endpoint is not connected): its "
            f"FUSE process died; unmount it first (fusermount3 -u {mnt} or umount -l {mnt})"
        )
    return StandinError(f"mount point {mnt} cannot be used: {exc.strerror or exc}")


def fuse_options(opts: Options, libfuse_major: int = 3) -> dict[str, object]:
    """Mount options for mfusepy's ``FUSE(**options)``: ``True`` is a bare ``-o`` flag."""
    options: dict[str, object] = {
        "foreground": True,
        "default_permissions": True,
        "fsname": f"curvine-standin-{opts.cluster_id}",
        "subtype": FS_TYPE.removeprefix("fuse."),
    }
    # As root libfuse mounts by itself; otherwise fusermount3 refuses allow_other unless
    # /etc/fuse.conf says user_allow_other, and a failed mount helps nobody in development.
    if os.geteuid() == 0 or _fuse_conf_allows_other():
        options["allow_other"] = True
    else:
        log.warning("not root and /etc/fuse.conf lacks user_allow_other: mounting without allow_other")
    for key in _TIMEOUT_FLAGS:
        options[key.removesuffix("-ms").replace("-", "_")] = _parse_milliseconds(
            key, opts.tuning.get(key, "0")
        )
    if _parse_bool("direct-io", opts.tuning.get("direct-io", "false")):
        options["direct_io"] = True
    if cf.PARAM_READONLY in opts.tuning:
        # As curvine-fuse --readonly: the whole mount (its superblock) read-only, so no bind of it,
        # however a container runtime remounts its own, can write.
        options["ro"] = True
    if libfuse_major >= 3:
        # libfuse 3.14 warns "Ignoring invalid max threads value 4294967295" on every start unless
        # this is set; 10 is the value it documents as the default anyway.
        options["max_idle_threads"] = 10
    return options


def _fuse_conf_allows_other() -> bool:
    try:
        with open("/etc/fuse.conf", encoding="utf-8") as f:
            return any(line.strip() == "user_allow_other" for line in f)
    except OSError:
        return False


def _announce_ready() -> None:
    # A supervisor that closed our stdout can still poll the mount table; keep serving.
    with contextlib.suppress(OSError, ValueError):
        print(READY_LINE, flush=True)


# What serves the mount: the passthrough, or (tests) a variant of it built with the same arguments.
Filesystem = Callable[..., Passthrough]


def run(opts: Options, filesystem: Filesystem = Passthrough) -> int:
    root = backing_dir(opts)
    try:
        os.makedirs(root, exist_ok=True)
        mnt = check_mount_point(opts.mnt_path)
    except (StandinError, OSError) as exc:
        log.error("%s", exc)
        return EXIT_FAILED

    # mfusepy takes libfuse 2 when both are installed; libfuse 3 is the one the project installs and
    # tests, so choose it explicitly unless the environment already chose.
    if not os.environ.get("FUSE_LIBRARY_PATH") and not os.environ.get("FUSE_LIBRARY_NAME"):
        libfuse3 = ctypes.util.find_library("fuse3")
        if libfuse3:
            os.environ["FUSE_LIBRARY_PATH"] = libfuse3
    try:
        # Imported here: loading it loads libfuse, which --help and usage errors do not need.
        import mfusepy  # type: ignore[import-untyped]  # ships no type information
    except OSError as exc:
        log.error("cannot load libfuse (Debian: libfuse3-3 and fuse3): %s", exc)
        return EXIT_FAILED

    # Modes of new entries arrive from the kernel with the caller's umask applied; ours must not narrow
    # them again. Set only now so the directories made above get the usual 0755.
    os.umask(0)
    live = threading.Event()

    def on_ready() -> None:
        live.set()
        _announce_ready()

    # libfuse installs its stop handlers only over SIG_DFL, and a supervisor may hand down ignored or
    # blocked signals (a background job in a script ignores SIGINT; exec keeps a blocked mask).
    stop_signals = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    for sig in stop_signals:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals)
    ops = filesystem(root, context=mfusepy.fuse_get_context, on_ready=on_ready)
    log.info("serving %s at %s (cluster-id %s)", root, mnt, opts.cluster_id)
    status: object = 0
    try:
        # Blocks until unmounted: libfuse installs its SIGTERM/SIGINT/SIGHUP handlers, and on any
        # of them leaves its loop and unmounts before returning.
        mfusepy.FUSE(ops, mnt, **fuse_options(opts, mfusepy.fuse_version_major))
    except RuntimeError as exc:
        # libfuse 3.14 (Debian 12) returns non-zero (8) when a signal ended its loop, as it does for a
        # failed mount; whether the mount ever went live is what tells the two apart.
        status = exc.args[0] if exc.args else exc
    if not live.is_set():
        log.error("FUSE stopped before %s was mounted (libfuse status %s; its message is above)", mnt, status)
        return EXIT_FAILED
    if mnt in mount_points():
        log.error("FUSE loop ended (libfuse status %s) but %s is still mounted", status, mnt)
        return EXIT_FAILED
    log.info("unmounted %s", mnt)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="curvine-standin: %(levelname)s %(message)s"
    )
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == [VALIDATE_COMMAND]:
        parse_args(args[1:])  # a bad command line exits 2 from here
        return EXIT_OK
    return run(parse_args(args))


if __name__ == "__main__":
    sys.exit(main())
