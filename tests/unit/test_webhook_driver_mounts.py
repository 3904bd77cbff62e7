"""Issue 28, item 1: every pod that mounts a volume of the CSI driver gets HostToContainer on it, a
Dataset's PVC or not, whether or not it asked for anything; a pod that asked for nothing is never
refused and nothing else of it changes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.api import drivervolumes, names
from tests.unit.webhook_samples import NS, dataset_pvc, default_profile
from webhook.drivermounts import driver_volumes
from webhook.lookup import StaticLookup
from webhook.patch import apply_patch
from webhook.pipeline import admit

PROFILE = default_profile()
CURVINE_CLASS = {"kind": "StorageClass", "metadata": {"name": "curvine"}, "provisioner": names.CSI_DRIVER}
OTHER_CLASS = {"kind": "StorageClass", "metadata": {"name": "local"}, "provisioner": "rancher.io/local-path"}


def claim(name: str, storage_class: str | None = None, volume: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume is not None:
        spec["volumeName"] = volume
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def pv(name: str, driver: str) -> dict[str, Any]:
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": {"csi": {"driver": driver}}}


LOOKUP = StaticLookup(
    [
        CURVINE_CLASS,
        OTHER_CLASS,
        claim("dynamic", "curvine"),
        claim("bound", "curvine", "pv-bound"),
        pv("pv-bound", names.CSI_DRIVER),
        claim("static", "", "pv-static"),
        pv("pv-static", names.CSI_DRIVER),
        claim("elsewhere", "local"),
        claim("moved", "curvine", "pv-other"),  # a class of ours, bound to another driver's PV
        pv("pv-other", "ebs.csi.aws.com"),
        dataset_pvc("ds1"),
    ]
)


def pod(volumes: dict[str, dict[str, Any]], labels: dict[str, str] | None = None) -> dict[str, Any]:
    mounts = [{"name": name, "mountPath": f"/{name}"} for name in volumes]
    return {
        "metadata": {"name": "app", "labels": labels or {}},
        "spec": {
            "containers": [{"name": "app", "volumeMounts": mounts}],
            "volumes": [{"name": name, **source} for name, source in volumes.items()],
        },
    }


def pvc_source(name: str) -> dict[str, Any]:
    return {"persistentVolumeClaim": {"claimName": name}}


def test_the_driver_serves_a_datasets_claim_its_classes_claims_and_its_pvs_claims() -> None:
    volumes = {
        "a": pvc_source("dynamic"),
        "b": pvc_source("bound"),
        "c": pvc_source("static"),
        "d": pvc_source("elsewhere"),
        "e": pvc_source("moved"),
        "f": pvc_source("ds1"),
        "g": pvc_source("unknown"),
        "h": {"csi": {"driver": names.CSI_DRIVER}},
        "i": {"csi": {"driver": "other.csi"}},
        "j": {"ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "curvine"}}}},
        "k": {"ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "local"}}}},
        "l": {"emptyDir": {}},
    }
    assert driver_volumes(pod(volumes), NS, LOOKUP) == {"a", "b", "c", "f", "h", "j"}


def test_a_pod_that_asked_for_nothing_gets_host_to_container_on_the_drivers_mounts_only() -> None:
    unasked = pod({"data": pvc_source("dynamic"), "scratch": pvc_source("elsewhere")})
    outcome = admit(unasked, NS, LOOKUP, PROFILE)
    assert outcome.denied is None
    assert outcome.warnings == []
    assert outcome.patch == [
        {
            "op": "add",
            "path": "/spec/containers/0/volumeMounts/0/mountPropagation",
            "value": "HostToContainer",
        }
    ]
    again = admit(apply_patch(unasked, outcome.patch), NS, LOOKUP, PROFILE)
    assert again.patch is None


def test_a_pod_that_asked_for_nothing_is_never_refused_for_what_its_annotations_say() -> None:
    """Its annotations are not an ask: a name no Dataset can have, or another namespace's, is not
    read (a pod with the injection label is refused for both)."""
    unasked = pod({"data": pvc_source("static")})
    unasked["metadata"]["annotations"] = {names.ANNOTATION_DATASET: "Not_A_Name,other/ds"}
    outcome = admit(unasked, NS, LOOKUP, PROFILE)
    assert outcome.denied is None
    assert outcome.datasets == []
    assert outcome.patch is not None
    asked = pod({"data": pvc_source("static")}, {names.LABEL_INJECT: names.TRUE})
    asked["metadata"]["annotations"] = unasked["metadata"]["annotations"]
    assert admit(asked, NS, LOOKUP, PROFILE).denied is not None


def test_a_clientless_pod_with_a_volume_of_the_driver_gets_the_propagation_too() -> None:
    from tests.unit.webhook_samples import ready_lookup

    lookup = ready_lookup("ds1")
    lookup.add(CURVINE_CLASS)
    lookup.add(claim("dynamic", "curvine"))
    clientless = pod({"data": pvc_source("dynamic")}, {names.LABEL_INJECT: names.TRUE})
    clientless["metadata"]["annotations"] = {names.ANNOTATION_DATASET: "ds1"}
    outcome = admit(clientless, NS, lookup, PROFILE)
    assert outcome.mutated is not None
    [app] = [c for c in outcome.mutated["spec"]["containers"] if c["name"] == "app"]
    assert {m["name"]: m.get("mountPropagation") for m in app["volumeMounts"]}["data"] == "HostToContainer"


@given(
    labels=st.dictionaries(st.sampled_from(["fluid.io/dataset-id", "app", "fluid.io/s-ns-ds"]), st.text()),
    class_provisioner=st.one_of(st.none(), st.sampled_from([names.CSI_DRIVER, "other"])),
    pv_driver=st.one_of(st.none(), st.sampled_from([names.CSI_DRIVER, "other"])),
)
def test_a_claim_is_judged_by_its_dataset_labels_then_its_pv_then_its_class(
    labels: dict[str, str], class_provisioner: str | None, pv_driver: str | None
) -> None:
    pvc = {"metadata": {"name": "c", "labels": labels}, "spec": {}}
    storage_class = None if class_provisioner is None else {"provisioner": class_provisioner}
    volume = None if pv_driver is None else {"spec": {"csi": {"driver": pv_driver}}}
    expected = any(key == "fluid.io/dataset-id" or key.startswith("fluid.io/s-") for key in labels) or (
        pv_driver == names.CSI_DRIVER if pv_driver is not None else class_provisioner == names.CSI_DRIVER
    )
    assert drivervolumes.serves_claim(pvc, storage_class, volume) is expected
