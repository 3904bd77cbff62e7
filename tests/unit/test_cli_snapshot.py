"""The snapshot's joins (pure) and its read: one list per kind, unreadable kinds recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubectl_fluid.api import names
from kubectl_fluid.cli import snapshot
from kubectl_fluid.kube.errors import ApiError


def obj(name: str, namespace: str = "ns", **rest: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    meta.update(rest.pop("metadata", {}))
    return {"metadata": meta, **rest}


def pod(
    name: str, *, claim: str | None = None, injected: str | None = None, runtime: str | None = None
) -> dict[str, Any]:
    volumes: list[dict[str, Any]] = []
    if claim:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": claim}})
    if injected:
        cm = names.runtime_config_configmap(injected)
        volumes.append({"name": cm, "configMap": {"name": cm}})
    labels = {names.LABEL_CACHERUNTIME_NAME: runtime} if runtime else {}
    return obj(name, metadata={"labels": labels}, spec={"volumes": volumes})


def test_joins_find_a_datasets_parts_by_name() -> None:
    snap = snapshot.Snapshot(
        "ns",
        lists={
            "datasets": [obj("ds"), obj("other")],
            "cacheruntimes": [obj("ds", spec={"runtimeClassName": "curvine"})],
            "cacheruntimeclasses": [obj("curvine", namespace="")],
            "configmaps": [obj(names.runtime_config_configmap("ds"))],
            "persistentvolumes": [obj(names.dataset_pv("ns", "ds"), namespace="")],
            "persistentvolumeclaims": [obj("ds")],
            "pods": [
                pod("app-pvc", claim="ds"),
                pod("app-injected", injected="ds"),
                pod("app-other", claim="other"),
                pod("ds-master-0", runtime="ds"),
            ],
            "fusemounts": [
                obj(
                    "m2", namespace="", spec={"nodeName": "n2", "dataset": {"namespace": "ns", "name": "ds"}}
                ),
                obj(
                    "m1", namespace="", spec={"nodeName": "n1", "dataset": {"namespace": "ns", "name": "ds"}}
                ),
                obj("sc", namespace="", spec={"nodeName": "n1"}),
            ],
            "dataloads": [
                obj("load", spec={"dataset": {"name": "ds"}}),
                obj("x", spec={"dataset": {"name": "other"}}),
            ],
            "events": [
                obj("e2", involvedObject={"uid": "uid-ns-ds"}, lastTimestamp="2026-01-02T00:00:00Z"),
                obj("e1", involvedObject={"uid": "uid-ns-ds"}, lastTimestamp="2026-01-01T00:00:00Z"),
                obj("e3", involvedObject={"uid": "uid-ns-other"}),
            ],
        },
    )
    runtime = snap.runtime("ns", "ds")
    assert runtime is not None
    assert snapshot.name_of(snap.runtime_class(runtime) or {}) == "curvine"
    assert snap.configmap("ns", "ds") is not None
    assert snap.pv("ns", "ds") is not None
    assert snap.pvc("ns", "ds") is not None
    assert snap.pvc("ns", "missing") is None
    assert [snapshot.name_of(p) for p in snap.app_pods("ns", "ds")] == ["app-pvc", "app-injected"]
    assert [snapshot.name_of(p) for p in snap.component_pods("ns", "ds")] == ["ds-master-0"]
    assert [snapshot.name_of(m) for m in snap.fusemounts("ns", "ds")] == ["m1", "m2"]
    assert [snapshot.name_of(d) for d in snap.dataloads("ns", "ds")] == ["load"]
    assert [snapshot.name_of(e) for e in snap.events_for([snap.dataset("ns", "ds") or {}])] == ["e1", "e2"]


class Pages:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def pages(self, path: str) -> Iterator[list[dict[str, Any]]]:
        self.asked.append(path)
        answer = self.answers.get(path, [])
        if isinstance(answer, ApiError):
            raise answer
        yield answer


def test_read_lists_each_kind_once_and_records_what_it_cannot_read() -> None:
    csinodes = snapshot.KINDS["csinodes"].collection_path()
    fake = Pages({csinodes: ApiError(403, "Forbidden", "no", method="GET", path=csinodes)})
    seen: list[str] = []
    snap = snapshot.read(fake, "ns", progress=lambda kind, n: seen.append(kind))  # type: ignore[arg-type]
    assert len(fake.asked) == len(snapshot.ALL_KINDS) == len(set(fake.asked))
    assert "/apis/data.fluid.io/v1alpha1/namespaces/ns/datasets" in fake.asked
    assert snap.unreadable == {"csinodes": "403 Forbidden"}
    assert not snap.readable("csinodes")
    assert snap.items("csinodes") == []
    assert "csinodes" not in seen
    assert "datasets" in seen


def test_datasets_unreadable_is_an_error() -> None:
    path = snapshot.KINDS["datasets"].collection_path("ns")
    with pytest.raises(ApiError):
        snapshot.read(Pages({path: ApiError(403, "Forbidden", "no", method="GET", path=path)}), "ns")  # type: ignore[arg-type]


def test_a_pods_claims_and_a_nodes_mounts_and_drivers() -> None:
    snap = snapshot.Snapshot(
        "ns",
        lists={
            "persistentvolumeclaims": [obj("ds", spec={"volumeName": "pv-ds"}), obj("unbound", spec={})],
            "persistentvolumes": [obj("pv-ds", namespace="")],
            "fusemounts": [
                obj("m1", namespace="", spec={"nodeName": "n1"}),
                obj("m2", namespace="", spec={"nodeName": "n2"}),
            ],
            "csinodes": [obj("n1", namespace="", spec={"drivers": [{"name": names.CSI_DRIVER}]})],
        },
    )
    p = pod("app", claim="ds")
    p["spec"]["volumes"].append({"name": "x", "persistentVolumeClaim": {"claimName": "unbound"}})
    p["spec"]["volumes"].append({"name": "y", "persistentVolumeClaim": {"claimName": "missing"}})
    found = [
        (c, snapshot.name_of(pvc or {}), snapshot.name_of(pv or {})) for c, pvc, pv in snap.pod_claims(p)
    ]
    assert found == [("ds", "ds", "pv-ds"), ("missing", "", ""), ("unbound", "unbound", "")]
    assert [snapshot.name_of(m) for m in snap.fusemounts_on("n1")] == ["m1"]
    assert snap.csi_drivers("n1") == {names.CSI_DRIVER}
    assert snap.csi_drivers("n2") == set()  # no CSINode: nothing registered
    del snap.lists["csinodes"]
    assert snap.csi_drivers("n1") is None  # unreadable: unknown
