"""Whose is a PV? ``{namespace}-{name}`` names one PV for ``team``/``a-data`` and for ``team-a``/``data``,
so the controller touches (updates, re-creates, deletes) a PV only when its labels name the Dataset
and its claimRef names the Dataset's PVC."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.desired import desired_children
from controller.desired.storage import pv_conflict, pv_holder
from kubectl_fluid.api import names
from tests.unit.desired_samples import CLIENTLESS_RUNTIME, DATASET, MOONCAKE_CLASS, models, with_spec


def pv_of(namespace: str, name: str) -> dict[str, Any]:
    dataset = with_spec(with_spec(DATASET, "metadata.name", name), "metadata.namespace", namespace)
    runtime = with_spec(with_spec(CLIENTLESS_RUNTIME, "metadata.name", name), "metadata.namespace", namespace)
    return desired_children(*models(dataset, runtime, MOONCAKE_CLASS), namespace).pv


def test_the_two_datasets_share_a_pv_name_and_a_dataset_id() -> None:
    first, newcomer = pv_of("team", "a-data"), pv_of("team-a", "data")
    assert first["metadata"]["name"] == newcomer["metadata"]["name"] == "team-a-data"
    # Upstream's dataset-id cannot tell them apart either: it is the same string.
    assert (
        first["metadata"]["labels"][names.LABEL_DATASET_ID]
        == newcomer["metadata"]["labels"][names.LABEL_DATASET_ID]
    )


def test_a_pv_belongs_to_the_dataset_it_was_made_for_only() -> None:
    first = pv_of("team", "a-data")
    assert pv_holder(first) == ("team", "a-data")
    assert pv_conflict(first, "team", "a-data") is None
    assert pv_conflict(first, "team-a", "data") == "is held by Dataset team/a-data"


def test_the_labels_name_namespace_and_dataset() -> None:
    labels = pv_of("team", "a-data")["metadata"]["labels"]
    assert labels[names.LABEL_DATASET_NAMESPACE] == "team"
    assert labels[names.LABEL_DATASET_NAME] == "a-data"


def test_a_pv_claimed_by_another_pvc_is_not_ours() -> None:
    pv = pv_of("team", "a-data")
    pv["spec"]["claimRef"] = {"namespace": "team", "name": "other", "uid": "u"}
    assert pv_conflict(pv, "team", "a-data") == (
        "is bound to PersistentVolumeClaim team/other, not to PersistentVolumeClaim team/a-data"
    )
    del pv["spec"]["claimRef"]
    assert pv_conflict(pv, "team", "a-data") == "has no claimRef to PersistentVolumeClaim team/a-data"


def test_a_pv_another_manager_made_is_not_ours() -> None:
    pv = pv_of("team", "a-data")
    del pv["metadata"]["labels"][names.LABEL_APP_MANAGED_BY]
    assert pv_conflict(pv, "team", "a-data") == f"is not managed by {names.MANAGED_BY}"
    assert pv_conflict({"metadata": {"name": "team-a-data"}}, "team", "a-data") == (
        f"is not managed by {names.MANAGED_BY}"
    )


def test_labels_that_name_another_dataset_win_over_everything_else() -> None:
    pv = pv_of("team", "a-data")
    pv["metadata"]["labels"][names.LABEL_DATASET_NAME] = "b-data"
    assert pv_conflict(pv, "team", "a-data") == "is held by Dataset team/b-data"


def test_a_pv_made_before_the_identity_labels_is_known_by_its_csi_attributes() -> None:
    # Older controllers labelled only dataset-id; the CSI attributes (immutable) name the dataset.
    legacy = pv_of("team", "a-data")
    for key in (names.LABEL_DATASET_NAMESPACE, names.LABEL_DATASET_NAME):
        del legacy["metadata"]["labels"][key]
    assert pv_holder(legacy) == ("team", "a-data")
    assert pv_conflict(legacy, "team", "a-data") is None
    assert pv_conflict(legacy, "team-a", "data") == "is held by Dataset team/a-data"
    # Half a set of labels is not an identity.
    half = copy.deepcopy(legacy)
    half["metadata"]["labels"][names.LABEL_DATASET_NAME] = "a-data"
    assert pv_holder(half) is None
    assert pv_conflict(half, "team", "a-data") == (
        f"names no Dataset in its {names.LABEL_DATASET_NAMESPACE} and {names.LABEL_DATASET_NAME} labels"
    )


label = st.from_regex(r"[a-z]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(label, label, label, label)
def test_no_pv_is_ever_owned_by_two_datasets(ns1: str, name1: str, ns2: str, name2: str) -> None:
    pv = pv_of(ns1, name1)
    assert pv_conflict(pv, ns1, name1) is None
    if (ns1, name1) != (ns2, name2):
        assert pv_conflict(pv, ns2, name2) is not None
