"""NodeAffinityWithCache and PreferNodesWithoutCache (webhook/plugins/cache_affinity.py) and the node
affinity edits under them (webhook/nodeaffinity.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.api import names
from tests.unit.webhook_samples import NS, dataset_pvc
from webhook import nodeaffinity
from webhook.errors import Denied, ProfileError
from webhook.lookup import StaticLookup
from webhook.patch import apply_patch
from webhook.pipeline import admit
from webhook.plugins.base import Context
from webhook.plugins.cache_affinity import (
    NodeAffinityWithCache,
    PreferNodesWithoutCache,
    RequireNodeWithFuse,
    TieredLocality,
    parse_locality,
    required_datasets,
)
from webhook.podedit import working_copy
from webhook.profile import DEFAULT_PROFILE, load_profile

PROFILE, _ = load_profile(DEFAULT_PROFILE)


def cache_key(ds: str) -> str:
    return f"fluid.io/s-{NS}-{ds}"


def prefer(ds: str, weight: int = 100) -> dict[str, Any]:
    return {
        "weight": weight,
        "preference": {"matchExpressions": [nodeaffinity.label_in(cache_key(ds), "true")]},
    }


def app_pod(
    *claims: str, labels: dict[str, str] | None = None, spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": "app", "labels": dict(labels or {})},
        "spec": {
            "containers": [{"name": "app"}],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
            ],
            **(spec or {}),
        },
    }


def run(
    plugin: Any, pod: dict[str, Any], datasets: list[str], lookup: StaticLookup | None = None
) -> dict[str, Any]:
    before = copy.deepcopy(pod)
    work = working_copy(pod)
    plugin.mutate(work, Context(NS, datasets, lookup or StaticLookup()))
    assert pod == before, "the original pod is never edited"
    return work


def node_affinity(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["spec"]["affinity"]["nodeAffinity"]  # type: ignore[no-any-return]


def test_a_pod_using_a_datasets_pvc_prefers_its_cache_nodes() -> None:
    out = run(NodeAffinityWithCache(), app_pod("ds1", "ds2"), ["ds1", "ds2"])
    assert node_affinity(out) == {nodeaffinity.PREFERRED: [prefer("ds1"), prefer("ds2")]}


def test_a_pod_labelled_sched_required_requires_them() -> None:
    pod = app_pod("ds1", "ds2", labels={"fluid.io/dataset.ds1.sched": "required"})
    out = run(NodeAffinityWithCache(), pod, ["ds1", "ds2"])
    assert node_affinity(out) == {
        nodeaffinity.REQUIRED: {
            "nodeSelectorTerms": [{"matchExpressions": [nodeaffinity.label_in(cache_key("ds1"), "true")]}]
        },
        nodeaffinity.PREFERRED: [prefer("ds2")],
    }


def test_a_requirement_is_anded_into_every_term_the_pod_has() -> None:
    zone_a = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    zone_b = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
    spec = {"affinity": {"nodeAffinity": {nodeaffinity.REQUIRED: {"nodeSelectorTerms": [zone_a, zone_b]}}}}
    pod = app_pod("ds1", labels={"fluid.io/dataset.ds1.sched": "required"}, spec=spec)
    out = run(NodeAffinityWithCache(), pod, ["ds1"])
    want = nodeaffinity.label_in(cache_key("ds1"), "true")
    terms = node_affinity(out)[nodeaffinity.REQUIRED]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [*zone_a["matchExpressions"], want]},
        {"matchExpressions": [*zone_b["matchExpressions"], want]},
    ]


def test_other_sched_values_are_preferences() -> None:
    pod = app_pod("ds1", labels={"fluid.io/dataset.ds1.sched": "preferred"})
    assert node_affinity(run(NodeAffinityWithCache(), pod, ["ds1"])) == {
        nodeaffinity.PREFERRED: [prefer("ds1")]
    }


def test_a_pod_that_chose_its_own_locality_is_left_alone() -> None:
    spec = {"nodeSelector": {"fluid.io/node": "x"}}
    pod = app_pod("ds1", spec=spec)
    assert run(NodeAffinityWithCache(), pod, ["ds1"]) == pod


def test_requiring_a_dataset_the_pod_does_not_use_is_refused() -> None:
    pod = app_pod("ds1", labels={"fluid.io/dataset.other.sched": "required"})
    with pytest.raises(Denied) as refusal:
        run(NodeAffinityWithCache(), pod, ["ds1"])
    assert 'dataset "other"' in refusal.value.message
    assert "fluid.io/dataset.other.sched: required" in refusal.value.message
    assert "it uses ds1" in refusal.value.message
    with pytest.raises(Denied):
        run(PreferNodesWithoutCache(), app_pod(labels={"fluid.io/dataset.other.sched": "required"}), [])


def test_requiring_when_the_profile_requires_nothing_is_refused() -> None:
    plugin = NodeAffinityWithCache(TieredLocality(required=()))
    pod = app_pod("ds1", labels={"fluid.io/dataset.ds1.sched": "required"})
    with pytest.raises(Denied) as refusal:
        run(plugin, pod, ["ds1"])
    assert "requires no locality" in refusal.value.message
    # Without the label, the same plugin only prefers.
    assert node_affinity(run(plugin, app_pod("ds1"), ["ds1"])) == {nodeaffinity.PREFERRED: [prefer("ds1")]}


def test_the_fuse_locality_steers_to_the_fuse_label() -> None:
    plugin = NodeAffinityWithCache(parse_locality("preferred: [{name: fluid.io/fuse, weight: 30}]\n"))
    out = run(plugin, app_pod("ds1"), ["ds1"])
    fuse = names.fuse_node_label(NS, "ds1")
    assert node_affinity(out) == {
        nodeaffinity.PREFERRED: [
            {"weight": 30, "preference": {"matchExpressions": [nodeaffinity.label_in(fuse, "true")]}}
        ]
    }


def test_prefer_nodes_without_cache_is_upstreams_term() -> None:
    out = run(PreferNodesWithoutCache(), app_pod(), [])
    assert node_affinity(out) == {
        nodeaffinity.PREFERRED: [
            {
                "weight": 100,
                "preference": {
                    "matchExpressions": [{"key": "fluid.io/dataset-num", "operator": "DoesNotExist"}]
                },
            }
        ]
    }
    assert run(PreferNodesWithoutCache(), app_pod("ds1"), ["ds1"]) == app_pod("ds1")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ("preferred: [{name: fluid.io/node, weight: 0}]", "from 1 to 100"),
        ("preferred: [{name: fluid.io/node, weight: 100, extra: 1}]", "{name, weight}"),
        ("required: fluid.io/node", "list of locality names"),
        ("other: 1", "only 'preferred' and 'required'"),
        ("preferred: [", "not valid YAML"),
    ],
)
def test_bad_args_stop_start_up(args: str, words: str) -> None:
    with pytest.raises(ProfileError) as error:
        parse_locality(args)
    assert words in str(error.value)


def test_upstreams_default_args_load_and_unknown_localities_do_nothing() -> None:
    upstream = (
        "preferred:\n  - name: fluid.io/node\n    weight: 100\n  - name: topology.kubernetes.io/zone\n"
        "    weight: 50\nrequired:\n  - fluid.io/node\n"
    )
    locality = parse_locality(upstream)
    assert locality.topology() == ["topology.kubernetes.io/zone"]
    out = run(NodeAffinityWithCache(locality), app_pod("ds1"), ["ds1"])
    assert node_affinity(out) == {nodeaffinity.PREFERRED: [prefer("ds1")]}


def test_the_profile_configures_the_plugin_by_plugin_config() -> None:
    text = (
        "plugins:\n  serverful:\n    withDataset: [NodeAffinityWithCache]\n"
        "pluginConfig:\n  - name: NodeAffinityWithCache\n    args: |\n      preferred:\n"
        "        - {name: fluid.io/node, weight: 7}\n"
    )
    profile, _ = load_profile(text)
    (plugin,) = profile.plugins("serverful", with_dataset=True)
    assert isinstance(plugin, NodeAffinityWithCache)
    assert plugin.locality == TieredLocality(preferred=(("fluid.io/node", 7),), required=())


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ("  - name: DatasetUsageInjector\n", "takes no args"),
        ("  - name: NodeAffinityWithCache\n  - name: NodeAffinityWithCache\n", "twice"),
        ("  - name: NodeAffinityWithCache\n    args: {required: []}\n", "YAML string"),
        ("  - name: NodeAffinityWithCache\n    weight: 1\n", "unknown key"),
        ("  NodeAffinityWithCache: {}\n", "must be a list"),
    ],
)
def test_a_bad_plugin_config_stops_start_up(config: str, words: str) -> None:
    with pytest.raises(ProfileError) as error:
        load_profile(f"plugins: {{}}\npluginConfig:\n{config}")
    assert words in str(error.value)


def test_required_datasets_reads_upstreams_label() -> None:
    pod = app_pod(
        labels={
            "fluid.io/dataset.b.sched": "required",
            "fluid.io/dataset.a.sched": "required",
            "fluid.io/dataset.c.sched": "no",
            "fluid.io/dataset": "x",
        }
    )
    assert required_datasets(pod) == ["a", "b"]


def test_the_default_profile_prefers_through_the_pipeline_and_is_idempotent() -> None:
    pod = app_pod("ds1", labels={names.LABEL_FUSE_SERVERFUL_INJECT: names.TRUE})
    lookup = StaticLookup([dataset_pvc("ds1")])
    first = admit(pod, NS, lookup, PROFILE)
    assert first.patch is not None
    assert first.mutated is not None
    assert node_affinity(first.mutated) == {nodeaffinity.PREFERRED: [prefer("ds1")]}
    again = admit(apply_patch(copy.deepcopy(pod), first.patch), NS, lookup, PROFILE)
    assert again.patch is None


def test_the_pipeline_refuses_a_pod_requiring_a_dataset_it_does_not_mount() -> None:
    pod = app_pod("ds1", labels={"fluid.io/dataset.ds2.sched": "required"})
    outcome = admit(pod, NS, StaticLookup([dataset_pvc("ds1")]), PROFILE)
    assert outcome.result == "denied"
    assert outcome.denied is not None
    assert 'dataset "ds2"' in outcome.denied


# --- properties ----------------------------------------------------------------------------------

keys = st.sampled_from(["zone", "rack", cache_key("ds1"), "fluid.io/f-x"])
expressions = st.fixed_dictionaries(
    {
        "key": keys,
        "operator": st.sampled_from(["In", "NotIn"]),
        "values": st.lists(st.sampled_from("abc"), min_size=1, max_size=2),
    }
)
terms = st.lists(st.fixed_dictionaries({"matchExpressions": st.lists(expressions, max_size=3)}), max_size=3)
preferred = st.lists(
    st.fixed_dictionaries(
        {
            "weight": st.integers(1, 100),
            "preference": st.fixed_dictionaries({"matchExpressions": st.lists(expressions, max_size=2)}),
        }
    ),
    max_size=3,
)


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    node_affinity: dict[str, Any] = {}
    if draw(st.booleans()):
        node_affinity[nodeaffinity.REQUIRED] = {"nodeSelectorTerms": draw(terms)}
    if draw(st.booleans()):
        node_affinity[nodeaffinity.PREFERRED] = draw(preferred)
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    wrapped: bool = draw(st.booleans())
    if node_affinity or wrapped:
        spec["affinity"] = {"nodeAffinity": node_affinity, "podAffinity": {"x": 1}}
    return {"metadata": {"name": "p"}, "spec": spec}


@given(pods(), st.lists(expressions, min_size=1, max_size=3))
def test_a_requirement_narrows_and_is_idempotent(pod: dict[str, Any], wanted: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(pod)
    work = working_copy(pod)
    nodeaffinity.add_required(work, wanted)
    assert pod == before
    na = work["spec"]["affinity"]["nodeAffinity"]
    # Terms that constrain nothing match no node: only the others count.
    result = [t for t in na[nodeaffinity.REQUIRED]["nodeSelectorTerms"] if t["matchExpressions"]]
    assert result, "a pod that asked is never left without the requirement"
    for term in result:
        assert all(e in term["matchExpressions"] for e in wanted)
    # Every term that constrained something is kept, narrowed; the pod's other affinities stay.
    old = [
        t
        for t in ((before["spec"].get("affinity") or {}).get("nodeAffinity") or {})
        .get(nodeaffinity.REQUIRED, {})
        .get("nodeSelectorTerms")
        or ()
        if t["matchExpressions"]
    ]
    assert len(result) == max(1, len(old))
    for old_term, new_term in zip(old, result, strict=False):
        assert (
            new_term["matchExpressions"][: len(old_term["matchExpressions"])] == old_term["matchExpressions"]
        )
    if "affinity" in before["spec"]:
        assert work["spec"]["affinity"]["podAffinity"] == {"x": 1}
    again = copy.deepcopy(work)
    nodeaffinity.add_required(again, wanted)
    assert again == work


@given(pods(), preferred)
def test_preferences_are_added_once(pod: dict[str, Any], wanted: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(pod)
    work = working_copy(pod)
    nodeaffinity.add_preferred(work, wanted)
    assert pod == before
    got = ((work["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(nodeaffinity.PREFERRED) or []
    had = ((before["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(nodeaffinity.PREFERRED) or []
    assert got[: len(had)] == had
    assert all(term in got for term in wanted)
    again = copy.deepcopy(work)
    nodeaffinity.add_preferred(again, wanted)
    assert again == work


@given(st.lists(st.sampled_from(["ds1", "ds2", "ds3"]), min_size=1, unique=True), st.data())
def test_a_pod_is_refused_or_gets_every_requirement_it_asked_for(
    used: list[str], data: st.DataObject
) -> None:
    asked = data.draw(st.lists(st.sampled_from(["ds1", "ds2", "ds3", "ds4"]), unique=True))
    pod = app_pod(*used, labels={f"fluid.io/dataset.{ds}.sched": "required" for ds in asked})
    try:
        out = run(NodeAffinityWithCache(), pod, sorted(used))
    except Denied:
        assert any(ds not in used for ds in asked)
        return
    assert all(ds in used for ds in asked)
    na = out["spec"].get("affinity", {}).get("nodeAffinity", {})
    for term in na.get(nodeaffinity.REQUIRED, {}).get("nodeSelectorTerms", [{"matchExpressions": []}]):
        assert {e["key"] for e in term["matchExpressions"]} == {cache_key(ds) for ds in asked}
    assert [t["preference"]["matchExpressions"][0]["key"] for t in na.get(nodeaffinity.PREFERRED, [])] == [
        cache_key(ds) for ds in sorted(used) if ds not in asked
    ]


def cache_runtime(name: str, client: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "CacheRuntime", "metadata": {"namespace": NS, "name": name}, "spec": {"client": client}}


def test_require_node_with_fuse_requires_where_each_client_may_run() -> None:
    lookup = StaticLookup(
        [
            cache_runtime("ds1", {"nodeSelector": {"pool": "fuse", "disk": "ssd"}}),
            cache_runtime("ds2", {"nodeSelector": {"zone": "a"}}),
            cache_runtime("ds3", {"disabled": True, "nodeSelector": {"never": "x"}}),
        ]
    )
    out = run(RequireNodeWithFuse(), app_pod("ds1", "ds2", "ds3"), ["ds1", "ds2", "ds3"], lookup)
    expressions = [
        nodeaffinity.label_in("disk", "ssd"),
        nodeaffinity.label_in("pool", "fuse"),
        nodeaffinity.label_in("zone", "a"),
    ]
    assert node_affinity(out) == {
        nodeaffinity.REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
    }
    # Again: nothing more; a runtime without a selector, or not known, adds nothing.
    assert run(RequireNodeWithFuse(), out, ["ds1", "ds2", "ds3"], lookup) == out
    assert run(
        RequireNodeWithFuse(), app_pod("ds4"), ["ds4"], StaticLookup([cache_runtime("ds4", {})])
    ) == app_pod("ds4")
    assert run(RequireNodeWithFuse(), app_pod("ds5"), ["ds5"]) == app_pod("ds5")


def test_the_default_profile_requires_the_clients_nodes_and_prefers_the_cache_nodes() -> None:
    pod = app_pod("ds1", labels={names.LABEL_FUSE_SERVERFUL_INJECT: names.TRUE})
    lookup = StaticLookup([dataset_pvc("ds1"), cache_runtime("ds1", {"nodeSelector": {"pool": "fuse"}})])
    outcome = admit(pod, NS, lookup, PROFILE)
    assert outcome.mutated is not None
    assert node_affinity(outcome.mutated) == {
        nodeaffinity.REQUIRED: {
            "nodeSelectorTerms": [{"matchExpressions": [nodeaffinity.label_in("pool", "fuse")]}]
        },
        nodeaffinity.PREFERRED: [prefer("ds1")],
    }


UPSTREAM_ARGS = (
    "preferred:\n  - {name: fluid.io/node, weight: 100}\n"
    "  - {name: topology.kubernetes.io/zone, weight: 50}\n"
    "  - {name: topology.kubernetes.io/region, weight: 20}\n"
    "required: [fluid.io/node, topology.kubernetes.io/zone]\n"
)
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


def placed_dataset(name: str, terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "Dataset",
        "metadata": {"namespace": NS, "name": name},
        "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": terms}}},
    }


def test_topology_localities_come_from_the_workers_affinity_the_dataset_gives() -> None:
    zone_a = {"key": ZONE, "operator": "In", "values": ["a"]}
    zone_b = {"key": ZONE, "operator": "In", "values": ["b"]}
    region = {"key": REGION, "operator": "In", "values": ["r"]}
    disk = {"key": "disk", "operator": "In", "values": ["ssd"]}
    terms = [{"matchExpressions": [zone_a, disk]}, {"matchExpressions": [zone_b, region]}]
    lookup = StaticLookup([placed_dataset("ds1", terms), placed_dataset("ds2", terms)])
    plugin = NodeAffinityWithCache(parse_locality(UPSTREAM_ARGS))
    pod = app_pod("ds1", "ds2", labels={"fluid.io/dataset.ds2.sched": "required"})
    out = run(plugin, pod, ["ds1", "ds2"], lookup)
    node = nodeaffinity.label_in(cache_key("ds2"), "true")
    assert node_affinity(out) == {
        # ds2 required: its cache nodes, in the zone of one of its workers' terms.
        nodeaffinity.REQUIRED: {
            "nodeSelectorTerms": [{"matchExpressions": [node, zone_a]}, {"matchExpressions": [node, zone_b]}]
        },
        # ds1 preferred: its cache nodes, then each locality expression of its workers with its weight.
        nodeaffinity.PREFERRED: [
            prefer("ds1"),
            {"weight": 50, "preference": {"matchExpressions": [zone_a]}},
            {"weight": 50, "preference": {"matchExpressions": [zone_b]}},
            {"weight": 20, "preference": {"matchExpressions": [region]}},
        ],
    }
    assert run(plugin, out, ["ds1", "ds2"], lookup) == out
    # A workers' term without a required locality: they may run in any zone, so none is required.
    anywhere = StaticLookup([placed_dataset("ds2", [*terms, {"matchExpressions": [disk]}])])
    loose = run(plugin, app_pod("ds2", labels={"fluid.io/dataset.ds2.sched": "required"}), ["ds2"], anywhere)
    assert node_affinity(loose)[nodeaffinity.REQUIRED] == {
        "nodeSelectorTerms": [{"matchExpressions": [node]}]
    }


@given(pods(), st.lists(st.lists(expressions, min_size=1, max_size=2), min_size=1, max_size=3))
def test_one_of_several_requirements_narrows_every_term_and_is_idempotent(
    pod: dict[str, Any], alternatives: list[list[dict[str, Any]]]
) -> None:
    before = copy.deepcopy(pod)
    work = working_copy(pod)
    nodeaffinity.add_required_any(work, alternatives)
    assert pod == before
    terms = work["spec"]["affinity"]["nodeAffinity"][nodeaffinity.REQUIRED]["nodeSelectorTerms"]
    constraining = [t for t in terms if t["matchExpressions"]]
    assert constraining
    for term in constraining:
        assert any(all(e in term["matchExpressions"] for e in a) for a in alternatives)
    # Each term the pod had still constrains as before, or more (its expressions kept, first).
    old_terms = ((before["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        nodeaffinity.REQUIRED
    ) or {}
    for old in (t for t in old_terms.get("nodeSelectorTerms") or () if t["matchExpressions"]):
        assert any(
            t["matchExpressions"][: len(old["matchExpressions"])] == old["matchExpressions"] for t in terms
        )
    again = copy.deepcopy(work)
    nodeaffinity.add_required_any(again, alternatives)
    assert again == work
