"""Dataset collection (SPEC §4): annotation and alias, PVCs, and refusing other namespaces."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_fluid.api import names
from kubectl_fluid.api.datasetrefs import is_dataset_pvc
from tests.unit.webhook_samples import NS, dataset_pvc, injection_pod
from webhook.collect import collect, pvc_datasets, requested_datasets
from webhook.errors import Denied
from webhook.lookup import RecordingLookup, StaticLookup


def _annotated(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations}, "spec": {"containers": []}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ds1,ds2", ["ds1", "ds2"]),
        ("ds2,ds1", ["ds1", "ds2"]),
        (" ds2 ,  ds1 ", ["ds1", "ds2"]),
        ("ds1,ds1, ds1", ["ds1"]),
        (",ds1,,", ["ds1"]),
        ("", []),
        (" , ", []),
    ],
)
def test_annotation_is_trimmed_deduplicated_and_sorted(value: str, expected: list[str]) -> None:
    assert requested_datasets(_annotated({names.ANNOTATION_DATASET: value})) == expected


def test_alias_alone_and_together() -> None:
    assert requested_datasets(_annotated({names.ANNOTATION_DATASETS: "b, a"})) == ["a", "b"]
    both = {names.ANNOTATION_DATASET: "c,a", names.ANNOTATION_DATASETS: "a,b"}
    assert requested_datasets(_annotated(both)) == ["a", "b", "c"]


def test_no_metadata_or_annotations_means_no_datasets() -> None:
    assert requested_datasets({}) == []
    assert requested_datasets({"metadata": {"annotations": None}}) == []
    assert requested_datasets({"metadata": {"annotations": {"other": "x"}}}) == []


def _claim_volume(volume: str, claim: str) -> dict[str, Any]:
    return {"name": volume, "persistentVolumeClaim": {"claimName": claim}}


def test_pvc_datasets_are_the_claims_carrying_a_fluid_label() -> None:
    lookup = StaticLookup(
        [
            dataset_pvc("ds3", label="s"),
            dataset_pvc("ds4", label="id"),
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"namespace": NS, "name": "plain", "labels": {"a": "b"}},
            },
            dataset_pvc("ds5", namespace="other"),
        ]
    )
    pod = injection_pod(
        None,
        volumes=[
            _claim_volume("v4", "ds4"),
            _claim_volume("v3", "ds3"),
            _claim_volume("v-plain", "plain"),
            _claim_volume("v-missing", "not-yet-created"),
            _claim_volume("v5", "ds5"),  # a PVC of that name exists only in another namespace
            {"name": "scratch", "emptyDir": {}},
        ],
    )
    assert pvc_datasets(pod, NS, lookup) == ["ds3", "ds4"]


def test_is_dataset_pvc() -> None:
    assert is_dataset_pvc(dataset_pvc("ds1", label="both"))
    assert not is_dataset_pvc({"metadata": {}})
    assert not is_dataset_pvc({"metadata": {"labels": {"fluid.io/other": "true"}}})


def test_collect_unions_annotation_and_pvcs() -> None:
    lookup = StaticLookup([dataset_pvc("ds3"), dataset_pvc("ds1")])
    pod = injection_pod("ds2, ds1", volumes=[_claim_volume("a", "ds3"), _claim_volume("b", "ds1")])
    collected = collect(pod, NS, lookup)
    assert collected.from_annotation == ["ds1", "ds2"]
    assert collected.from_pvcs == ["ds1", "ds3"]
    assert collected.datasets == ["ds1", "ds2", "ds3"]


def test_reference_to_another_namespace_is_refused() -> None:
    with pytest.raises(Denied) as refused:
        collect(injection_pod("ds1,other/ds2"), NS, StaticLookup())
    message = refused.value.message
    assert '"other/ds2"' in message
    assert f'datasets are read only from the pod\'s namespace "{NS}"' in message
    assert str(refused.value) == message


def test_every_foreign_reference_is_named_at_once() -> None:
    with pytest.raises(Denied, match=r'references "a/x", "b/y" point to another namespace'):
        collect(injection_pod("b/y, a/x"), NS, StaticLookup())


@pytest.mark.parametrize("entry", ["/ds1", f"{NS}/", f"{NS}/a/b", "other/"])
def test_malformed_references_are_refused_too(entry: str) -> None:
    with pytest.raises(Denied, match="another namespace"):
        collect(injection_pod(entry), NS, StaticLookup())


def test_own_namespace_prefix_names_the_local_dataset() -> None:
    assert collect(injection_pod(f"{NS}/ds1, ds1, ds2"), NS, StaticLookup()).datasets == ["ds1", "ds2"]


def test_a_dotted_entry_is_refused_as_a_name_not_taken_for_a_reference() -> None:
    # "." cannot be in a Dataset name (DNS-1035): the entry is refused for what it is, and the
    # rule is named, before anything is looked up.
    with pytest.raises(Denied) as refused:
        collect(injection_pod("ds1.other"), NS, RecordingLookup(StaticLookup()))
    assert refused.value.message == (f'dataset name "ds1.other": {names.DATASET_NAME_NOT_DNS_1035_MESSAGE}')


def test_names_breaking_each_rule_are_listed_once_per_rule() -> None:
    lookup = RecordingLookup(StaticLookup())
    with pytest.raises(Denied) as refused:
        collect(injection_pod(f"ok, a.b, {'x' * 43}, 1a"), NS, lookup)
    assert refused.value.message == (
        f'dataset names "1a", "a.b": {names.DATASET_NAME_NOT_DNS_1035_MESSAGE}; '
        f'dataset name "{"x" * 43}": {names.DATASET_NAME_TOO_LONG_MESSAGE}'
    )
    assert lookup.misses == []


def test_more_datasets_than_the_limit_are_refused_by_count() -> None:
    pod = injection_pod("a, b, c", volumes=[_claim_volume("d", "d")])
    lookup = StaticLookup([dataset_pvc("d")])
    assert collect(pod, NS, lookup, max_datasets=4).datasets == ["a", "b", "c", "d"]
    # PVCs count too: three named plus one mounted is over a limit of three.
    with pytest.raises(Denied, match=r"^pod names 4 datasets; at most 3 are allowed per pod"):
        collect(pod, NS, lookup, max_datasets=3)


def test_a_long_list_of_foreign_references_is_named_in_part() -> None:
    with pytest.raises(Denied) as refused:
        collect(injection_pod(",".join(f"other/ds{i}" for i in range(500))), NS, StaticLookup())
    message = refused.value.message
    assert len(message) < 700
    assert '"other/ds0", "other/ds1"' in message
    assert "more point to another namespace" in message
