"""Standalone mount mode: the pod that runs the FUSE of one (node, mount key) (SPEC §5).

The node service creates it pinned to its own node; the pod mounts FUSE at the same host path the
embedded mode would use, through a hostPath volume with Bidirectional propagation, so the mount is
visible to the node service (and from there bind-mounted into application pods). ``env`` and
``host_paths`` are what the FUSE program needs beside its flags (its configuration; the stand-in's
data directory); a host path is mounted at the same path. ``resources`` and ``priority_class`` keep
it from being the first pod the kubelet evicts or the kernel OOM-kills (the node service's defaults
with the StorageClass's own: csi/model/fusepodparams.py). ``node_uid`` makes the pod's Node its
controlling owner: ``kubectl drain`` takes a pod with a controller, where it refuses a bare one
without ``--force``, and the pod goes with its Node (its budget, fusebudget.py, keeps drain from
evicting it while volumes use it). A pure function: the node service's FusePodManager sends what this
returns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_fluid.api import names


def fuse_pod(
    node: str,
    mount_key: str,
    argv: list[str],
    mnt_path: str,
    image: str,
    *,
    env: Sequence[tuple[str, str]] = (),
    host_paths: Sequence[str] = (),
    resources: Mapping[str, Mapping[str, str]] | None = None,
    priority_class: str | None = None,
    node_uid: str | None = None,
) -> dict[str, Any]:
    key_dir = os.path.dirname(mnt_path)
    extra = [(f"host-{i}", path) for i, path in enumerate(host_paths)]
    owner = {"ownerReferences": [node_owner(node, node_uid)]} if node_uid else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": names.fuse_pod_name(node, mount_key),
            "namespace": names.FLUID_NAMESPACE,
            "labels": names.fuse_pod_labels(node, mount_key),
            **owner,
        },
        "spec": {
            "nodeName": node,
            # The node service restarts FUSE itself (a new mount means its binds must be made again),
            # so kubelet must not restart the container behind its back.
            "restartPolicy": "Never",
            # The cache's masters are addressed as the node sees them, as the embedded FUSE would.
            "hostNetwork": True,
            "dnsPolicy": "ClusterFirstWithHostNet",
            "enableServiceLinks": False,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 30,
            # Pods on a tainted node may still use a volume staged there.
            "tolerations": [{"operator": "Exists"}],
            **({"priorityClassName": priority_class} if priority_class else {}),
            "containers": [
                {
                    "name": names.FUSE_POD_CONTAINER,
                    "image": image,
                    # What the manifests give their own pods: an image already on the node (the one
                    # the node service runs, loaded without a registry) is used as it is. Without it
                    # kubelet's default for a :latest tag is Always, and such a node fails the mount.
                    "imagePullPolicy": "IfNotPresent",
                    "command": argv,
                    "env": [{"name": name, "value": value} for name, value in env],
                    **({"resources": {k: dict(v) for k, v in resources.items()}} if resources else {}),
                    # Root, as the node service: an image whose default user is not (the product's
                    # runs as 65532) could not mount FUSE at the key's directory.
                    "securityContext": {
                        "privileged": True,
                        "runAsUser": 0,
                        "runAsGroup": 0,
                        "runAsNonRoot": False,
                    },
                    "volumeMounts": [
                        {"name": "mount-key", "mountPath": key_dir, "mountPropagation": "Bidirectional"},
                        {"name": "dev-fuse", "mountPath": "/dev/fuse"},
                        *({"name": name, "mountPath": path} for name, path in extra),
                    ],
                }
            ],
            "volumes": [
                {"name": "mount-key", "hostPath": {"path": key_dir, "type": "DirectoryOrCreate"}},
                {"name": "dev-fuse", "hostPath": {"path": "/dev/fuse", "type": "CharDevice"}},
                *({"name": name, "hostPath": {"path": path, "type": "Directory"}} for name, path in extra),
            ],
        },
    }


def node_owner(node: str, uid: str) -> dict[str, Any]:
    """The Node as the pod's controller. No blockOwnerDeletion: that would need the right to set
    finalizers on Nodes, and nothing waits on a FUSE pod's deletion."""
    return {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid, "controller": True}
