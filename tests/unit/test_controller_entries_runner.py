"""controller/entries/runner.py with its edges replaced: what runs when, what is written, and that a
failing script is a condition and an Event, never an exception out of the worker's hands."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.entries.runner import MOUNT_RETRY_CAP, NOT_YET_RETRY_CAP, EntryRunner, MountFailed
from kubectl_fluid.api import names
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.podexec import ExecFailed, ExecResult
from kubectl_fluid.kube.resources import CACHERUNTIMECLASSES, CACHERUNTIMES, DATASETS
from kubectl_fluid.kube.watchcache import WatchCache

NS, NAME = "default", "ds"
MOUNT = {"name": "s3", "mountPoint": "s3://b/data"}
MOUNT_UFS = ["bash", "-c", "/app/curvine/mountUfs.sh"]
SUMMARY = ["bash", "-c", "/app/curvine/reportSummary.sh"]
CURVINE_SUMMARY = (
    b'{"cached":"5.00MiB","cachedPercentage":"0","cacheCapacity":"2GiB","cacheHitRatio":"0",'
    b'"fileNum":"4","ufsTotal":"0"}'
)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    async def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


class Runner(EntryRunner):
    """Exec answered from a script of results; status written into the caches as the server would."""

    def __init__(self, results: list[ExecResult | Exception]) -> None:
        def cache(resource: resources.Resource) -> WatchCache:
            return WatchCache(None, resource)  # type: ignore[arg-type]

        self.now = 1000.0
        self.recorder_ = Recorder()
        super().__init__(
            None,  # type: ignore[arg-type]
            cache(DATASETS),
            cache(CACHERUNTIMES),
            cache(CACHERUNTIMECLASSES),
            self.recorder_,  # type: ignore[arg-type]
            summary_period=90,
            clock=lambda: self.now,
        )
        self.results = results
        self.ran: list[list[str]] = []

    async def _exec(self, namespace: str, master: Any, entry: Any) -> ExecResult:
        self.ran.append(entry.command)
        result = self.results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    async def _write_status(self, resource: resources.Resource, obj: dict[str, Any], change: Any) -> None:
        cache = self.datasets if resource is DATASETS else self.runtimes
        held = cache.get(NS, NAME)
        assert held is not None
        patch = change(held.get("status") or {})
        if patch:
            rv = str(int(held["metadata"]["resourceVersion"]) + 1)
            cache.observe({**held, "metadata": {**held["metadata"], "resourceVersion": rv},
                           "status": {**(held.get("status") or {}), **patch}})  # fmt: skip


def ok(stdout: bytes, code: int = 0, stderr: bytes = b"") -> ExecResult:
    return ExecResult(code, stdout, stderr, 0.5, "v5.channel.k8s.io")


def bed(results: list[ExecResult | Exception], *, ready: bool = True, summary: bool = False) -> Runner:
    r = Runner(results)
    entries: dict[str, Any] = {"mountUFS": {"command": MOUNT_UFS, "timeout": 120}}
    if summary:
        entries["ReportSummary"] = {"command": SUMMARY, "timeout": 30}
    r.classes.observe({"metadata": {"name": "curvine", "resourceVersion": "1"},
                       "topology": {"master": {"executionEntries": entries}}})  # fmt: skip
    r.datasets.observe({"metadata": {"namespace": NS, "name": NAME, "resourceVersion": "1"},
                        "spec": {"mounts": [MOUNT]}})  # fmt: skip
    r.runtimes.observe({"metadata": {"namespace": NS, "name": NAME, "resourceVersion": "1"},
                        "spec": {"runtimeClassName": "curvine"}})  # fmt: skip
    master(r, "uid-1", ready)
    return r


def master(r: Runner, uid: str, ready: bool = True) -> None:
    r.pods.observe(
        {
            "metadata": {
                "namespace": NS,
                "name": names.master_pod_name(NAME),
                "uid": uid,
                "resourceVersion": uid,
            },
            "spec": {"containers": [{"name": "master"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]},
        }
    )


def condition(r: Runner) -> dict[str, Any]:
    ds = r.datasets.get(NS, NAME)
    assert ds is not None
    return next(c for c in ds["status"]["conditions"] if c["type"] == names.CONDITION_UFS_UPDATE_READY)


def run(r: Runner) -> float | None:
    return asyncio.run(r.run((NS, NAME)))


def test_mount_ufs_runs_once_per_master_and_mounts() -> None:
    both = ok(b'{"mounted":["/s3","/more"]}')
    r = bed([ok(b'{"mounted":["/s3"]}'), both, both])
    run(r)
    assert r.ran == [MOUNT_UFS]
    assert condition(r)["status"] == "True"
    assert r.datasets.get(NS, NAME)["status"]["mounts"] == [MOUNT]  # type: ignore[index]
    run(r)
    assert len(r.ran) == 1  # nothing changed: not again
    # a mount added: again, no restart
    ds: Any = r.datasets.get(NS, NAME)
    more = [MOUNT, {"name": "more", "mountPoint": "s3://b/more"}]
    r.datasets.observe(
        {**ds, "metadata": {**ds["metadata"], "resourceVersion": "9"}, "spec": {"mounts": more}}
    )
    run(r)
    assert len(r.ran) == 2
    # the master replaced (a new uid): again
    master(r, "uid-2")
    run(r)
    assert len(r.ran) == 3
    assert r.runtimes.get(NS, NAME)["status"]["mountedUfs"].startswith("uid-2/")  # type: ignore[index]


def test_nothing_runs_until_the_master_is_ready() -> None:
    r = bed([], ready=False)
    assert run(r) is None
    assert r.ran == []


def test_a_failing_mount_is_a_condition_and_an_event_with_the_stderr_masked() -> None:
    stderr = (
        b"Running: cv mount s3://b/data /s3 -c s3.credentials.secret=TOPSECRET\nUnable to access UFS: 404\n"
    )
    r = bed([ok(b"", 1, stderr), ExecFailed("exec in default/ds-master-0[master]: refused: 403")])
    with pytest.raises(MountFailed) as failed:
        run(r)
    assert failed.value.cap == MOUNT_RETRY_CAP
    c = condition(r)
    assert (c["status"], c["reason"]) == ("False", names.REASON_MOUNT_UFS_FAILED)
    assert "Unable to access UFS: 404" in c["message"]
    [(type_, reason, message)] = r.recorder_.events
    assert (type_, reason) == ("Warning", names.REASON_MOUNT_UFS_FAILED)
    assert "TOPSECRET" not in message + c["message"]
    assert "mountedUfs" not in (r.runtimes.get(NS, NAME) or {}).get("status", {})  # tried again
    with pytest.raises(MountFailed, match="403"):
        run(r)


def test_an_answer_that_lacks_a_mount_is_not_yet_mounted() -> None:
    r = bed([ok(b'{"mounted":[]}')])
    with pytest.raises(MountFailed, match="not mounted yet: /s3") as failed:
        run(r)
    # The runtime config on its way to the pod: looked at again soon, not after minutes.
    assert failed.value.cap == NOT_YET_RETRY_CAP < MOUNT_RETRY_CAP


def test_report_summary_runs_every_period_and_fills_the_status() -> None:
    r = bed([ok(b'{"mounted":["/s3"]}'), ok(CURVINE_SUMMARY), ok(CURVINE_SUMMARY)], summary=True)
    assert run(r) == 90
    status = r.datasets.get(NS, NAME)["status"]  # type: ignore[index]
    assert status["cacheStates"]["cacheCapacity"] == "2GiB"
    assert (status["fileNum"], status["ufsTotal"]) == ("4", "0")
    r.now += 30
    assert run(r) == pytest.approx(60)
    assert r.ran == [MOUNT_UFS, SUMMARY]
    r.now += 60
    run(r)
    assert r.ran == [MOUNT_UFS, SUMMARY, SUMMARY]
    r.results.append(ok(CURVINE_SUMMARY))
    r.summarise_now((NS, NAME))  # on demand: runs within the period
    assert run(r) == 90
    assert r.ran == [MOUNT_UFS, SUMMARY, SUMMARY, SUMMARY]


def test_a_failing_summary_is_an_event_and_keeps_the_states() -> None:
    r = bed([ok(b'{"mounted":["/s3"]}'), ok(b"not json")], summary=True)
    assert run(r) == 90
    assert [e[1] for e in r.recorder_.events] == [names.REASON_REPORT_SUMMARY_FAILED]
    assert "cacheStates" not in r.datasets.get(NS, NAME)["status"]  # type: ignore[index]


def test_new_mounts_start_a_new_series_of_tries() -> None:
    r = bed([])
    key = (NS, NAME)
    ds: Any = r.datasets.get(NS, NAME)

    def event(mounts: list[dict[str, Any]]) -> None:
        for handler in r.datasets._handlers:
            handler("MODIFIED", {**ds, "spec": {"mounts": mounts}})

    event([MOUNT])
    for _ in range(5):
        r.queue.backoff.when(key)  # five failed tries of a broken mount
    event([MOUNT])  # another change of the Dataset: the series goes on
    assert r.queue.backoff.retries(key) == 5
    event([MOUNT, {"name": "fixed", "mountPoint": "s3://b/fixed"}])
    assert r.queue.backoff.retries(key) == 0


def test_back_to_the_mounts_last_mounted_is_mounted_again_without_a_run() -> None:
    r = bed([ok(b'{"mounted":["/s3"]}'), ok(b"", 1, b"NoSuchBucket")])
    run(r)
    ds: Any = r.datasets.get(NS, NAME)
    broken = [MOUNT, {"name": "broken", "mountPoint": "s3://nope/x"}]
    r.datasets.observe(
        {**ds, "metadata": {**ds["metadata"], "resourceVersion": "20"}, "spec": {"mounts": broken}}
    )
    with pytest.raises(MountFailed):
        run(r)
    assert condition(r)["status"] == "False"
    ds = r.datasets.get(NS, NAME)
    r.datasets.observe(
        {**ds, "metadata": {**ds["metadata"], "resourceVersion": "30"}, "spec": {"mounts": [MOUNT]}}
    )
    run(r)
    assert len(r.ran) == 2  # no third run: this master mounted exactly these
    assert (condition(r)["status"], condition(r)["reason"]) == ("True", names.REASON_UFS_MOUNTED)
