"""The execution entries' pure parts (controller/entries/plan.py, summary.py): when mountUFS is due,
what its answer means, and reportSummary's output in upstream's (and Curvine's) format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.entries import plan
from controller.entries.redact import redact
from controller.entries.summary import CACHE_STATE_KEYS, SummaryError, changed, summary_status
from kubectl_fluid.api.dataset import cache_mount_paths

S3 = {"name": "s3", "mountPoint": "s3://bucket/data", "options": {"endpoint_url": "http://s3:9000"}}


def pod(uid: str = "u1", ready: bool = True, phase: str = "Running", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "ds-master-0", "uid": uid, **meta},
        "spec": {"containers": [{"name": "master"}, {"name": "sidecar"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


def test_the_master_is_the_first_container_of_a_ready_running_pod() -> None:
    assert plan.master_pod(pod()) == plan.MasterPod("ds-master-0", "u1", "master", True)
    assert not plan.master_pod(pod(ready=False)).ready  # type: ignore[union-attr]
    assert not plan.master_pod(pod(phase="Pending")).ready  # type: ignore[union-attr]
    assert plan.master_pod(pod(deletionTimestamp="2026-12-05T00:00:00Z")) is None
    assert plan.master_pod(None) is None


def test_mount_is_due_once_per_master_pod_and_mounts() -> None:
    master = plan.master_pod(pod("u1"))
    assert plan.mount_due(None, master, [S3])
    assert master is not None
    record = plan.mount_record(master, [S3])
    assert record.startswith("u1/0/")
    assert not plan.mount_due(record, master, [S3])
    # spec.mounts changed: due again.
    assert plan.mount_due(record, master, [S3, {**S3, "name": "more"}])
    # the master pod replaced (a new uid under the same name): due again.
    assert plan.mount_due(record, plan.master_pod(pod("u2")), [S3])
    # the master's container restarted in the same pod (upstream: started after the last mount): again.
    restarted = pod("u1")
    restarted["status"]["containerStatuses"] = [
        {"name": "sidecar", "restartCount": 5},
        {"name": "master", "restartCount": 1},
    ]
    assert plan.master_pod(restarted).restarts == 1  # type: ignore[union-attr]
    assert plan.mount_due(record, plan.master_pod(restarted), [S3])
    # not Ready, or no pod: nothing runs.
    assert not plan.mount_due(None, plan.master_pod(pod(ready=False)), [S3])
    assert not plan.mount_due(None, None, [S3])


def test_the_hash_ignores_key_order_but_not_values() -> None:
    assert plan.mounts_hash([{"a": 1, "b": 2}]) == plan.mounts_hash([{"b": 2, "a": 1}])
    assert plan.mounts_hash([S3]) != plan.mounts_hash([{**S3, "options": {}}])
    assert plan.mounts_hash(None) == plan.mounts_hash([])


def test_the_cache_mount_paths_as_upstream_builds_them_without_native_schemes() -> None:
    mounts: list[dict[str, Any]] = [
        S3,
        {"name": "/lead", "mountPoint": "s3://b/x"},
        {"name": "n", "path": "/abs/p", "mountPoint": "s3://b/y"},
        {"name": "rel", "path": "relative", "mountPoint": "s3://b/z"},
        {"name": "l", "mountPoint": "local:///mnt/x"},
        {"name": "p", "mountPoint": "pvc://claim"},
    ]
    assert cache_mount_paths(mounts) == ["/s3", "/lead", "/abs/p", "/rel"]


def test_mounted_paths_reads_upstreams_output() -> None:
    assert plan.mounted_paths(b'{"mounted":["/s3","/x"]}\n') == ["/s3", "/x"]
    assert plan.mounted_paths("{}") == []  # upstream's field is omitempty
    for bad in (b"", b"  \n", b"mounted /s3", b"[]", b'{"mounted": "/s3"}', b'{"mounted": [1]}'):
        with pytest.raises(plan.MountOutputError):
            plan.mounted_paths(bad)


def test_every_expected_path_must_be_mounted_extras_are_only_reported() -> None:
    check = plan.check_mounted(["/a", "/b"], ["/b", "/old", "/a"])
    assert check.ok
    assert check.extra == ["/old"]
    missing = plan.check_mounted(["/a", "/b"], ["/a"])
    assert not missing.ok
    assert missing.missing == ["/b"]


def test_timeouts_are_at_least_upstreams_minimum() -> None:
    assert (plan.timeout_of(None), plan.timeout_of(5), plan.timeout_of(120)) == (20, 20, 120)


# ---------------------------------------------------------------------------- reportSummary

# `cv report fluid-summary`, as Curvine prints it (cv-s3-ufs.md, measured).
CURVINE = (
    b'{"cached":"5.00MiB","cachedPercentage":"0","cacheCapacity":"251.97GiB","cacheHitRatio":"0",'
    b'"fileNum":"4","ufsTotal":"0"}\n'
)


def test_curvines_summary_fills_cache_states_ufs_total_and_file_num() -> None:
    assert summary_status(CURVINE) == {
        "cacheStates": {
            "cached": "5.00MiB",
            "cachedPercentage": "0",
            "cacheCapacity": "251.97GiB",
            "cacheHitRatio": "0",
        },
        "fileNum": "4",
        "ufsTotal": "0",
    }


def test_upstreams_four_fields_alone_set_cache_states_only() -> None:
    out = summary_status('{"cached":"1GiB","cacheCapacity":"2GiB"}')
    assert out == {
        "cacheStates": {
            "cached": "1GiB",
            "cachedPercentage": "",
            "cacheCapacity": "2GiB",
            "cacheHitRatio": "",
        }
    }


def test_numbers_are_taken_as_their_text() -> None:
    assert summary_status('{"fileNum": 4, "cachedPercentage": 99.5}')["fileNum"] == "4"
    assert summary_status('{"cachedPercentage": 99.5}')["cacheStates"]["cachedPercentage"] == "99.5"


@pytest.mark.parametrize(
    "bad", [b"", b"live_worker_num=1", b"[1, 2]", b'{"cached": {"a": 1}}', b'{"fileNum": true}']
)
def test_anything_else_is_an_error(bad: bytes) -> None:
    with pytest.raises(SummaryError):
        summary_status(bad)


def test_changed_compares_only_the_fields_the_summary_sets() -> None:
    fields = summary_status(CURVINE)
    status = {"phase": "Bound", **fields}
    assert not changed(status, fields)
    assert changed({**status, "fileNum": "3"}, fields)
    assert changed(None, fields)


text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)


@given(st.dictionaries(st.sampled_from([*CACHE_STATE_KEYS, "fileNum", "ufsTotal", "other"]), text))
def test_any_object_of_strings_round_trips_into_the_status(summary: dict[str, str]) -> None:
    out = summary_status(json.dumps(summary))
    assert out["cacheStates"] == {k: summary.get(k, "") for k in CACHE_STATE_KEYS}
    assert {k: v for k, v in out.items() if k != "cacheStates"} == {
        k: summary[k] for k in ("ufsTotal", "fileNum") if k in summary
    }


# ---------------------------------------------------------------------------- redaction


def test_curvines_logged_command_line_loses_its_keys() -> None:
    line = (
        "Running: /app/curvine/bin/cv mount s3://b/x /x --check-path-consist false -c "
        "s3.endpoint_url=http://10.1.0.1:9000 -c s3.credentials.access=AKIA123 -c "
        "s3.credentials.secret=s3cr3t/with+chars --conf /app/curvine/conf/curvine-cluster.toml"
    )
    out = redact(line)
    assert "AKIA123" not in out
    assert "s3cr3t" not in out
    assert "s3.endpoint_url=http://10.1.0.1:9000" in out
    assert "s3.credentials.secret=******" in out


@pytest.mark.parametrize(
    "text",
    ['password: "a b c"', "aws_secret_access_key = abc", "TOKEN=abc", "private-key: abc", "secret-key=abc"],
)
def test_credential_values_are_masked_in_any_common_form(text: str) -> None:
    assert "abc" not in redact(text)
    assert "a b c" not in redact(text)


def test_text_without_credentials_is_unchanged() -> None:
    text = "Unable to access UFS s3://no-such-bucket/x: 404 NoSuchBucket"
    assert redact(text) == text
