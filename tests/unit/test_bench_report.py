"""make bench's table and JSON: goals judged on the value or on the ratio to the baseline."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.bench.report import Report, at_least, at_most, ratio_at_least, ratio_at_most


def test_a_goal_on_the_value_is_judged_without_a_baseline() -> None:
    report = Report()
    report.add("warm NodePublish", 3.2, "ms", goal=at_most(2, "ms"))
    report.add("pairs per second", 600, "pairs/s", goal=at_least(500, "pairs/s"))
    assert [r.met for r in report.rows] == [False, True]
    assert report.table()[0][-2:] == ["<= 2 ms", "NO"]
    assert report.table()[1][-2:] == [">= 500 pairs/s", "yes"]


def test_a_goal_on_the_ratio_needs_a_baseline() -> None:
    report = Report()
    report.add("config show", 109, "ms", "kubectl get", 66, goal=ratio_at_most(1.5))
    report.add("saturated", 4060, "req/s", "Go", 7410, goal=ratio_at_least(0.75))
    report.add("no baseline measured", 5, "ms", "kubectl get", None, goal=ratio_at_most(1.5))
    assert [r.met for r in report.rows] == [False, False, None]
    assert report.table()[0][5] == "1.65x"
    assert report.table()[2][-1] == ""


def test_a_figure_without_a_goal_has_empty_goal_cells() -> None:
    report = Report()
    report.add("node service RSS", 73, "MB")
    assert report.table()[0][-3:] == ["", "", ""]


def test_the_json_file_holds_every_row_with_its_ratio_goal_and_verdict(tmp_path: Path) -> None:
    report = Report()
    report.add("admission p99 at 300 req/s", 1.82, "ms", "Go webhook", 1.52, goal=ratio_at_most(1.3))
    report.add("controller RSS", 90, "MB")
    out = tmp_path / "deep" / "bench.json"
    report.write_json(out)
    rows = json.loads(out.read_text())
    assert rows[0]["name"] == "admission p99 at 300 req/s"
    assert rows[0]["ratio"] == 1.82 / 1.52
    assert (rows[0]["goal"], rows[0]["met"]) == ("ratio <= 1.3x", True)
    assert (rows[1]["goal"], rows[1]["met"], rows[1]["baseline"]) == (None, None, None)


@given(
    st.floats(min_value=1e-6, max_value=1e6),
    st.floats(min_value=1e-6, max_value=1e6),
    st.floats(min_value=0.01, max_value=100),
)
def test_ratio_goals_agree_with_the_printed_comparison(value: float, baseline: float, limit: float) -> None:
    report = Report()
    report.add("x", value, "ms", "base", baseline, goal=ratio_at_most(limit))
    report.add("y", value, "ms", "base", baseline, goal=ratio_at_least(limit))
    low, high = report.rows
    assert low.met == (value / baseline <= limit)
    assert high.met == (value / baseline >= limit)
    assert low.met or high.met


def test_a_counter_is_summed_over_its_label_sets_and_nothing_else() -> None:
    from tests.bench.bench_controller import counter_total

    text = "\n".join(
        [
            "# HELP fluid_controller_api_writes_total Write requests sent to the API server.",
            "# TYPE fluid_controller_api_writes_total counter",
            'fluid_controller_api_writes_total{verb="apply",resource="configmaps"} 500.0',
            'fluid_controller_api_writes_total{verb="patch",resource="datasets"} 12.0',
            'fluid_controller_api_writes_total_created{verb="apply",resource="configmaps"} 1.7e9',
            "fluid_controller_api_writes 3.0",
        ]
    )
    assert counter_total(text, "fluid_controller_api_writes_total") == 512.0
    assert counter_total("", "fluid_controller_api_writes_total") == 0


def test_the_controller_baseline_writes_every_object_the_controller_writes() -> None:
    """Issue 15: the baseline is fair only if it writes all the children, not just the ConfigMaps."""
    import json
    from pathlib import Path

    import yaml

    from controller.desired import desired_children
    from kubectl_fluid.api.cacheruntime import CacheRuntime
    from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
    from kubectl_fluid.api.dataset import Dataset
    from tests.bench.bench_controller import UID, pair, pair_writes

    crc = CacheRuntimeClass.model_validate(
        yaml.safe_load(Path("manifests/samples/cacheruntimeclass-mooncake.yaml").read_text())
    )
    ds, rt = pair(7)
    waves = pair_writes(ds, rt, crc, "ns")
    rt_obj = {**rt, "metadata": {**rt["metadata"], "namespace": "ns", "uid": UID}}
    ds_obj = {**ds, "metadata": {**ds["metadata"], "namespace": "ns"}}
    children = desired_children(
        Dataset.model_validate(ds_obj), CacheRuntime.model_validate(rt_obj), crc, "ns"
    )
    applied = sorted(
        (body["kind"], body["metadata"]["name"])
        for wave in waves
        for _, _, ctype, text in wave
        if ctype == "application/apply-patch+yaml"
        for body in [json.loads(text)]
    )
    assert applied == sorted(
        (o["kind"], o["metadata"]["name"]) for o in [*children.namespaced(), children.pv]
    )
    paths = [path for wave in waves for _, path, _, _ in wave]
    assert sum(p.endswith("/status") for p in paths) == 2  # the runtime's and the Dataset's
    assert [w[2] for w in waves[0]].count("application/json-patch+json") == 1  # the finalizer
    # The PV only after the finalizer, the statuses last: the controller's order.
    assert any("persistentvolumes/" in p for _, p, _, _ in waves[1])
    assert all(p.endswith("/status") for _, p, _, _ in waves[2])


def test_pictures_are_written_beside_the_json_file_named_after_it(tmp_path: Path) -> None:
    report = Report()
    report.picture("admission-latency.svg", "<svg/>")
    out = tmp_path / "runs" / "bench.json"
    report.write_json(out)
    assert (tmp_path / "runs" / "bench-admission-latency.svg").read_text() == "<svg/>"
