"""The command line of the real ``curvine-fuse`` (Curvine bff4e7d, ``curvine-fuse list-config-flags``)
as StorageClass tuning keys (SPEC §5): one place for the names the CSI driver accepts, hands over,
renames or drops. csi/model/tuning.py gives each group its value shape.

A tuning key is the flag's own long name (``io-threads`` is ``--io-threads``). Besides those, the
design document's older keys are accepted and translated: ``mnt-per-task`` became ``tasks-per-mnt``,
the three kernel cache timeouts in seconds became ``--*-timeout-ms`` in milliseconds, and
``node-cache-size`` was removed from curvine-fuse (accepted with a warning and ignored). The flags
the driver sets itself (``--conf``, ``--master-addrs``, ``--fs-path``, ``--mnt-path``) and
``--version-json`` (no mount setting) are not tuning keys.
"""

from __future__ import annotations

from typing import Final

# --- the mount's own flags (FuseMountArgs), by value shape ------------------------------------------
# Decimal counts (usize, or a Curvine integer that has no meaning below 0).
FUSE_COUNT_PARAMS: Final = ("worker-threads", "tasks-per-mnt", "fuse-channel-size", "stream-channel-size")
# Counts curvine-fuse refuses at 0 ("fuse.io_threads must be > 0", "fuse.list_limit must be > 0").
FUSE_POSITIVE_PARAMS: Final = ("io-threads", "list-limit")
# FUSE's 16-bit fields, refused at 0; congestion-threshold must also be <= max-background.
FUSE_BACKGROUND_PARAMS: Final = ("max-background", "congestion-threshold")
PARAM_MAX_BACKGROUND: Final = "max-background"
PARAM_CONGESTION_THRESHOLD: Final = "congestion-threshold"
# curvine-fuse's defaults for the two (FuseConf::default): what a volume that sets one is checked with.
DEFAULT_MAX_BACKGROUND: Final = 256
DEFAULT_CONGESTION_THRESHOLD: Final = 192
FUSE_PORT_PARAMS: Final = ("web-port",)
# ``true`` or ``false`` handed over as the flag's value (clap's bool: nothing else).
FUSE_SWITCH_PARAMS: Final = (
    "clone-fd",
    "direct-io",
    "cache-readdir",
    "read-dir-fill-ino",
    "write-back-cache",
    "non-seekable",
    "check-permission",
    "metrics-enabled",
    "enable-meta-cache",
    "remember",
)
PARAM_DIRECT_IO: Final = "direct-io"
PARAM_WRITE_BACK_CACHE: Final = "write-back-cache"
# Flags without a value: ``true`` passes the flag, ``false`` leaves it out.
FUSE_PRESENCE_PARAMS: Final = ("debug", "readonly")
PARAM_READONLY: Final = "readonly"
FUSE_MILLISECONDS_PARAMS: Final = ("entry-timeout-ms", "attr-timeout-ms", "negative-timeout-ms")
# Curvine durations ("30m", "1h": digits and ms, s, m, h or d).
FUSE_DURATION_PARAMS: Final = ("node-cache-timeout", "meta-cache-ttl")
# ``--mnt-number`` N > 1 mounts N points *under* --mnt-path (mnt-0, mnt-1, ...): the driver binds
# volumes from --mnt-path itself, so only 1 is accepted.
PARAM_MNT_NUMBER: Final = "mnt-number"
# FUSE mount options, comma-separated (replace the config file's; curvine's direct mount backend
# knows only these).
PARAM_OPTIONS: Final = "options"
FUSE_MOUNT_OPTIONS: Final = (
    "ro",
    "rw",
    "nodev",
    "dev",
    "nosuid",
    "suid",
    "noexec",
    "exec",
    "noatime",
    "atime",
    "dirsync",
    "sync",
    "async",
    "allow_other",
    "default_permissions",
    "big_write",
)
# Pairs of which one options value may hold only one (curvine-fuse refuses both).
FUSE_OPPOSITE_OPTIONS: Final = (
    ("ro", "rw"),
    ("nodev", "dev"),
    ("nosuid", "suid"),
    ("noexec", "exec"),
    ("noatime", "atime"),
    ("sync", "async"),
)

# --- the client's overrides (``--client.*``, ClientConfCliOverrides), by value shape -----------------
CLIENT_PREFIX: Final = "client."
FUSE_CLIENT_COUNT_PARAMS: Final = tuple(
    f"{CLIENT_PREFIX}{name}"
    for name in (
        "io-threads",
        "worker-threads",
        "replicas",
        "write-chunk-num",
        "read-chunk-num",
        "read-parallel",
        "max-cache-block-handles",
        "conn-retry-max-duration-ms",
        "conn-retry-min-sleep-ms",
        "conn-retry-max-sleep-ms",
        "rpc-retry-max-duration-ms",
        "rpc-retry-min-sleep-ms",
        "rpc-retry-max-sleep-ms",
        "conn-timeout-ms",
        "rpc-timeout-ms",
        "data-timeout-ms",
        "master-conn-pool-size",
        "failed-worker-ttl",
        "mount-update-ttl",
        "clean-task-interval",
        "close-timeout-secs",
        "sync-check-interval-min",
        "sync-check-interval-max",
        "max-sync-wait-timeout",
        "sync-check-log-tick",
        "block-conn-idle-size",
        "block-conn-idle-time",
        "max-read-parallel",
        "sequential-read-threshold",
    )
)
FUSE_CLIENT_SWITCH_PARAMS: Final = tuple(
    f"{CLIENT_PREFIX}{name}"
    for name in (
        "short-circuit",
        "auto-cache-enabled",
        "rpc-close-idle",
        "enable-read-ahead",
        "enable-unified-fs",
        "enable-rust-read-ufs",
        "audit-logging-enabled",
        "metric-report-enable",
        "enable-block-conn-pool",
        "enable-smart-prefetch",
    )
)
# Byte sizes ("64MB", "1.5GB", "4096": ByteUnit).
FUSE_CLIENT_SIZE_PARAMS: Final = tuple(
    f"{CLIENT_PREFIX}{name}"
    for name in (
        "block-size",
        "write-chunk-size",
        "read-chunk-size",
        "read-slice-size",
        "read-ahead-len",
        "drop-cache-len",
        "small-file-size",
        "large-file-size",
    )
)
FUSE_CLIENT_DURATION_PARAMS: Final = (f"{CLIENT_PREFIX}ttl-ms", f"{CLIENT_PREFIX}auto-cache-ttl")
PARAM_CLIENT_HOSTNAME: Final = f"{CLIENT_PREFIX}hostname"
PARAM_CLIENT_UMASK: Final = f"{CLIENT_PREFIX}umask"  # octal
PARAM_CLIENT_STORAGE_TYPE: Final = f"{CLIENT_PREFIX}storage-type"
CLIENT_STORAGE_TYPES: Final = ("mem", "ssd", "hdd", "ufs", "disk", "spdk", "spdk_disk")
PARAM_CLIENT_TTL_ACTION: Final = f"{CLIENT_PREFIX}ttl-action"
CLIENT_TTL_ACTIONS: Final = ("none", "delete", "free")

# Every tuning key, under the name curvine-fuse takes it.
FUSE_TUNING_PARAMS: Final = (
    *FUSE_COUNT_PARAMS,
    *FUSE_POSITIVE_PARAMS,
    *FUSE_BACKGROUND_PARAMS,
    *FUSE_PORT_PARAMS,
    *FUSE_SWITCH_PARAMS,
    *FUSE_PRESENCE_PARAMS,
    *FUSE_MILLISECONDS_PARAMS,
    *FUSE_DURATION_PARAMS,
    PARAM_MNT_NUMBER,
    PARAM_OPTIONS,
    *FUSE_CLIENT_COUNT_PARAMS,
    *FUSE_CLIENT_SWITCH_PARAMS,
    *FUSE_CLIENT_SIZE_PARAMS,
    *FUSE_CLIENT_DURATION_PARAMS,
    PARAM_CLIENT_HOSTNAME,
    PARAM_CLIENT_UMASK,
    PARAM_CLIENT_STORAGE_TYPE,
    PARAM_CLIENT_TTL_ACTION,
)

# --- the design document's keys the real CLI no longer takes as they are --------------------------
# Renamed: the old key is handed over under the new name.
FUSE_RENAMED_PARAMS: Final = {"mnt-per-task": "tasks-per-mnt"}
# Seconds (a decimal such as 0.5) → whole milliseconds under the new name.
FUSE_SECONDS_PARAMS: Final = {
    "entry-timeout": "entry-timeout-ms",
    "attr-timeout": "attr-timeout-ms",
    "negative-timeout": "negative-timeout-ms",
}
# Removed from curvine-fuse: accepted so StorageClasses written for the older CLI keep working,
# ignored with a warning.
FUSE_DROPPED_PARAMS: Final = ("node-cache-size",)

# --- curvine-fuse's flags that are not tuning keys, and why ---------------------------------------
FLAG_CONF: Final = "conf"
FLAG_MASTER_ADDRS: Final = "master-addrs"
FLAG_FS_PATH: Final = "fs-path"
FLAG_MNT_PATH: Final = "mnt-path"
FUSE_DRIVER_FLAGS: Final = {
    FLAG_CONF: "the driver writes each mount key's configuration file itself, from the volume and "
    "the node's FUSE settings (fluid-csi --fuse-config)",
    FLAG_MASTER_ADDRS: "the volume's master-addrs parameter",
    FLAG_FS_PATH: "the volume's fs-path parameter",
    FLAG_MNT_PATH: "generated per mount key (a legacy mnt-path parameter is ignored)",
    "version-json": "prints curvine-fuse's version and exits: not a mount setting",
}


def flag(name: str) -> str:
    """curvine-fuse's command-line flag of a tuning key or driver flag: its long option."""
    return f"--{name}"
