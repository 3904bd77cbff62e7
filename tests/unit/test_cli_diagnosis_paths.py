"""``explain``'s judgement beyond the webhook's rules (issue 28, item 8): the product's own pods, the
FUSE path, a clientless dataset's PVC, kubelet's FailedMount, and a workload with no pods."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.api import names
from kubectl_fluid.cli.diagnosis import Explanation, describe, diagnose
from kubectl_fluid.cli.eventview import MOUNT_REASONS, event_line, newest
from kubectl_fluid.cli.podroles import product_role
from kubectl_fluid.cli.podview import CLIENTLESS, FUSE, claim_path, propagated
from kubectl_fluid.cli.workloadreport import WorkloadFacts, describe_workload, explain_workload
from tests.unit.test_cli_diagnosis import ASKED, facts

MASTER_LABELS = {names.LABEL_APP_COMPONENT: "master", names.LABEL_CACHERUNTIME_NAME: "demo"}


def test_a_cache_component_is_said_to_be_one_and_never_sent_to_inject() -> None:
    role = product_role("team-a", MASTER_LABELS, [("StatefulSet", "demo-master"), ("CacheRuntime", "demo")])
    assert role == (
        'the master of CacheRuntime "demo" (dataset "demo"), a pod of its StatefulSet demo-master: a cache '
        "component the controller runs, not a user of the cache; injection does not apply"
    )
    e = diagnose(facts(owner="sts/demo-master", role=role, from_pvcs=["demo"]))
    assert (e.reasons, e.notes, e.role) == ([], [], role)
    text = describe(e)
    assert f"What:       {role}" in text.splitlines()
    assert "Injected:   no (not applicable)" in text
    assert "Owner:      sts/demo-master (the product's, not to inject)" in text.splitlines()
    assert "kubectl fluid inject" not in text


def test_a_users_statefulset_and_fluid_systems_pods() -> None:
    assert product_role("team-a", {"app": "db"}, [("StatefulSet", "db")]) is None
    assert product_role("team-a", {}, []) is None
    part_of = {names.LABEL_APP_PART_OF: names.PART_OF}
    for component, says in (
        ("controller", "the fluid-controller"),
        ("webhook", "the fluid-webhook"),
        ("csi-node", "the CSI driver's node service"),
        ("csi-controller", "the CSI driver's controller"),
        ("dashboard", "fluid's dashboard component"),
    ):
        role = product_role(names.FLUID_NAMESPACE, {**part_of, names.LABEL_APP_COMPONENT: component}, [])
        assert role is not None
        assert role.startswith(says)
        assert role.endswith("injection does not apply")
    fuse = product_role(names.FLUID_NAMESPACE, names.fuse_pod_labels("node-1", "ab" * 16), [])
    assert fuse is not None
    assert fuse.startswith(f"a FUSE pod of the CSI node service (mount key {'ab' * 16} on")
    # The same labels elsewhere are a user's: fluid-system's pods are the product's.
    assert product_role("team-a", part_of, []) is None


def test_a_fuse_pvc_user_is_sent_to_inject_fuse() -> None:
    e = diagnose(facts(from_pvcs=["fuse"], fuse_claims=["fuse"]))
    assert e.reasons == [
        f"it mounts the FUSE PVC fuse ({names.CSI_DRIVER}): its data comes through the CSI driver's FUSE, "
        "not runtime config, and new pods need mount propagation to see a FUSE mount the node re-makes; "
        "run kubectl fluid inject deploy/web --fuse -n team-a"
    ]
    bare = diagnose(facts(owner=None, fuse_claims=["scratch"]))
    assert bare.reasons[0].endswith(f"recreate it with the label {names.LABEL_FUSE_SERVERFUL_INJECT}=true")
    # Asking for datasets by annotation is the clientless path's: its rules apply.
    asked = diagnose(facts(requested=["ds1"], fuse_claims=["fuse"]))
    assert "--dataset ds1" in asked.reasons[0]


def test_on_the_fuse_path_or_labelled_for_it_too_late() -> None:
    served = {names.LABEL_FUSE_SERVERFUL_INJECT: names.TRUE}
    e = diagnose(facts(labels=served, from_pvcs=["fuse"], fuse_claims=["fuse"], fuse_propagated=True))
    assert e.is_injected
    assert e.reasons == []
    assert e.notes == []
    assert "Injected:   yes, the FUSE path: mount propagation on fuse" in describe(e)
    assert e.to_json()["fuseInjected"] is True
    late = diagnose(facts(labels=served, fuse_claims=["fuse"]))
    assert late.reasons[0].startswith(
        f"it has the label {names.LABEL_FUSE_SERVERFUL_INJECT}=true but its mounts of fuse have no mount "
        "propagation"
    )


def test_a_clientless_datasets_pvc_is_to_be_removed_whatever_else() -> None:
    reason = (
        "it mounts the PVC ds1 of a clientless dataset, which the CSI driver refuses to mount (the runtime "
        "has no FUSE client), so the pod cannot start; remove the PVC from its template (deploy/web) and "
        "take the runtime config instead: run kubectl fluid inject deploy/web --dataset ds1 -n team-a"
    )
    assert diagnose(facts(from_pvcs=["ds1"], clientless_claims=["ds1"])).reasons == [reason]
    injected = diagnose(facts(labels=ASKED, from_pvcs=["ds1"], injected=["ds1"], clientless_claims=["ds1"]))
    assert injected.reasons == []
    assert injected.notes == [reason]


def test_kubelets_failed_mount_is_shown_as_read() -> None:
    e = diagnose(facts(clientless_claims=["ds1"], mount_failure="FailedMount (x4): refused"))
    assert "Mounting:   FailedMount (x4): refused" in describe(e).splitlines()
    assert e.to_json()["mountFailure"] == "FailedMount (x4): refused"


def _pv(driver: str = names.CSI_DRIVER, **attributes: str) -> dict[str, Any]:
    return {"spec": {"csi": {"driver": driver, "volumeAttributes": attributes}}}


def test_claim_paths() -> None:
    pvc: dict[str, Any] = {"metadata": {"name": "x"}}
    assert claim_path(pvc, _pv(**{names.VOLUME_ATTR_CLIENTLESS: "true"}), None) == CLIENTLESS
    assert claim_path(pvc, _pv(**{names.VOLUME_ATTR_CLIENTLESS: " True "}), None) == CLIENTLESS
    assert claim_path(pvc, _pv(), None) == FUSE
    assert claim_path(pvc, _pv("ebs.csi.aws.com"), None) is None
    assert claim_path(pvc, None, {"provisioner": names.CSI_DRIVER}) == FUSE
    # A bound PV says more than the class the claim named.
    assert claim_path(pvc, _pv("ebs.csi.aws.com"), {"provisioner": names.CSI_DRIVER}) is None
    assert claim_path(pvc, None, None) is None


def test_a_dataset_pvc_whose_pv_is_unread_goes_by_the_datasets_mode() -> None:
    """A namespace's user seldom may read PVs (cluster-scoped): the dataset's mode decides."""
    dataset_pvc: dict[str, Any] = {"metadata": {"name": "ds1", "labels": {names.LABEL_DATASET_ID: "x"}}}
    assert claim_path(dataset_pvc, None, None, dataset_clientless=True) == CLIENTLESS
    assert claim_path(dataset_pvc, None, None, dataset_clientless=False) == FUSE
    assert claim_path(dataset_pvc, None, None) is None
    # The PV, when read, says more; a PVC that is not a dataset's is not judged by a dataset's mode.
    assert claim_path(dataset_pvc, _pv(), None, dataset_clientless=True) == FUSE
    assert claim_path({"metadata": {"name": "x"}}, None, None, dataset_clientless=True) is None


def _pod(*mounts: dict[str, Any]) -> dict[str, Any]:
    return {
        "spec": {
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "fuse"}},
                {"name": "other", "emptyDir": {}},
            ],
            "containers": [{"name": "c", "volumeMounts": list(mounts)}],
        }
    }


def test_propagated_needs_every_mount_of_the_claims() -> None:
    down = {"name": "data", "mountPath": "/d", "mountPropagation": "HostToContainer"}
    plain = {"name": "data", "mountPath": "/e"}
    assert propagated(_pod(down, {"name": "other", "mountPath": "/o"}), ["fuse"])
    assert not propagated(_pod(down, plain), ["fuse"])
    assert not propagated(_pod(), ["fuse"])


def _event(reason: str, when: str, message: str, uid: str = "u1", **extra: Any) -> dict[str, Any]:
    return {
        "reason": reason,
        "lastTimestamp": when,
        "message": message,
        "involvedObject": {"uid": uid},
        **extra,
    }


@given(st.randoms(use_true_random=False))
def test_the_newest_failed_mount_whatever_the_order(rnd: random.Random) -> None:
    events = [
        _event("FailedMount", "2026-01-01T00:00:00Z", "old"),
        # Written with microseconds (eventTime): later than the whole second before it.
        {**_event("FailedAttachVolume", "", "attach"), "eventTime": "2026-01-01T00:05:00.500000Z"},
        _event("FailedMount", "2026-01-01T00:05:00Z", "second"),
        _event("FailedMount", "2026-01-01T00:09:00Z", "another pod's", uid="u2"),
        _event("Scheduled", "2026-01-01T00:10:00Z", "not a mount"),
    ]
    rnd.shuffle(events)
    found = newest(events, MOUNT_REASONS, "u1")
    assert found is not None
    assert found["message"] == "attach"
    assert newest(events, ["Pulled"], "u1") is None


def test_an_event_line_as_describe_reads() -> None:
    line = event_line(_event("FailedMount", "", "MountVolume failed:\n  refused", count=3))
    assert line == "FailedMount (x3): MountVolume failed: refused"
    assert event_line(_event("FailedCreate", "", "no")) == "FailedCreate: no"


def _workload(**overrides: Any) -> WorkloadFacts:
    base: dict[str, Any] = {
        "namespace": "team-a",
        "workload": "deploy/web",
        "creator": "rs/web-5d9c7",
        "replicas": 1,
        "pods": [],
        "total": 0,
    }
    return WorkloadFacts(**{**base, **overrides})


def test_a_workload_the_webhook_refuses_is_explained_by_its_failed_create() -> None:
    denial = (
        'FailedCreate (x5): Error creating: admission webhook "clientless.fluid.io" denied the request: '
        'dataset "ds9" not found in namespace "team-a"'
    )
    e = explain_workload(_workload(failed_create=denial))
    assert e.reasons == [
        f"rs/web-5d9c7 cannot create its pods: {denial} (the webhook refused them: do what it says, and "
        "the controller creates them on its next try)"
    ]
    assert describe_workload(e).splitlines() == [
        "Workload:   team-a/deploy/web",
        "Creator:    rs/web-5d9c7",
        "Pods:       <none>",
        "Why not:",
        f"  - {e.reasons[0]}",
    ]
    quota = explain_workload(_workload(creator=None, failed_create="FailedCreate: exceeded quota: full"))
    assert quota.reasons == ["deploy/web cannot create its pods: FailedCreate: exceeded quota: full"]
    assert explain_workload(_workload(replicas=0)).reasons == [
        "it is scaled to 0 replicas, so there is no pod to explain"
    ]
    assert "no FailedCreate Event says why" in explain_workload(_workload()).reasons[0]
    waiting = explain_workload(_workload(creator=None, waiting="it has run no Job yet"))
    assert waiting.reasons == ["it has run no Job yet"]


def test_a_workload_with_pods_is_explained_through_the_newest() -> None:
    pods: list[Explanation] = [diagnose(facts(name=n, labels=ASKED, injected=["ds1"])) for n in ("b", "a")]
    e = explain_workload(_workload(pods=pods, total=5))
    assert e.reasons == []
    text = describe_workload(e)
    assert text.splitlines()[:3] == [
        "Workload:   team-a/deploy/web",
        "Creator:    rs/web-5d9c7",
        "Pods:       5 (the newest 2, below)",
    ]
    assert [line for line in text.splitlines() if line.startswith("Pod:")] == [
        "Pod:        team-a/b",
        "Pod:        team-a/a",
    ]
    assert e.to_json()["podCount"] == 5
    assert [p["name"] for p in e.to_json()["pods"]] == ["b", "a"]
