"""``kubectl fluid inspect dataset DS``: the model and tree over hand-made snapshots (pure), and the
verb over an in-memory API (one list per kind, the errors and warnings)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_fluid.api import names
from kubectl_fluid.cli import completers, inspectview
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.inspect import KINDS, parse_target
from kubectl_fluid.cli.snapshot import Snapshot
from kubectl_fluid.kube import resources
from tests.unit.inspect_samples import DS, NS, dataset, full, obj, pod, runtime, runtime_json
from tests.unit.test_cli_commands import FakeApi, api, run

__all__ = ["api"]  # the fixture, used by name
NOW = datetime(2026, 12, 5, 8, 10, tzinfo=UTC)


def lines(snap: Snapshot, wide: bool = False) -> list[str]:
    found = inspectview.inspect(snap, NS, DS)
    assert found is not None
    return inspectview.render_tree(inspectview.tree(found, NOW, wide)).splitlines()


def state_of(text: list[str], label: str) -> str:
    """The state column of the first line whose label is ``label`` (after the tree's drawing)."""
    for line in text:
        drawn = re.sub(r"^[│├└─ ]*", "", line)
        if drawn.startswith(label + "  ") or drawn == label:
            return drawn[len(label) :].strip()
    raise AssertionError(f"no line {label!r} in\n" + "\n".join(text))


def test_the_tree_shows_each_part_with_its_state() -> None:
    text = lines(full())
    assert text[0].split() == ["Dataset", f"{NS}/{DS}", "Bound", "age", "10m"]
    assert state_of(text, "Condition Ready") == "True DatasetReady"
    assert state_of(text, "Condition UpdateReady") == "False MountUFSFailed: no bucket"
    assert state_of(text, f"CacheRuntime {DS}") == "Ready=True RuntimeReady"
    assert state_of(text, "CacheRuntimeClass curvine") == "fileSystemType curvine"
    assert state_of(text, "master: StatefulSet ds1-master") == "1/1 ready, phase Ready"
    assert state_of(text, "worker: StatefulSet ds1-worker") == "1/2 ready, phase PartialReady"
    assert state_of(text, "client: DaemonSet ds1-client") == "2/2 ready"
    assert state_of(text, "Pod ds1-worker-1") == "Pending, not ready"
    assert state_of(text, "Not scheduled") == "1 pod"
    assert state_of(text, "ConfigMap fluid-runtime-config-ds1") == "3 keys, changed 5m ago"
    assert state_of(text, "runtime.sh") == "2.0 KiB"
    assert state_of(text, "blob") == "3 B"  # binaryData: its decoded size
    assert state_of(text, f"PersistentVolumeClaim {DS}") == f"Bound (volume {NS}-{DS})"
    assert state_of(text, f"PersistentVolume {NS}-{DS}") == f"Bound (claim {NS}/{DS})"
    assert state_of(text, "FuseMounts") == "2"
    assert state_of(text, "Node node-1: node-1-abc") == "Ready, client, refs 1, targets 1, pod ds1-client-a"
    assert (
        state_of(text, "Node node-2: node-2-abc")
        == "Broken, client, refs 1, targets 0: the client pod is gone"
    )
    assert state_of(text, "DataLoad ds1-load-a") == "Complete, took 12s"
    assert state_of(text, "App pods") == "3 (1 injected, 1 injected+pvc, 1 pvc)"
    assert state_of(text, "Pod app-injected") == "CrashLoopBackOff, not ready (injected)"
    assert "app-other" not in "\n".join(text)  # another dataset's
    # A tree as kubectl tree draws it: the states in one column.
    column = text[0].index("Bound")
    assert all(line[column - 1] == " " and line[column] != " " for line in text)


def test_wide_adds_messages_targets_and_mounts() -> None:
    text = lines(full(), wide=True)
    assert state_of(text, "Condition Ready") == "True DatasetReady: bound"
    assert state_of(text, "Mounts") == "s3://bucket/data"
    assert any(line.endswith("/t/1") for line in text)
    assert state_of(text, "ConfigMap fluid-runtime-config-ds1").endswith("resourceVersion 42")


def test_json_is_a_dataset_inspection() -> None:
    found = inspectview.inspect(full(), NS, DS)
    assert found is not None
    doc = json.loads(json.dumps(found.to_json()))
    assert (doc["apiVersion"], doc["kind"]) == (names.CLI_API_VERSION, names.KIND_DATASET_INSPECTION)
    assert doc["metadata"] == {"name": DS, "namespace": NS, "creationTimestamp": "2026-12-05T08:00:00Z"}
    assert doc["dataset"]["phase"] == "Bound"
    assert [c["type"] for c in doc["dataset"]["conditions"]] == ["Ready", "UpdateReady"]
    assert doc["runtime"]["runtimeClass"] == "curvine"
    assert doc["runtime"]["ready"]["status"] == "True"
    assert [(c["component"], c["desired"], c["ready"], c["found"]) for c in doc["components"]] == [
        ("master", 1, 1, True),
        ("worker", 2, 1, True),
        ("client", 2, 2, True),
    ]
    assert [p["node"] for p in doc["components"][1]["pods"]] == ["node-1", None]
    assert doc["configMap"]["keys"] == [
        {"name": "blob", "size": 3},
        {"name": names.RUNTIME_JSON_KEY, "size": len(runtime_json())},
        {"name": names.RUNTIME_SH_KEY, "size": 2000},
    ]
    assert (doc["configMap"]["lastChange"], doc["configMap"]["resourceVersion"]) == (
        "2026-12-05T08:05:00Z",
        "42",
    )
    assert doc["persistentVolumeClaim"] == {
        "name": DS,
        "found": True,
        "phase": "Bound",
        "volumeName": f"{NS}-{DS}",
    }
    assert doc["persistentVolume"]["claim"] == f"{NS}/{DS}"
    assert [(m["node"], m["refCount"], m["targets"]) for m in doc["fuseMounts"]] == [
        ("node-1", 1, ["/t/1"]),
        ("node-2", 1, []),
    ]
    assert [(d["name"], d["phase"]) for d in doc["dataLoads"]] == [
        ("ds1-load-a", "Complete"),
        ("ds1-load-b", "Executing"),
    ]
    assert [(p["name"], p["node"], p["via"]) for p in doc["appPods"]] == [
        ("app-both", "node-2", ["injected", "pvc"]),
        ("app-injected", "node-2", ["injected"]),
        ("app-pvc", "node-1", ["pvc"]),
    ]
    assert doc["unreadable"] == {}


def test_missing_parts_are_shown_missing() -> None:
    snap = Snapshot(NS, lists={kind: [] for kind in KINDS})
    snap.lists["datasets"] = [dataset(phase="NotBound")]
    text = lines(snap)
    assert state_of(text, f"CacheRuntime {DS}") == "not found"
    assert state_of(text, "ConfigMap fluid-runtime-config-ds1") == "not found"
    assert state_of(text, f"PersistentVolumeClaim {DS}") == "not found"
    assert state_of(text, f"PersistentVolume {NS}-{DS}") == "not found"
    assert state_of(text, "master: StatefulSet ds1-master") == "not found"
    assert state_of(text, "FuseMounts") == "0"
    assert state_of(text, "App pods") == "0"
    # A runtime whose class is gone.
    snap.lists["cacheruntimes"] = [runtime()]
    snap = Snapshot(NS, lists=dict(snap.lists))
    assert state_of(lines(snap), "CacheRuntimeClass curvine") == "not found"
    found = inspectview.inspect(snap, NS, DS)
    assert found is not None
    assert found.runtime.class_found is False


def test_a_clientless_runtimes_client_is_disabled_not_missing() -> None:
    snap = full()
    snap.lists["daemonsets"] = []
    snap.lists["cacheruntimes"] = [runtime(client_disabled=True)]
    snap.lists["configmaps"][0]["data"][names.RUNTIME_JSON_KEY] = runtime_json(client=False)
    text = lines(Snapshot(NS, lists=snap.lists))
    assert state_of(text, "client") == "disabled (the runtime runs none)"
    # Without a rendered config, the runtime's own disabled says it.
    snap.lists["configmaps"] = []
    assert state_of(lines(Snapshot(NS, lists=snap.lists)), "client") == "disabled (the runtime runs none)"


def test_what_cannot_be_read_is_unknown() -> None:
    snap = full()
    for kind in ("pods", "fusemounts", "persistentvolumes"):
        del snap.lists[kind]
        snap.unreadable[kind] = "403 Forbidden"
    snap = Snapshot(NS, lists=snap.lists, unreadable=snap.unreadable)
    text = lines(snap)
    assert state_of(text, "App pods") == "<unknown>"
    assert state_of(text, "FuseMounts") == "<unknown>"
    assert state_of(text, f"PersistentVolume {NS}-{DS}") == "<unknown>"
    assert state_of(text, "Pods") == "<unknown>"  # under each component
    found = inspectview.inspect(snap, NS, DS)
    assert found is not None
    doc = found.to_json()
    assert (doc["appPods"], doc["fuseMounts"], doc["persistentVolume"]["found"]) == (None, None, None)
    assert doc["unreadable"] == {
        "fusemounts": "403 Forbidden",
        "persistentvolumes": "403 Forbidden",
        "pods": "403 Forbidden",
    }


def test_a_missing_dataset_is_none() -> None:
    assert inspectview.inspect(full(), NS, "nope") is None
    assert inspectview.inspect(full(), "elsewhere", DS) is None


def many(n: int, nodes: int) -> list[dict[str, Any]]:
    return [
        pod(
            f"app-{i:04d}",
            f"node-{i % nodes}",
            claim=DS if i % 3 == 0 else None,
            injected=DS if i % 3 else None,
        )
        for i in range(n)
    ]


def test_a_thousand_app_pods_read_as_one_line_per_node() -> None:
    text = lines(full(many(1000, 4)))
    start = next(i for i, line in enumerate(text) if "App pods" in line)
    assert state_of(text, "App pods") == "1000 (666 injected, 334 pvc)"
    assert len(text) - start == 5
    assert state_of(text, "Node node-0") == "250 pods: 250 Running; 166 injected, 84 pvc"
    assert len([line for line in lines(full(many(1000, 4)), wide=True) if "Pod app-" in line]) == 1000


pod_specs = st.lists(
    st.tuples(
        st.sampled_from(["node-a", "node-b", "node-c", None]),
        st.sampled_from(["Running", "Pending", "Failed"]),
        st.sampled_from([(True, False), (False, True), (True, True)]),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(pod_specs)
def test_the_tree_never_loses_an_app_pod(specs: list[tuple[str | None, str, tuple[bool, bool]]]) -> None:
    """Listed or summed per node, every app pod is counted once; wide names each."""
    pods = [
        pod(f"app-{i}", node, phase=phase, claim=DS if via[0] else None, injected=DS if via[1] else None)
        for i, (node, phase, via) in enumerate(specs)
    ]
    text = lines(full(pods))
    start = next(i for i, line in enumerate(text) if "App pods" in line)
    below = text[start + 1 :]
    assert state_of(text, "App pods").split()[0] == str(len(pods))
    per_node = [
        int(state_of([line], re.sub(r"^[│├└─ ]*", "", line).split("   ")[0]).split()[0])
        for line in below
        if re.search(r"(Node \S+|Not scheduled)\s", line)
    ]
    assert sum(per_node) == len(pods)
    # Summed states add up too.
    if len(pods) > inspectview.LISTED:
        counted = sum(int(n) for line in below for n in re.findall(r"(\d+) (?:Running|Pending|Failed)", line))
        assert counted == len(pods)
    wide = lines(full(pods), wide=True)
    assert sorted(re.findall(r"Pod (app-\d+)", "\n".join(wide))) == sorted(
        f"app-{i}" for i in range(len(pods))
    )


def test_pod_status_reads_like_kubectls() -> None:
    assert (
        inspectview.pod_status(pod("p", waiting="ContainerCreating", phase="Pending")) == "ContainerCreating"
    )
    assert inspectview.pod_status(pod("p", phase="Succeeded")) == "Succeeded"
    assert (
        inspectview.pod_status(obj("p", metadata={"deletionTimestamp": "x"}, status={"phase": "Running"}))
        == "Terminating"
    )
    assert inspectview.human_size(1536) == "1.5 KiB"
    assert inspectview.human_size(5 * 1024 * 1024) == "5.0 MiB"


def test_parse_target() -> None:
    assert parse_target("dataset", "ds1") == "ds1"
    assert parse_target("dataset/ds1", None) == "ds1"
    assert parse_target("datasets.data.fluid.io/ds1", None) == "ds1"
    for kind, name in (("runtime", "x"), ("dataset", None), ("dataset/a", "b"), ("pod/x", None)):
        with pytest.raises(CliError, match="inspect takes a dataset"):
            parse_target(kind, name)


def ds_objects() -> dict[str, dict[str, Any]]:
    """The sample snapshot as an in-memory API's paths."""
    objects = {}
    for kind, items in full().lists.items():
        resource = resources_by_kind(kind)
        for item in items:
            ns = item["metadata"]["namespace"] or None
            objects[resource.object_path(ns if resource.namespaced else None, item["metadata"]["name"])] = (
                item
            )
    return objects


def resources_by_kind(kind: str) -> resources.Resource:
    from kubectl_fluid.cli.snapshot import KINDS as ALL

    return ALL[kind]


def test_the_verb_lists_each_kind_once(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.objects.update(ds_objects())
    api.calls.clear()
    code, out, err = run(capsys, "inspect", "dataset", DS)
    assert (code, err) == (0, "")
    assert out.startswith(f"Dataset {NS}/{DS}")
    assert [m for m, _ in api.calls] == ["LIST"] * len(KINDS)
    assert len({p for _, p in api.calls}) == len(KINDS)
    code, out, _ = run(capsys, "inspect", f"dataset/{DS}", "-o", "json")
    assert code == 0
    assert json.loads(out)["kind"] == names.KIND_DATASET_INSPECTION
    code, out, _ = run(capsys, "inspect", "dataset", DS, "-o", "yaml")
    assert code == 0
    assert "kind: DatasetInspection" in out


def test_the_verb_says_what_it_could_not_read(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.objects.update(ds_objects())
    api.forbidden = {resources.PERSISTENT_VOLUMES.collection_path()}
    code, out, err = run(capsys, "inspect", "dataset", DS)
    assert code == 0
    assert err == "Warning: cannot list persistentvolumes (403 Forbidden): shown as <unknown>\n"
    assert state_of(out.splitlines(), f"PersistentVolume {NS}-{DS}") == "<unknown>"


def test_a_missing_dataset_is_an_error(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    api.objects[resources.NAMESPACES.object_path(None, NS)] = {"metadata": {"name": NS}}
    code, out, err = run(capsys, "inspect", "dataset", "nope")
    assert (code, out) == (1, "")
    assert err == (
        f'error: dataset "nope" not found in namespace "{NS}"; check the name, or find its namespace with '
        "kubectl fluid datasets -A\n"
    )
    code, _, err = run(capsys, "inspect", "runtime", "x")
    assert (code, err) == (1, 'error: inspect takes a dataset, as dataset DS or dataset/DS, not "runtime"\n')
    code, _, err = run(capsys, "inspect", "dataset", "Bad_Name")
    assert code == 1
    assert err.startswith('error: dataset "Bad_Name":')


def test_completion_offers_dataset_then_its_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(completers, "_names", lambda ctx, path_of, namespaced=True: ["ds1", "ds2"])
    assert [i.value for i in completers.inspected(None, None, "")] == ["dataset"]  # type: ignore[arg-type]
    assert [i.value for i in completers.inspected(None, None, "dataset/d")] == ["dataset/ds1", "dataset/ds2"]  # type: ignore[arg-type]

    class Ctx:
        def __init__(self, kind: str) -> None:
            self.params = {"kind": kind}

    assert [i.value for i in completers.inspected_name(Ctx("dataset"), None, "ds2")] == ["ds2"]  # type: ignore[arg-type]
    assert completers.inspected_name(Ctx("dataset/ds1"), None, "") == []  # type: ignore[arg-type]


def test_a_long_name_does_not_push_every_state_to_the_right() -> None:
    root = inspectview.Node("Dataset ns/ds", "Bound")
    root.add("PersistentVolume " + "x" * 80, "Bound")
    root.add("ConfigMap cm", "2 keys")
    text = inspectview.render_tree(root).splitlines()
    assert text[1].endswith("x" * 80 + "   Bound")
    assert text[2].index("2 keys") == text[0].index("Bound") <= inspectview.STATE_COLUMN_MAX + 3


def test_completion_through_kubectls_protocol(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.test_cli_main import completions

    assert completions(monkeypatch, capsys, "inspect", "") == ["dataset", ":4"]
    monkeypatch.setattr(completers, "_names", lambda ctx, path_of, namespaced=True: ["ds1", "ds2"])
    assert completions(monkeypatch, capsys, "inspect", "dataset", "d") == ["ds1", "ds2", ":4"]
    assert completions(monkeypatch, capsys, "inspect", "-o", "") == ["tree", "wide", "json", "yaml", ":4"]
