"""``explain``'s judgement: the first webhook rule a pod failed, in the webhook's order, and advice
that names what to run."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_fluid.api import names
from kubectl_fluid.cli.diagnosis import Facts, describe, diagnose

ASKED = {names.LABEL_INJECT: names.TRUE}


def facts(**overrides: Any) -> Facts:
    base: dict[str, Any] = {
        "namespace": "team-a",
        "name": "web-1",
        "labels": {},
        "requested": [],
        "from_pvcs": [],
        "injected": [],
        "owner": "deploy/web",
    }
    return Facts(**{**base, **overrides})


def test_an_injected_pod() -> None:
    e = diagnose(facts(labels=ASKED, requested=["ds1"], injected=["ds1"]))
    assert e.is_injected
    assert not e.reasons
    assert not e.notes
    assert describe(e).splitlines()[:2] == ["Pod:        team-a/web-1", "Injected:   yes: ds1"]


def test_an_injected_pod_whose_annotation_changed_since() -> None:
    e = diagnose(facts(labels=ASKED, requested=["ds1", "ds2"], injected=["ds1", "ds0"]))
    assert e.notes == [
        '"ds2" is named now but was not injected (named after the pod was created); '
        "delete it and deploy/web recreates it",
        '"ds0" was injected but is no longer named; the pod keeps it until it is recreated',
    ]


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        (
            {},
            "it has no label fluid.io/inject=true, so the webhook never saw it; "
            "run kubectl fluid inject deploy/web --dataset DATASET -n team-a",
        ),
        (
            {"requested": ["ds1"], "owner": None},
            "recreate it with the label fluid.io/inject=true and the annotation fluid.io/dataset=ds1",
        ),
        ({"labels": {names.LABEL_SERVERLESS_INJECT: "true"}}, "asks for serverless injection"),
        ({"labels": {names.LABEL_INJECT: "True"}}, 'its label fluid.io/inject is "True", not "true"'),
        ({"labels": ASKED}, "it names no dataset (annotation fluid.io/dataset)"),
        (
            {"labels": {**ASKED, names.LABEL_INJECT_DONE: "true"}, "requested": ["ds1"]},
            "already carried done.sidecar.fluid.io/inject=true",
        ),
        (
            {
                "labels": ASKED,
                "requested": ["ds1"],
                "webhook_problem": "the MutatingWebhookConfiguration x is not installed",
            },
            "the MutatingWebhookConfiguration x is not installed; then delete it and deploy/web recreates it",
        ),
        ({"labels": ASKED, "from_pvcs": ["ds1"]}, "it was created before the webhook served it"),
    ],
)
def test_why_not(overrides: dict[str, Any], reason: str) -> None:
    e = diagnose(facts(**overrides))
    assert not e.is_injected
    assert len(e.reasons) == 1
    assert reason in e.reasons[0]


def test_what_recreating_would_meet_now() -> None:
    e = diagnose(
        facts(
            labels=ASKED,
            requested=["ds9"],
            dataset_problems={"ds9": 'dataset "ds9" not found in namespace "team-a"'},
        )
    )
    assert e.notes == ['recreated now it would be refused: dataset "ds9" not found in namespace "team-a"']
    text = describe(e)
    assert "Why not:\n  - it was created before" in text
    assert "Notes:\n  - recreated now" in text
    assert e.to_json()["injected"] is False
