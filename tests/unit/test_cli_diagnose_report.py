"""diagnose's report: the text blocks and summary line, the DiagnoseReport validated against the
schema kept beside the rules (its version in apiVersion), and the verb's arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kubectl_fluid.api import names
from kubectl_fluid.cli import rules
from kubectl_fluid.cli.diagnose import parse_target
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.rules.finding import REPORT_KIND, Finding, ObjectRef, Scope
from kubectl_fluid.cli.rules.report import (
    SCHEMA_FILE,
    Diagnosis,
    render_text,
    run,
    summary_line,
    to_json,
    warnings,
)
from kubectl_fluid.cli.snapshot import PROBE, Snapshot
from kubectl_fluid.cli.webhookprobe import probe
from kubectl_fluid.kube.errors import ApiError
from tests.unit.test_cli_diagnose_rules import NS, healthy, master_crashing, one_worker_down

SCHEMA: dict[str, Any] = json.loads((Path(rules.__file__).parent / SCHEMA_FILE).read_text())


def faulty() -> Diagnosis:
    snap = healthy()
    master_crashing(snap)
    one_worker_down(snap)
    del snap.lists["csinodes"]
    snap.unreadable["csinodes"] = "403 Forbidden"
    return run(snap, Scope(datasets=((NS, "demo"),)), rules.all_rules())


def test_text_is_one_block_per_finding_then_the_counts() -> None:
    text = render_text(faulty())
    blocks = text.split("\n\n")
    assert (
        blocks[0].splitlines()[0] == "ERROR    master-not-ready  CacheRuntime team/demo: 0 of 1 master ready"
    )
    assert blocks[0].splitlines()[1] == "         StatefulSet team/demo-master: 0/1 ready"
    assert blocks[0].splitlines()[-1].startswith("         → read the master's log")
    assert blocks[1].startswith(
        "WARNING  workers-partially-ready  CacheRuntime team/demo: 1 of 2 workers ready"
    )
    assert blocks[-1] == "1 error, 1 warning\n"


def test_a_clean_report_says_so() -> None:
    clean = run(healthy(), Scope(everything=True), rules.all_rules())
    assert render_text(clean) == "No problems found.\n"
    assert not clean.failed
    assert to_json(clean)["summary"] == {"errors": 0, "warnings": 0, "infos": 0}


def test_summary_counts_each_severity() -> None:
    ref = ObjectRef("Dataset", "a", "ns")
    d = Diagnosis(
        Scope(),
        "ns",
        [Finding("x", "error", ref, "m"), Finding("y", "error", ref, "m"), Finding("z", "info", ref, "m")],
    )
    assert summary_line(d) == "2 errors, 1 info"
    assert d.failed


def test_the_json_report_validates_against_its_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    report = to_json(faulty())
    jsonschema.validate(report, SCHEMA)
    assert report["apiVersion"] == names.CLI_API_VERSION == "cli.fluid.io/v1alpha1"
    assert SCHEMA["properties"]["apiVersion"]["const"] == report["apiVersion"]
    assert SCHEMA["properties"]["kind"]["const"] == report["kind"] == REPORT_KIND
    assert report["scope"] == {"namespace": NS, "datasets": ["team/demo"]}
    assert report["unreadable"] == {"csinodes": "403 Forbidden"}
    assert report["summary"] == {"errors": 1, "warnings": 1, "infos": 0}
    everything = to_json(run(Snapshot(None, lists={"datasets": []}), Scope(pod=("a", "p")), []))
    jsonschema.validate(everything, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**report, "summary": {"errors": -1, "warnings": 0, "infos": 0}}, SCHEMA)


def test_unreadable_kinds_are_warnings_naming_the_skipped_rules() -> None:
    snap = healthy()
    del snap.lists["statefulsets"]
    snap.unreadable["statefulsets"] = "403 Forbidden"
    result = run(snap, Scope(everything=True), rules.all_rules())
    assert warnings(result) == [
        "could not read statefulsets (403 Forbidden); rules skipped: "
        "master-not-ready, workers-partially-ready"
    ]


@pytest.mark.parametrize(
    ("what", "name", "want"),
    [
        (None, None, None),
        ("dataset", "demo", ("dataset", "demo")),
        ("dataset/demo", None, ("dataset", "demo")),
        ("pod", "app-1", ("pod", "app-1")),
        ("po/app-1", None, ("pod", "app-1")),
    ],
)
def test_targets(what: str | None, name: str | None, want: tuple[str, str] | None) -> None:
    assert parse_target(what, name) == want


@pytest.mark.parametrize(("what", "name"), [("deploy", "x"), ("dataset", None), ("demo", None)])
def test_other_targets_are_refused(what: str, name: str | None) -> None:
    with pytest.raises(CliError, match="diagnose takes dataset NAME, pod NAME"):
        parse_target(what, name)


class FakeApi:
    """Answers the probe's one request: raises ``error``, else admits; records what was sent."""

    def __init__(self, error: ApiError | None = None) -> None:
        self.error = error
        self.sent: list[tuple[str, str, dict[str, str] | None, Any]] = []

    def request(
        self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None
    ) -> Any:
        self.sent.append((method, path, params, body))
        if self.error is not None:
            raise self.error
        return body


@pytest.mark.parametrize(
    ("error", "probes", "unreadable"),
    [
        (None, {"team": None}, {}),
        (
            ApiError(
                500,
                "InternalError",
                'failed calling webhook "clientless.fluid.io": refused',
                method="POST",
                path="/",
            ),
            {"team": 'failed calling webhook "clientless.fluid.io": refused'},
            {},
        ),
        (ApiError(403, "Forbidden", "no", method="POST", path="/"), {}, {PROBE: "403 Forbidden"}),
    ],
)
def test_the_webhook_probe_is_a_dry_run_create_of_a_labelled_pod(
    error: ApiError | None, probes: dict[str, str | None], unreadable: dict[str, str]
) -> None:
    snap = healthy()
    snap.probes.clear()
    api = FakeApi(error)
    probe(api, snap, "team")  # type: ignore[arg-type]
    assert (snap.probes, snap.unreadable) == (probes, unreadable)
    [(method, path, params, body)] = api.sent
    assert (method, path, params) == ("POST", "/api/v1/namespaces/team/pods", {"dryRun": "All"})
    assert body["metadata"]["labels"] == {names.LABEL_INJECT: names.TRUE}
    # Without the webhook's configuration there is nothing to probe.
    snap.lists["mutatingwebhookconfigurations"] = []
    snap._indexes.clear()
    api = FakeApi()
    probe(api, snap, "team")  # type: ignore[arg-type]
    assert api.sent == []
