"""The service proxy (hack/localcluster/serviceproxy.py): its view of the cluster (Store), watch events
applied in order, and no view at all until both Services and EndpointSlices have been listed (an empty
one would take every Service's rules away at start); its tag, the one in the cluster's bridges' names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localcluster import realnodes, serviceproxy, state


def event(kind: str, name: str, version: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "object": {"metadata": {"namespace": "a", "name": name, "resourceVersion": version}, **extra},
    }


def test_events_change_the_view_and_mark_it_changed() -> None:
    store = serviceproxy.Store()
    assert store.snapshot() is None
    store.listed.add("services")
    assert store.snapshot() is None
    store.listed.add("endpointslices")
    version = store._apply(
        iter(
            [
                event("ADDED", "web", "5", spec={"clusterIP": "10.96.0.9"}),
                event("ADDED", "db", "6"),
                event("MODIFIED", "web", "7", spec={"clusterIP": "10.96.0.8"}),
                event("DELETED", "db", "8"),
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
            ]
        ),
        "services",
    )
    assert version == "9"
    assert store.changed.is_set()
    view = store.snapshot()
    assert view is not None
    services, slices = view
    assert [s["spec"]["clusterIP"] for s in services] == ["10.96.0.8"]
    assert slices == []


def test_a_watch_error_ends_the_stream_so_that_the_resource_is_listed_again() -> None:
    store = serviceproxy.Store()
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
    with pytest.raises(RuntimeError, match="too old resource version"):
        store._apply(iter([gone]), "endpointslices")


def test_the_proxys_tag_is_the_one_in_the_clusters_bridge_names(tmp_path: Path) -> None:
    node = realnodes.plan(tmp_path / "state", 3, {"kubelet": 1, "healthz": 2}, "192.0.2.2")
    assert node.bridge == f"kf{state.cluster_tag(tmp_path / 'state')}3"
