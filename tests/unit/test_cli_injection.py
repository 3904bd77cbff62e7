"""The pod-template edit of ``inject``: what it changes, the merge patch that does it, and the laws it
keeps (a second inject changes nothing, --remove undoes inject, the webhook reads what was asked)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.api import names
from kubectl_fluid.cli.injection import (
    Plan,
    merge_patch,
    plan_fuse,
    plan_fuse_remove,
    plan_inject,
    plan_remove,
    template_of,
)
from kubectl_fluid.cli.podview import requested_datasets

DATASET = st.from_regex(r"[a-z]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
DATASETS = st.lists(DATASET, min_size=1, max_size=4)
OTHER_KEYS = st.dictionaries(
    st.sampled_from(["app", "team", "example.com/x"]), st.text(max_size=5), max_size=3
)
FLUID_ANNOTATIONS = st.fixed_dictionaries(
    {},
    optional={
        names.ANNOTATION_DATASET: st.lists(DATASET, max_size=3).map(", ".join),
        names.ANNOTATION_DATASETS: st.lists(DATASET, max_size=3).map(",".join),
    },
)
FLUID_LABELS = st.fixed_dictionaries(
    {},
    optional={
        names.LABEL_INJECT: st.sampled_from(["true", "false"]),
        names.LABEL_INJECT_DONE: st.just("true"),
    },
)


def apply(
    plan: Plan, labels: dict[str, str], annotations: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    meta = merge_patch({"labels": labels, "annotations": annotations}, plan.metadata_patch())
    return meta.get("labels", {}), meta.get("annotations", {})


def test_inject_into_a_plain_template() -> None:
    plan = plan_inject({"app": "x"}, {}, ["ds2", "ds1"])
    assert [c.describe() for c in plan.changes] == [
        "+ label fluid.io/inject=true",
        "+ annotation fluid.io/dataset=ds1,ds2",
    ]
    assert plan.metadata_patch() == {
        "labels": {names.LABEL_INJECT: "true"},
        "annotations": {names.ANNOTATION_DATASET: "ds1,ds2"},
    }


def test_inject_adds_to_datasets_already_named_and_folds_the_alias() -> None:
    plan = plan_inject(
        {names.LABEL_INJECT: "true"},
        {names.ANNOTATION_DATASET: "ds1", names.ANNOTATION_DATASETS: "ds0"},
        ["ds2"],
    )
    assert [c.describe() for c in plan.changes] == [
        "~ annotation fluid.io/dataset=ds0,ds1,ds2 (was ds1)",
        "- annotation fluid.io/datasets (was ds0)",
    ]
    assert plan.before == ("ds0", "ds1")
    assert plan.after == ("ds0", "ds1", "ds2")


def test_inject_drops_the_done_label_that_would_make_the_webhook_skip_every_pod() -> None:
    plan = plan_inject({names.LABEL_INJECT_DONE: "true"}, {}, ["ds1"])
    assert plan.metadata_patch()["labels"] == {names.LABEL_INJECT: "true", names.LABEL_INJECT_DONE: None}


def test_an_annotation_spelled_differently_but_naming_the_same_datasets_is_left_alone() -> None:
    assert not plan_inject(
        {names.LABEL_INJECT: "true"}, {names.ANNOTATION_DATASET: " ds2, ds1 "}, ["ds1"]
    ).changes


def test_remove_some_keeps_the_label_remove_all_drops_everything() -> None:
    labels = {names.LABEL_INJECT: "true", "app": "x"}
    annotations = {names.ANNOTATION_DATASET: "ds1,ds2"}
    some = plan_remove(labels, annotations, ["ds1"])
    assert some.metadata_patch() == {"annotations": {names.ANNOTATION_DATASET: "ds2"}}
    last = plan_remove(labels, annotations, ["ds1", "ds2"])
    assert last.metadata_patch() == {
        "labels": {names.LABEL_INJECT: None},
        "annotations": {names.ANNOTATION_DATASET: None},
    }
    assert plan_remove(labels, annotations, None).metadata_patch() == last.metadata_patch()


def test_remove_of_something_never_injected_changes_nothing() -> None:
    assert not plan_remove({"app": "x"}, {}, None).changes
    assert not plan_remove({names.LABEL_INJECT: "true"}, {names.ANNOTATION_DATASET: "ds1"}, ["ds9"]).changes


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            ("spec", "template"),
            {"spec": {"template": {"metadata": {"labels": {names.LABEL_INJECT: "true"}}}}},
        ),
        (
            ("spec", "jobTemplate", "spec", "template"),
            {
                "spec": {
                    "jobTemplate": {
                        "spec": {"template": {"metadata": {"labels": {names.LABEL_INJECT: "true"}}}}
                    }
                }
            },
        ),
    ],
)
def test_the_patch_reaches_the_pod_template_of_each_kind(
    path: tuple[str, ...], expected: dict[str, Any]
) -> None:
    plan = plan_inject({}, {names.ANNOTATION_DATASET: "ds1"}, ["ds1"])
    assert plan.patch(path) == expected


def test_the_sent_patch_is_guarded_by_the_resource_version_read() -> None:
    patch = plan_inject({}, {}, ["ds1"]).patch(("spec", "template"), "42")
    assert patch["metadata"] == {"resourceVersion": "42"}
    assert patch["spec"]["template"]["metadata"]["labels"] == {names.LABEL_INJECT: "true"}


def test_template_of_reads_nested_templates_and_tolerates_absence() -> None:
    obj = {"spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}}}
    assert template_of(obj, ("spec", "jobTemplate", "spec", "template")) == {
        "metadata": {"labels": {"a": "b"}}
    }
    assert template_of({"spec": {}}, ("spec", "template")) == {}
    assert template_of({}, ("spec", "jobTemplate", "spec", "template")) == {}


@given(
    other_labels=OTHER_KEYS,
    fluid_labels=FLUID_LABELS,
    other_annotations=OTHER_KEYS,
    fluid_annotations=FLUID_ANNOTATIONS,
    datasets=DATASETS,
)
def test_inject_laws(
    other_labels: dict[str, str],
    fluid_labels: dict[str, str],
    other_annotations: dict[str, str],
    fluid_annotations: dict[str, str],
    datasets: list[str],
) -> None:
    labels = {**other_labels, **fluid_labels}
    annotations = {**other_annotations, **fluid_annotations}
    before = requested_datasets(annotations)
    original = copy.deepcopy((labels, annotations))

    plan = plan_inject(labels, annotations, datasets)
    assert (labels, annotations) == original  # planning is pure
    new_labels, new_annotations = apply(plan, labels, annotations)

    # The webhook will see the label and exactly the union, in the canonical annotation only.
    assert new_labels[names.LABEL_INJECT] == "true"
    assert names.LABEL_INJECT_DONE not in new_labels
    assert requested_datasets(new_annotations) == sorted(set(before) | set(datasets))
    assert names.ANNOTATION_DATASETS not in new_annotations
    # Nothing else is touched.
    assert {k: v for k, v in new_labels.items() if k in other_labels} == other_labels
    assert {k: v for k, v in new_annotations.items() if k in other_annotations} == other_annotations

    # A second inject of the same datasets changes nothing.
    assert not plan_inject(new_labels, new_annotations, datasets).changes

    # --remove undoes it: the template keeps only what was not ours.
    removed_labels, removed_annotations = apply(
        plan_remove(new_labels, new_annotations, None), new_labels, new_annotations
    )
    assert removed_labels == other_labels
    assert removed_annotations == other_annotations


@given(named=st.lists(DATASET, min_size=1, max_size=4, unique=True), data=st.data())
def test_remove_some_laws(named: list[str], data: st.DataObject) -> None:
    labels = {names.LABEL_INJECT: "true"}
    annotations = {names.ANNOTATION_DATASET: ",".join(named)}
    gone = data.draw(st.lists(st.sampled_from(named), unique=True))
    new_labels, new_annotations = apply(plan_remove(labels, annotations, gone), labels, annotations)
    left = sorted(set(named) - set(gone))
    assert requested_datasets(new_annotations) == left
    assert (names.LABEL_INJECT in new_labels) == bool(left)


def test_fuse_labels_the_template_for_mount_propagation_and_leaves_datasets_alone() -> None:
    annotations = {names.ANNOTATION_DATASET: "ds1"}
    plan = plan_fuse({"app": "x", names.LABEL_INJECT_DONE: "true"}, annotations)
    assert [c.describe() for c in plan.changes] == [
        "+ label fuse.serverful.fluid.io/inject=true",
        "- label done.sidecar.fluid.io/inject (was true)",
    ]
    assert plan.before == plan.after == ("ds1",)
    assert not plan_fuse({names.LABEL_FUSE_SERVERFUL_INJECT: "true"}, {}).changes


def test_fuse_remove_takes_only_its_label_away() -> None:
    labels = {names.LABEL_FUSE_SERVERFUL_INJECT: "true", names.LABEL_INJECT: "true"}
    plan = plan_fuse_remove(labels, {})
    assert plan.metadata_patch() == {"labels": {names.LABEL_FUSE_SERVERFUL_INJECT: None}}
    assert not plan_fuse_remove({"app": "x"}, {}).changes
