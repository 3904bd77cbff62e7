"""The pure halves of ``mounts``, ``datasets`` and the pod readers: rows from API objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.api import names
from kubectl_fluid.api.datasetrefs import configmap_problem, deepest_problem, not_ready_cause
from kubectl_fluid.cli import datasets as ds_view
from kubectl_fluid.cli import mounts as mount_view
from kubectl_fluid.cli.checks import selector_matches
from kubectl_fluid.cli.configview import env_entries, pretty_json
from kubectl_fluid.cli.podview import claim_names, injected_datasets, is_dataset_pvc, requested_datasets

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
KEY = "0123456789abcdef" * 2


def fuse_mount(node: str, key: str = KEY, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": names.fuse_mount_name(node, key), "creationTimestamp": "2024-05-01T11:59:00Z"},
        "spec": {
            "nodeName": node,
            "mountKey": key,
            "masterAddrs": "m:8995",
            "fsPath": "/data",
            "mode": "embedded",
        },
        "status": status,
    }


def test_mount_row() -> None:
    fm = fuse_mount("n1", phase="Ready", refCount=2)
    assert mount_view.row(fm, NOW) == [
        "n1",
        "0123456789abcdef",
        "m:8995",
        "/data",
        "embedded",
        "2",
        "Ready",
        "60s",
    ]


def test_mount_row_wide_names_the_pods_behind_the_targets() -> None:
    fm = fuse_mount(
        "n1",
        phase="Ready",
        refCount=2,
        volumes=[
            {
                "volumeID": "v1",
                "stagingPath": "/s1",
                "targets": [{"path": "/t1", "podUID": "u1"}, {"path": "/t2", "podUID": "u2"}],
            },
            {"volumeID": "v2", "stagingPath": "/s2"},
        ],
    )
    assert mount_view.row(fm, NOW, wide=True, pods={"u1": "a/p1"})[-4:] == ["v1,v2", "2", "a/p1,u2", "<none>"]


def test_wide_says_why_a_mount_is_broken() -> None:
    why = "the FUSE's fs-path /k8s is gone from the cache at m:8995 (its mount answers ENOENT): ..."
    fm = fuse_mount("n1", phase="Broken", refCount=1, reason=why)
    row = mount_view.row(fm, NOW, wide=True)
    assert (row[6], row[-1]) == ("Broken", why)
    assert len(row) == len(mount_view.WIDE_HEADERS)


def test_wide_shows_the_fuse_program_and_marks_the_standin() -> None:
    """Issue 28, item 3: which program serves a mount, and the stand-in said as such."""
    fm = fuse_mount("n1", phase="Ready")
    at = mount_view.WIDE_HEADERS.index("PROGRAM")
    assert mount_view.row(fm, NOW, wide=True)[at] == "<none>"  # a node service older than the field
    fm["spec"]["program"] = "/opt/curvine/curvine-fuse"
    assert mount_view.row(fm, NOW, wide=True)[at] == "curvine-fuse"
    assert mount_view.standin_nodes([fm]) == []
    standin = fuse_mount("n2", phase="Ready")
    standin["spec"]["program"] = "curvine-fuse-standin"
    python = fuse_mount("n3", phase="Ready")
    python["spec"]["program"] = "/usr/bin/python3 -m csi.standin.fusestandin"
    assert mount_view.row(standin, NOW, wide=True)[at] == "curvine-fuse-standin(stand-in)"
    assert mount_view.row(python, NOW, wide=True)[at] == "csi.standin.fusestandin(stand-in)"
    assert mount_view.standin_nodes([fm, standin, python]) == ["n2", "n3"]


def test_mounts_of_a_lost_node_are_unknown_with_the_controllers_words_and_counted_per_node() -> None:
    why = "node n2 is NotReady since 2025-06-01T10:00:00Z (Ready=Unknown: ...): nothing reports this mount"
    lost = [fuse_mount("n2", phase="Unknown", refCount=1, reason=why) for _ in range(2)]
    row = mount_view.row(lost[0], NOW, wide=True)
    assert (row[6], row[-1]) == ("Unknown", why)
    others = [fuse_mount("n1", phase="Ready"), fuse_mount("n3", phase="Unknown")]
    assert mount_view.unknown_nodes([*lost, *others]) == {"n2": 2, "n3": 1}
    assert mount_view.unknown_nodes(others[:1]) == {}


def test_a_fresh_mount_without_status_shows_zero_refs_and_none() -> None:
    row = mount_view.row({"spec": {"nodeName": "n", "mountKey": KEY}}, NOW, wide=True)
    assert row[5:7] == ["0", "<none>"]
    assert row[-5:] == ["<none>", "<none>", "0", "<none>", "<none>"]


def test_select_filters_by_exact_node_and_sorts() -> None:
    items = [fuse_mount("n2"), fuse_mount("n1", "f" * 32), fuse_mount("n1", "a" * 32)]
    assert [(m["spec"]["nodeName"], m["spec"]["mountKey"][0]) for m in mount_view.select(items, None)] == [
        ("n1", "a"),
        ("n1", "f"),
        ("n2", "0"),
    ]
    assert [m["spec"]["nodeName"] for m in mount_view.select(items, "n2")] == ["n2"]


def dataset(name: str, ns: str = "a", phase: str | None = "Bound") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2024-05-01T08:00:00Z"},
        "spec": {"mounts": [{"name": "d", "mountPoint": "s3://b/x"}]},
        "status": {"phase": phase} if phase else {},
    }


def runtime(name: str, ns: str = "a", disabled: bool | None = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeClassName": "mooncake"}
    if disabled is not None:
        spec["client"] = {"disabled": disabled}
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def configmap(
    name: str, ns: str = "a", client: dict[str, Any] | None = None, sh: bool = True
) -> dict[str, Any]:
    data = {
        names.RUNTIME_JSON_KEY: '{"client":'
        + ("null" if client is None else str(client).replace("'", '"').replace("True", "true"))
        + "}"
    }
    if sh:
        data[names.RUNTIME_SH_KEY] = "#!/bin/sh\n"
    return {"metadata": {"name": names.runtime_config_configmap(name), "namespace": ns}, "data": data}


def pod(name: str, datasets: list[str], ns: str = "a") -> dict[str, Any]:
    volumes = [
        {"name": names.runtime_config_volume(d), "configMap": {"name": names.runtime_config_configmap(d)}}
        for d in datasets
    ]
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"volumes": volumes}}


def test_mode_prefers_the_rendered_config() -> None:
    assert (
        ds_view.mode_of(runtime("x", disabled=True), configmap("x", client={"enabled": True})) == ds_view.FUSE
    )
    assert ds_view.mode_of(None, configmap("x")) == ds_view.CLIENTLESS
    assert ds_view.mode_of(runtime("x", disabled=True), None) == ds_view.CLIENTLESS
    # Not disabled: whether the class defines a client decides, and only the rendered config knows.
    assert ds_view.mode_of(runtime("x", disabled=False), None) is None
    assert ds_view.mode_of(runtime("x", disabled=None), None) is None


def test_summaries_join_the_four_lists_by_namespace_and_name() -> None:
    summaries = ds_view.summarize(
        [dataset("ds1"), dataset("ds2", phase=None), dataset("ds1", ns="b")],
        [runtime("ds1"), runtime("ds1", ns="b", disabled=False)],
        [configmap("ds1"), configmap("ds1", ns="b", sh=False)],
        ds_view.injected_by_dataset(
            iter([pod("p1", ["ds1"]), pod("p2", ["ds1", "ds2"]), pod("p3", ["ds1"], ns="b")])
        ),
    )
    rows = [ds_view.row(s, NOW, all_namespaces=True, wide=False) for s in summaries]
    assert rows == [
        ["a", "ds1", "mooncake", "Clientless", "Bound", "True", "2", "4h"],
        ["a", "ds2", "<none>", "<unknown>", "<none>", "False", "1", "4h"],
        ["b", "ds1", "mooncake", "Clientless", "Bound", "False", "1", "4h"],
    ]
    assert summaries[2].config_problem == (
        'runtime config for dataset "ds1" is not ready: '
        "ConfigMap fluid-runtime-config-ds1 has no key runtime.sh"
    )
    assert summaries[0].to_json()["injectedPods"] == ["p1", "p2"]


NO_CLASS = 'CacheRuntimeClass "does-not-exist" not found: set spec.runtimeClassName to an existing class'


def not_bound(name: str, reason: str = "RuntimeClassNotFound", message: str = NO_CLASS) -> dict[str, Any]:
    ds = dataset(name, phase="NotBound")
    ds["status"]["conditions"] = [
        {"type": names.CONDITION_READY, "status": "False", "reason": reason, "message": message}
    ]
    return ds


def test_a_not_bound_dataset_shows_the_controllers_cause_and_is_not_config_ready() -> None:
    """Issue 28: datasets -o wide said "ConfigMap ... not found" where the Dataset's condition said
    the class is missing, and CONFIG-READY was True for a NotBound Dataset whose old ConfigMap stayed."""
    missing, stale = not_bound("noclass"), not_bound("stale")
    summaries = ds_view.summarize([missing, stale], [], [configmap("stale")], {})
    cause = f'runtime config for dataset "noclass" is not ready: {NO_CLASS}'
    assert [(s.name, s.config_ready, s.config_problem) for s in summaries] == [
        ("noclass", False, cause),
        ("stale", False, cause.replace("noclass", "stale")),
    ]
    # A Bound Dataset whose deletion waits for its users (Ready False) keeps a ready config.
    in_use = not_bound("in-use", "DatasetInUse", "deletion waits for pod(s) p")
    in_use["status"]["phase"] = "Bound"
    [summary] = ds_view.summarize([in_use], [], [configmap("in-use")], {})
    assert (summary.config_ready, summary.config_problem) == (True, None)


def test_a_dataset_whose_deletion_waits_is_terminating() -> None:
    """Issue 28: datasets showed Bound for a Dataset whose deletion waited for its users."""
    waiting = dataset("ds1")
    waiting["metadata"]["deletionTimestamp"] = "2024-05-01T11:00:00Z"
    [summary] = ds_view.summarize([waiting], [], [configmap("ds1")], {})
    assert ds_view.row(summary, NOW, all_namespaces=False, wide=False)[3] == "Terminating"
    assert summary.to_json()["phase"] == "Terminating"


def test_not_ready_cause() -> None:
    assert not_ready_cause(not_bound("x")) == NO_CLASS
    assert not_ready_cause(not_bound("x", message="")) == "RuntimeClassNotFound"  # the reason, then
    bare = dataset("x", phase="NotBound")
    assert not_ready_cause(bare) == "the Dataset is NotBound (kubectl describe dataset says why)"
    assert not_ready_cause(dataset("x")) is None
    assert not_ready_cause(None) is None
    assert deepest_problem("x", "ConfigMap gone", None) == "ConfigMap gone"
    assert deepest_problem("x", None, "why") == 'runtime config for dataset "x" is not ready: why'


def test_unreadable_lists_show_unknown() -> None:
    [summary] = ds_view.summarize([dataset("ds1")], None, None, None)
    assert ds_view.row(summary, NOW, all_namespaces=False, wide=True) == [
        "ds1", "<none>", "<unknown>", "Bound", "<unknown>", "<unknown>", "4h", "s3://b/x", "<none>",
    ]  # fmt: skip
    assert ds_view.headers(False, True)[-2:] == ["MOUNTPOINTS", "CONFIG-PROBLEM"]
    assert ds_view.headers(True, False)[0] == "NAMESPACE"


def test_pod_readers() -> None:
    p = pod("p", ["ds1"])
    p["spec"]["volumes"] += [
        {
            "name": "other",
            "configMap": {"name": "fluid-runtime-config-lookalike"},
        },  # not the injector's volume
        {"name": "data", "persistentVolumeClaim": {"claimName": "ds2"}},
    ]
    assert injected_datasets(p) == ["ds1"]
    assert claim_names(p) == ["ds2"]
    assert requested_datasets({names.ANNOTATION_DATASET: " b,a,, a", names.ANNOTATION_DATASETS: "c"}) == [
        "a",
        "b",
        "c",
    ]
    assert is_dataset_pvc({"metadata": {"labels": {names.LABEL_DATASET_ID: "a-ds2"}}})
    assert is_dataset_pvc({"metadata": {"labels": {names.dataset_pvc_label("a", "ds2"): "true"}}})
    assert not is_dataset_pvc({"metadata": {"labels": {"app": "x"}}})


@given(
    st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), max_size=5),
    st.sampled_from([",", ", ", " ,"]),
)
def test_requested_datasets_normalises_like_the_webhook(datasets: list[str], sep: str) -> None:
    assert requested_datasets({names.ANNOTATION_DATASET: sep.join(datasets)}) == sorted(set(datasets))


def test_configmap_problem_uses_the_webhooks_words() -> None:
    assert (
        configmap_problem("ds1", None)
        == 'runtime config for dataset "ds1" is not ready: ConfigMap fluid-runtime-config-ds1 not found'
    )
    assert configmap_problem("ds1", {"binaryData": {names.RUNTIME_SH_KEY: "eA=="}}) is None


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {}, True),
        ({}, {"a": "b"}, True),
        ({"matchLabels": {"a": "b"}}, {"a": "b"}, True),
        ({"matchLabels": {"a": "b"}}, {"a": "c"}, False),
        (
            {"matchExpressions": [{"key": "n", "operator": "NotIn", "values": ["kube-system"]}]},
            {"n": "team"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "NotIn", "values": ["kube-system"]}]},
            {"n": "kube-system"},
            False,
        ),
        ({"matchExpressions": [{"key": "n", "operator": "In", "values": ["x"]}]}, {}, False),
        ({"matchExpressions": [{"key": "n", "operator": "Exists"}]}, {"n": ""}, True),
        ({"matchExpressions": [{"key": "n", "operator": "DoesNotExist"}]}, {"n": ""}, False),
        ({"matchExpressions": [{"key": "n", "operator": "Bogus"}]}, {"n": ""}, False),
    ],
)
def test_selector_matches(selector: dict[str, Any] | None, labels: dict[str, str], matches: bool) -> None:
    assert selector_matches(selector, labels) is matches


def test_config_env_and_json_helpers() -> None:
    plain = [
        {"name": "FLUID_RUNTIME_CONFIG_PATH_ds-1", "value": "/etc/fluid/config/ds-1/runtime.sh"},
        {"name": "FLUID_RUNTIME_CONFIG_PATH_DS_1", "value": "/etc/fluid/config/ds-1/runtime.sh"},
    ]
    assert env_entries("ds-1", {"data": {"runtime.sh": ""}}) == plain  # a ConfigMap of before
    assert env_entries("ds-1", {"data": {"runtime.sh": "", "runtime-scoped.sh": ""}}) == [
        *plain,
        {"name": "FLUID_SCOPED_CONFIG_PATH_DS_1", "value": "/etc/fluid/config/ds-1/runtime-scoped.sh"},
    ]
    assert pretty_json('{"b":1,"a":"é"}') == '{\n    "b": 1,\n    "a": "é"\n}\n'


def test_a_client_mode_mount_names_its_dataset_and_client_pod() -> None:
    # SPEC §7: the runtime's client pod serves a Dataset's PV; the node service has no masters for it.
    fm = {
        "metadata": {"name": "n1-0123456789abcdef", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"nodeName": "n1", "mountKey": "0123456789abcdef" * 2, "fsPath": "/", "mode": "client",
                 "mntPath": "/runtime-mnt/cache/team/ds/cache-fuse",
                 "dataset": {"namespace": "team", "name": "ds"}},
        "status": {"phase": "Ready", "refCount": 2, "podName": "ds-client-abcde"},
    }  # fmt: skip
    cells = mount_view.row(fm, datetime(2026, 1, 1, 0, 1, tzinfo=UTC), wide=True)
    assert cells[2] == "client:team/ds"  # one word: scripts split the rows
    assert cells[4:6] == ["client", "2"]
    assert cells[8] == "client-pod:ds-client-abcde"
