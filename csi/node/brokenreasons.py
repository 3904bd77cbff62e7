"""Why a FuseMount is Broken, in words that say what to do: one place for the wording of each
failure, for both kinds of FUSE. A mount of mode ``client`` is its runtime's client pod's (SPEC §7):
the node service never restarts it, and its fixes are the client pod's; a CSI-run FUSE's are the
node service's FUSE process or pod, and its masters'. Pure; the reasons stay the same words for as
long as the fault lasts (a reason that changed every round would rewrite the object)."""

from __future__ import annotations

from csi.node.state import MountEntry
from kubectl_fluid.api import names


def _client_pod(entry: MountEntry) -> str:
    assert entry.client is not None
    return f"{entry.client.namespace}/{entry.pod_name or 'the client pod on this node'}"


def hung(entry: MountEntry, what: str, deadline: float) -> str:
    """Its FUSE has not answered ``what`` within ``deadline`` seconds."""
    waited = f"{deadline:.0f} s"
    if entry.client is not None:
        runtime = f"{entry.client.namespace}/{entry.client.name}"
        return (
            f"the FUSE of runtime {runtime}'s client at {entry.mnt_path} has not answered for more"
            f" than {waited} ({what}): its cache may be down or overloaded. If it never answers,"
            f" delete its client pod {_client_pod(entry)}; the node service binds its volumes into the"
            " new client's mount"
        )
    if entry.pod_name:
        restart = f"delete its pod {names.FLUID_NAMESPACE}/{entry.pod_name}"
    elif entry.pid:
        restart = f"kill its process {entry.pid}"
    else:
        restart = "stop its process"
    return (
        f"its FUSE at {entry.mnt_path} has not answered for more than {waited}"
        f" ({what}): the cache's masters {entry.params.master_addrs} may be down or overloaded"
        " (curvine-fuse waits rpc-timeout-ms, 120 s by default, on each request). If it never"
        f" answers, restart it: {restart}; the node service starts another and binds its volumes again"
    )


def root_gone(entry: MountEntry) -> str:
    """Its mount's root answers ENOENT: the FUSE lives, the path it serves is gone from the cache."""
    if entry.client is not None:
        runtime = f"{entry.client.namespace}/{entry.client.name}"
        return (
            f"the FUSE of runtime {runtime}'s client at {entry.mnt_path} answers ENOENT at its root: the"
            " path it serves is gone from the cache (its master lost it, e.g. restarted without its"
            " journal); the volumes' data is not served. Delete the pods using the Dataset so it is"
            f" unstaged, and its client pod {_client_pod(entry)}, then start the pods again"
        )
    return (
        f"the FUSE's fs-path {entry.params.fs_path} is gone from the cache at"
        f" {entry.params.master_addrs} (its mount {entry.mnt_path} answers ENOENT): the"
        " master lost it, e.g. restarted without its journal; the volumes' data is not"
        " served. Delete the pods using them so the mount is unstaged, then start them again"
    )
