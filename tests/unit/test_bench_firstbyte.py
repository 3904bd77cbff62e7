"""Time to first byte by stage (tests/bench/firstbyte.py): the charges along the critical path tile the
span from the apply to the last milestone, never negative, whatever order the milestones were seen in;
the product's share; and its picture (tests/bench/svg.py: stages)."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.bench import firstbyte, svg
from tests.bench.firstbyte import STEPS, Charge, Step, critical_path, product_share

NS = "{http://www.w3.org/2000/svg}"
MILESTONES = [s.ends_at for s in STEPS]

times = st.floats(min_value=0, max_value=1e4, allow_nan=False)
seens = st.dictionaries(st.sampled_from(MILESTONES), times)


@given(start=times, seen=seens)
def test_the_charges_are_never_negative_and_sum_to_the_span_to_the_last_milestone(
    start: float, seen: dict[str, float]
) -> None:
    charges = critical_path(start, seen)
    assert [c.step for c in charges] == list(STEPS)
    assert all(c.seconds >= 0 for c in charges)
    last = max([start, *seen.values()])
    assert firstbyte.total(charges) == pytest.approx(last - start, abs=1e-6)
    assert 0 <= product_share(charges) <= 100 + 1e-9


@given(start=times, gaps=st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=len(STEPS),
                                   max_size=len(STEPS)))  # fmt: skip
def test_milestones_in_order_charge_each_stage_its_own_gap(start: float, gaps: list[float]) -> None:
    seen, at = {}, start
    for step, gap in zip(STEPS, gaps, strict=True):
        at += gap
        seen[step.ends_at] = at
    charges = critical_path(start, seen)
    assert [c.seconds for c in charges] == pytest.approx(gaps, abs=1e-6)


def test_a_stage_done_before_the_one_ahead_of_it_is_charged_nothing_and_a_missing_one_too() -> None:
    steps = (Step("a", "a", True), Step("b", "b", False), Step("c", "c", False), Step("d", "d", True))
    charges = critical_path(10.0, {"a": 11.0, "b": 15.0, "c": 12.0, "d": 15.5}, steps)
    assert [c.seconds for c in charges] == [1.0, 4.0, 0.0, 0.5]
    charges = critical_path(10.0, {"a": 11.0, "d": 13.0}, steps)
    assert [c.seconds for c in charges] == [1.0, 0.0, 0.0, 2.0]
    assert product_share(charges) == 100.0
    assert product_share([Charge(steps[0], 0.0)]) == 0.0  # nothing measured: no share, no division


def test_log_times_and_the_start_of_the_work_a_line_reports() -> None:
    assert firstbyte.log_time("1970-01-01T00:00:01.250Z") == 1.25
    line = {"ts": "1970-01-01T00:00:10.500Z", "msg": "staged", "seconds": 2.25}
    assert firstbyte.started_at(line) == 8.25
    assert firstbyte.first([(3.0, "x"), (1.0, "y"), (2.0, "x")], lambda o: o == "x") == 2.0
    assert firstbyte.first([(1.0, "y")], lambda o: o == "x") is None
    pod = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert firstbyte.condition_true(pod, "Ready")
    assert not firstbyte.condition_true({"status": {}}, "Ready")
    started = {"state": {"running": {"startedAt": "2026-12-05T12:00:00Z"}}}
    assert firstbyte.running({"status": {"containerStatuses": [started, started]}})
    assert not firstbyte.running({"status": {"containerStatuses": [started, {"state": {"waiting": {}}}]}})
    assert not firstbyte.running({"status": {}})


words = st.text(st.characters(whitelist_categories=("L", "N", "P", "Zs")), min_size=1, max_size=40)


@given(parts=st.lists(st.tuples(words, st.floats(min_value=0, max_value=1e3),
                                st.sampled_from(["product", "components"])), max_size=16))  # fmt: skip
def test_stages_draws_one_bar_per_stage_each_starting_where_the_one_above_ended(
    parts: list[tuple[str, float, str]],
) -> None:
    root = ET.fromstring(svg.stages("time to first byte", parts))
    bars = [r for r in root.iter(f"{NS}rect") if r.attrib.get("class") == "stage"]
    assert len(bars) == len(parts)
    for above, below in itertools.pairwise(bars):
        end = float(above.attrib["x"]) + float(above.attrib["width"])
        assert float(below.attrib["x"]) <= end + 0.11
        assert float(below.attrib["x"]) >= float(above.attrib["x"])
    width = int(root.attrib["width"])
    assert all(float(b.attrib["x"]) + float(b.attrib["width"]) <= width for b in bars)


def test_the_products_own_spans_are_those_whose_two_ends_were_seen_and_never_negative() -> None:
    seen = {
        "stored": 1.0,
        "rendered": 1.5,
        "master ready": 9.0,
        "mountUFS started": 8.99,
        "NodePublish done": 3,
    }
    assert firstbyte.own_spans(seen) == {"controller render": 0.5, "mountUFS wait for the controller": 0.0}


class Seen:
    """A stand-in for bench_firstbyte.Watch: its events, already stamped."""

    def __init__(self, *objects: tuple[float, dict[str, Any]]) -> None:
        self.stamped = list(objects)

    def objects(self) -> list[tuple[float, dict[str, Any]]]:
        return self.stamped


def named(name: str, **rest: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {}, **rest}


def test_the_milestones_come_from_the_watches_the_log_lines_and_the_apps_own_clock() -> None:
    from csi.model.clientvolume import client_mount_key
    from kubectl_fluid.api import names
    from tests.bench import bench_firstbyte as b

    ready: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True"}]}
    up: dict[str, Any] = {"containerStatuses": [{"state": {"running": {}}}]}
    master = names.master_pod_name(b.NAME)
    watches = {kind: Seen() for kind in (*b.WATCHED, "persistentvolumes")}
    watches["pods"] = Seen(
        (3.0, named(master, status=up)),
        (9.0, named(master, status={**up, **ready})),
        (2.0, {"metadata": {"name": b.APP}, "spec": {"nodeName": b.NODE}}),
        (4.0, named(f"{names.component_name(b.NAME, 'client')}-x7k2p", status=ready)),
    )
    watches[f"datasets.{names.GROUP}"] = Seen((1.0, named(b.NAME)))
    watches[f"cacheruntimes.{names.GROUP}"] = Seen((1.1, named(b.NAME)))
    pv, key = names.dataset_pv(b.APPS, b.NAME), client_mount_key(b.APPS, b.NAME)
    controller = [{"ts": "1970-01-01T00:00:10.000Z", "msg": "mountUFS ran", "exit": 0, "seconds": 0.5}]
    node = [
        {"ts": "1970-01-01T00:00:08.000Z", "msg": "client mounted", "mount_key": key},
        {"ts": "1970-01-01T00:00:08.100Z", "msg": "staged", "volume_id": pv, "seconds": 6.1},
        {"ts": "1970-01-01T00:00:08.300Z", "msg": "published", "volume_id": pv, "seconds": 0.05},
        {"ts": "1970-01-01T00:00:08.400Z", "msg": "published", "volume_id": "another", "seconds": 0.01},
    ]
    app_log = "started 9.5\n\nread 10.25 10.5 12\n"
    seen = b.milestones(watches, controller, node, app_log)  # type: ignore[arg-type]
    assert seen == pytest.approx({
        "stored": 1.1, "master started": 3.0, "master ready": 9.0, "app scheduled": 2.0, "client ready": 4.0,
        "mountUFS started": 9.5, "mountUFS done": 10.0, "client mounted": 8.0, "NodeStage called": 2.0,
        "NodeStage done": 8.1, "NodePublish called": 8.25, "NodePublish done": 8.3,
        "container started": 9.5, "read began": 10.25, "first byte": 10.5,
    })  # fmt: skip
    assert "rendered" not in seen  # a child never seen: the render's end unknown, not guessed
