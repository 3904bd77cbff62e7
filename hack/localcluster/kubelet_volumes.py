"""The kubelet stand-in's pure core: which CSI publications the pods on our nodes ask for.

kwok's nodes have no kubelet, so nothing would ever call the node service. The stand-in
(kubeletstandin.py) does what kubelet's volume manager does for volumes of our driver: it
compares the publications the pods want (this module) with the ones that exist on disk, and makes
the NodeStage/NodePublish/NodeUnpublish/NodeUnstage calls that close the gap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_fluid.api import names

Obj = dict[str, Any]

# CSI access modes, by the PV access mode kubelet translates (csi_pb2 is not imported here: this
# module stays pure and fast to test).
ACCESS_MODES: Mapping[str, str] = {
    "ReadWriteOnce": "SINGLE_NODE_WRITER",
    "ReadWriteOncePod": "SINGLE_NODE_SINGLE_WRITER",
    "ReadOnlyMany": "MULTI_NODE_READER_ONLY",
    "ReadWriteMany": "MULTI_NODE_MULTI_WRITER",
}


@dataclass(frozen=True)
class Publication:
    """One pod's use of one PV of our driver on one node: the kubelet calls' arguments."""

    node: str
    pod_uid: str
    pod_namespace: str
    pod_name: str
    service_account: str
    pv: str
    volume_handle: str
    readonly: bool
    access_mode: str
    # Tuples, so a Publication stays hashable.
    attributes: tuple[tuple[str, str], ...] = field(default=())

    @property
    def key(self) -> tuple[str, str, str]:
        return self.node, self.pod_uid, self.pv

    def pod_info(self) -> dict[str, str]:
        """What kubelet adds to the publish context when the CSIDriver asks for podInfoOnMount."""
        return {
            "csi.storage.k8s.io/pod.name": self.pod_name,
            "csi.storage.k8s.io/pod.namespace": self.pod_namespace,
            "csi.storage.k8s.io/pod.uid": self.pod_uid,
            "csi.storage.k8s.io/serviceAccount.name": self.service_account,
            "csi.storage.k8s.io/ephemeral": "false",
        }


def pod_running_here(pod: Obj, nodes: Iterable[str]) -> bool:
    """A pod whose volumes must be mounted: placed on one of our nodes, not being deleted, not done."""
    meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
    return (
        spec.get("nodeName") in set(nodes)
        and not meta.get("deletionTimestamp")
        and status.get("phase") not in ("Succeeded", "Failed")
    )


def wanted(
    pods: Iterable[Obj], pvcs: Mapping[tuple[str, str], Obj], pvs: Mapping[str, Obj], nodes: Iterable[str]
) -> dict[tuple[str, str, str], Publication]:
    """Every publication the live pods on ``nodes`` need, by (node, pod uid, pv). A claim that is not
    bound yet, or bound to another driver's volume, needs nothing from us."""
    node_set = set(nodes)
    out: dict[tuple[str, str, str], Publication] = {}
    for pod in pods:
        if not pod_running_here(pod, node_set):
            continue
        meta, spec = pod["metadata"], pod["spec"]
        for volume in spec.get("volumes", []):
            claim = volume.get("persistentVolumeClaim")
            if not claim:
                continue
            pvc = pvcs.get((meta["namespace"], claim["claimName"]))
            pv_name = (pvc or {}).get("spec", {}).get("volumeName")
            pv = pvs.get(pv_name or "")
            csi = (pv or {}).get("spec", {}).get("csi") or {}
            if pv is None or csi.get("driver") != names.CSI_DRIVER:
                continue
            modes = pv["spec"].get("accessModes") or ["ReadWriteOnce"]
            pub = Publication(
                node=spec["nodeName"],
                pod_uid=meta["uid"],
                pod_namespace=meta["namespace"],
                pod_name=meta["name"],
                service_account=spec.get("serviceAccountName", "default"),
                pv=pv["metadata"]["name"],
                volume_handle=csi["volumeHandle"],
                readonly=bool(claim.get("readOnly") or csi.get("readOnly")),
                access_mode=ACCESS_MODES.get(modes[0], "SINGLE_NODE_WRITER"),
                attributes=tuple(sorted((csi.get("volumeAttributes") or {}).items())),
            )
            out[pub.key] = pub
    return out


@dataclass(frozen=True)
class Plan:
    stage: list[Publication]  # one per (node, volume handle) not staged yet
    publish: list[Publication]
    unpublish: list[tuple[str, str, str]]
    unstage: list[tuple[str, str]]  # (node, volume handle) no publication uses any more


def plan(
    want: Mapping[tuple[str, str, str], Publication],
    published: Mapping[tuple[str, str, str], str],
    staged: Iterable[tuple[str, str]],
    *,
    unsure: Iterable[tuple[str, ...]] = (),
) -> Plan:
    """The calls that turn what exists (``published``: (node, pod uid, pv) → volume handle, and the
    staged (node, volume handle) pairs) into what is wanted. ``unsure`` names the stages and
    publications whose call was made but not seen to succeed (kubelet's "uncertain" state): made again
    while wanted (the calls are idempotent), undone like the others when not. Publications go before
    the unstages they would otherwise race with: a volume still wanted by one pod is never unstaged."""
    staged_set, unsure_set = set(staged), set(unsure)
    to_stage: dict[tuple[str, str], Publication] = {}
    for pub in want.values():
        pair = (pub.node, pub.volume_handle)
        if (pair not in staged_set or pair in unsure_set) and pair not in to_stage:
            to_stage[pair] = pub
    publish = [pub for key, pub in sorted(want.items()) if key not in published or key in unsure_set]
    unpublish = sorted(key for key in published if key not in want)
    still_used = {(pub.node, pub.volume_handle) for pub in want.values()}
    unstage = sorted(pair for pair in staged_set if pair not in still_used)
    return Plan(list(to_stage.values()), publish, unpublish, unstage)
