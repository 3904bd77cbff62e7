"""The phases of a Dataset's DataLoads (controller/dataload/plan.py): checked, Pending, the lock,
Executing with its Job, the Job's end, the lock released, TTL."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.dataload.plan import (
    PROGRESS_PERIOD,
    WAIT_RECHECK,
    CreateJob,
    Delete,
    Lock,
    Note,
    Status,
    UpdateCronJob,
    View,
    go_duration,
    plan,
)
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from tests.unit.desired_samples import CURVINE_CLASS, FUSE_RUNTIME, NAMESPACE

NOW = "2026-12-05T01:10:00Z"
LOAD_SPEC = {"name": "DataLoad", "command": ["sh", "-c", "true"]}


def dl(
    name: str, phase: str | None = None, created: str = "2026-12-05T01:00:00Z", **spec: Any
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": names.API_VERSION,
        "kind": "DataLoad",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
        },
        "spec": {"dataset": {"name": "ds1"}, **spec},
    }
    if phase is not None:
        obj["status"] = {"phase": phase, "duration": "Unfinished", "conditions": []}
    return obj


def ready_runtime() -> CacheRuntime:
    obj = copy.deepcopy(FUSE_RUNTIME)
    obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}]}
    return CacheRuntime.model_validate(obj)


def view(
    *dataloads: dict[str, Any],
    holder: str | None = None,
    bound: bool = True,
    specs: tuple[dict[str, Any], ...] = (LOAD_SPEC,),
    jobs: dict[str, Any] | None = None,
    runtime: CacheRuntime | None = None,
) -> View:
    status: dict[str, Any] = {"phase": "Bound" if bound else "NotBound"}
    if holder:
        status["operationRef"] = {"DataLoad": holder}
    return View(
        namespace=NAMESPACE,
        dataset="ds1",
        dataset_obj={"metadata": {"name": "ds1", "resourceVersion": "7"}, "status": status},
        runtime=runtime or ready_runtime(),
        runtime_class=CacheRuntimeClass.model_validate({**CURVINE_CLASS, "dataOperationSpecs": list(specs)}),
        dataloads=list(dataloads),
        jobs=jobs or {},
        now=NOW,
    )


def job(name: str, condition: str | None = None, reason: str = "") -> dict[str, Any]:
    status = {
        "conditions": [{"type": condition, "status": "True", "reason": reason, "lastTransitionTime": NOW}]
    }
    return {"metadata": {"name": names.dataload_job(name)}, "status": status if condition else {}}


def test_a_new_dataload_goes_pending_unfinished() -> None:
    (step,) = plan(view(dl("a"))).steps
    assert isinstance(step, Status)
    assert step.status == {"phase": "Pending", "duration": "Unfinished", "conditions": [], "infos": {}}


def test_a_class_without_a_dataload_spec_fails_it_with_the_reason() -> None:
    (step,) = plan(view(dl("a"), specs=())).steps
    assert isinstance(step, Status)
    assert step.status["phase"] == "Failed"
    (cond,) = step.status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Failed", "True", "DataOperationNotSupport")
    assert "no dataOperationSpecs entry named DataLoad" in cond["message"]
    assert step.event is not None
    assert step.event.type == "Warning"
    assert step.status["duration"] == "10m0s"


def test_what_this_controller_does_not_run_fails_clearly() -> None:
    for spec, words in (
        ({"policy": "Cron"}, "policy Cron needs a schedule"),
        ({"policy": "OnEvent"}, "policy OnEvent"),
        ({"runAfter": {"kind": "DataLoad", "name": "x"}}, "runAfter"),
        ({"dataset": {"name": "ds1", "namespace": "elsewhere"}}, "one namespace"),
    ):
        (step,) = plan(view(dl("a", **spec))).steps
        assert isinstance(step, Status), spec
        assert step.status["phase"] == "Failed", spec
        assert words in step.status["conditions"][0]["message"]


def test_a_pending_dataload_takes_the_free_lock_and_executes() -> None:
    steps = plan(view(dl("a", "Pending"))).steps
    assert steps[0] == Lock("a")
    assert isinstance(steps[1], Status)
    assert steps[1].status["phase"] == "Executing"


def test_a_pending_dataload_waits_for_a_bound_dataset_and_a_ready_runtime() -> None:
    waiting = plan(view(dl("a", "Pending"), bound=False))
    assert waiting.requeue_after == WAIT_RECHECK  # the reconciler's own writes may never reach the room
    (note,) = waiting.steps
    assert isinstance(note, Note)
    assert "not Bound" in note.event.message
    not_ready = CacheRuntime.model_validate(FUSE_RUNTIME)
    (note,) = plan(view(dl("a", "Pending"), runtime=not_ready)).steps
    assert isinstance(note, Note)
    assert "not Ready" in note.event.message


def test_two_at_once_run_one_after_the_other_oldest_first() -> None:
    older, younger = dl("b", "Pending", "2026-12-05T01:00:00Z"), dl("a", "Pending", "2026-12-05T01:00:05Z")
    steps = plan(view(younger, older)).steps
    assert steps[0] == Lock("b")
    assert isinstance(steps[2], Note)
    assert steps[2].name == "a"
    assert "DataLoad b is running" in steps[2].event.message
    # b executing and holding the lock: a still waits.
    steps = plan(view(dl("b", "Executing"), younger, holder="b", jobs={"b-loader-job": job("b")})).steps
    assert [type(s) for s in steps] == [Note]


def test_an_executing_dataload_gets_its_job_once() -> None:
    (create,) = plan(view(dl("a", "Executing"), holder="a")).steps
    assert isinstance(create, CreateJob)
    assert create.job["metadata"]["name"] == "a-loader-job"
    assert plan(view(dl("a", "Executing"), holder="a", jobs={"a-loader-job": job("a")})).steps == []


def test_the_jobs_end_ends_it_and_releases_the_lock_for_the_next() -> None:
    jobs = {"a-loader-job": job("a", "Complete", "CompletionsReached")}
    steps = plan(
        view(dl("a", "Executing"), dl("b", "Pending", "2026-12-05T01:01:00Z"), holder="a", jobs=jobs)
    ).steps
    assert steps[0] == Lock("b")  # the next one takes it in the same pass, before a's end is written
    done = steps[1]
    assert isinstance(done, Status)
    assert done.status["phase"] == "Complete"
    assert done.status["duration"] == "10m0s"
    assert done.status["conditions"][0]["type"] == "Complete"
    assert done.event is not None
    assert done.event.reason == "DataOperationSucceed"

    jobs = {"a-loader-job": job("a", "Failed", "BackoffLimitExceeded")}
    steps = plan(view(dl("a", "Executing"), holder="a", jobs=jobs)).steps
    assert steps[0] == Lock(None)  # released before the end is written: never Failed and holding it
    assert isinstance(steps[1], Status)
    assert steps[1].status["phase"] == "Failed"
    assert steps[1].event is not None
    assert steps[1].event.type == "Warning"


def test_a_lock_naming_a_deleted_or_finished_dataload_is_free() -> None:
    assert plan(view(dl("c", "Complete"), holder="gone")).steps == [Lock(None)]
    steps = plan(view(dl("b", "Pending"), holder="gone")).steps
    assert steps[0] == Lock("b")


def test_ttl_after_finished_deletes_it_once_passed() -> None:
    finished = dl("a", "Complete", ttlSecondsAfterFinished=60)
    finished["status"]["conditions"] = [
        {"type": "Complete", "status": "True", "lastTransitionTime": "2026-12-05T01:09:30Z"}
    ]
    result = plan(view(finished))
    assert result.steps == []
    assert result.requeue_after == 30
    finished["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-05T01:08:00Z"
    assert plan(view(finished)).steps == [Delete("a")]


@given(st.integers(0, 10 * 86400))
def test_durations_read_as_gos(seconds: int) -> None:
    text = go_duration(seconds)
    h = int(text.split("h")[0]) if "h" in text else 0
    rest = text.split("h")[-1]
    m = int(rest.split("m")[0]) if "m" in rest else 0
    s = int(rest.split("m")[-1].removesuffix("s"))
    assert h * 3600 + m * 60 + s == seconds
    assert h == 0 or m < 60
    assert s < 60


PHASES = st.sampled_from([None, "Pending", "Executing", "Complete", "Failed"])
JOB_ENDS = st.sampled_from([None, "running", "Complete", "Failed"])


@given(
    st.lists(st.tuples(PHASES, JOB_ENDS), min_size=1, max_size=5),
    st.sampled_from([None, "l0", "l1", "l4", "gone"]),
)
def test_the_lock_is_written_first_and_never_left_to_a_dataload_that_ends(
    loads: list[tuple[str | None, str | None]], holder: str | None
) -> None:
    """One Lock at most, before every status: a watcher that sees a DataLoad end never sees the
    Dataset's lock still naming it."""
    dataloads = [dl(f"l{i}", phase, f"2026-12-05T01:0{i}:00Z") for i, (phase, _) in enumerate(loads)]
    jobs = {
        names.dataload_job(f"l{i}"): job(f"l{i}", None if end == "running" else end)
        for i, (_, end) in enumerate(loads)
        if end is not None
    }
    steps = plan(view(*dataloads, holder=holder, jobs=jobs)).steps
    locks = [i for i, step in enumerate(steps) if isinstance(step, Lock)]
    assert locks in ([], [0])
    ended = {
        step.name
        for step in steps
        if isinstance(step, Status) and step.status.get("phase") in ("Complete", "Failed")
    }
    if holder in ended:
        assert locks == [0]
        first = steps[0]
        assert isinstance(first, Lock)
        assert first.holder != holder


CRON = {"policy": "Cron", "schedule": "*/5 * * * *"}


def cronjob(name: str, scheduled: str | None = None, succeeded: str | None = None) -> dict[str, Any]:
    """The CronJob of Cron DataLoad ``name`` (of CRON, on ds1 without mounts) as the plan made it."""
    status = {k: v for k, v in (("lastScheduleTime", scheduled), ("lastSuccessfulTime", succeeded)) if v}
    (create,) = plan(view(dl(name, "Executing", **CRON), holder=name)).steps
    assert isinstance(create, CreateJob)
    meta = {"name": create.job["metadata"]["name"], "uid": f"cj-{name}"}
    return {"metadata": meta, "spec": create.job["spec"], "status": status}


def cron_job(name: str, created: str, condition: str | None = None) -> dict[str, Any]:
    made = job(name, condition, "CompletionsReached")
    made["metadata"] = {
        "name": f"{names.dataload_job(name)}-{created[-5:-1]}",
        "creationTimestamp": created,
        "ownerReferences": [{"kind": "CronJob", "uid": f"cj-{name}"}],
    }
    return made


def with_cron(base: View, cj: dict[str, Any], *jobs: dict[str, Any]) -> View:
    return replace(base, jobs={j["metadata"]["name"]: j for j in jobs}, cronjobs={cj["metadata"]["name"]: cj})


def test_a_cron_dataload_gets_upstreams_cronjob_with_the_job_as_its_template() -> None:
    (create,) = plan(view(dl("a", "Executing", **CRON), holder="a")).steps
    assert isinstance(create, CreateJob)
    made = create.job
    assert (made["kind"], made["metadata"]["name"]) == ("CronJob", "a-loader-job")
    assert made["metadata"]["labels"]["role"] == "dataload-cronjob"
    assert made["spec"]["schedule"] == "*/5 * * * *"
    template = made["spec"]["jobTemplate"]
    assert template["metadata"]["labels"]["role"] == "dataload-job"  # its Jobs are watched as Once ones
    assert template["spec"]["template"]["spec"]["containers"][0]["command"] == ["sh", "-c", "true"]
    assert made["metadata"]["ownerReferences"][0]["kind"] == "DataLoad"


def test_a_long_named_cron_dataloads_cronjob_is_named_as_the_api_server_allows() -> None:
    name = "nightly-warmup-of-the-imagenet-training-shards"  # 46: its Job's name would be 57
    (create,) = plan(view(dl(name, "Executing", **CRON), holder=name)).steps
    assert isinstance(create, CreateJob)
    cron_name = create.job["metadata"]["name"]
    assert len(cron_name) <= 52 < len(names.dataload_job(name))
    assert cron_name == names.dataload_cronjob(name)
    assert cron_name.startswith("nightly-warmup-of-the-imagenet")
    # Made, it is followed under that name (no second one created).
    cj = cronjob(name)
    assert cj["metadata"]["name"] == cron_name
    assert plan(with_cron(view(dl(name, "Executing", **CRON), holder=name), cj)).steps == []


def test_a_cron_dataloads_cronjob_follows_its_schedule_and_the_datasets_mounts() -> None:
    cj = cronjob("a")
    base = view(dl("a", "Executing", **CRON), holder="a")
    assert plan(with_cron(base, cj)).steps == []  # as made: nothing to do
    assert base.dataset_obj is not None
    mounted = {**base.dataset_obj, "spec": {"mounts": [{"name": "s3data", "mountPoint": "s3://b/d"}]}}
    (update,) = plan(with_cron(replace(base, dataset_obj=mounted), cj)).steps
    assert isinstance(update, UpdateCronJob)
    assert update.name == "a-loader-job"
    env = update.spec["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "FLUID_DATALOAD_DATA_PATH", "value": "/s3data"} in env  # the mount added since
    rescheduled = dl("a", "Executing", policy="Cron", schedule="0 * * * *")
    (update,) = plan(with_cron(replace(base, dataloads=[rescheduled]), cj)).steps
    assert isinstance(update, UpdateCronJob)
    assert update.spec["schedule"] == "0 * * * *"
    # Between runs too (Complete): the next Job is made from the template, so it must be current.
    steps = plan(
        with_cron(replace(base, dataloads=[dl("a", "Complete", **CRON)], dataset_obj=mounted), cj)
    ).steps
    assert [type(step) for step in steps] == [Lock, UpdateCronJob]  # (base's lock named it: released)
    # A DataLoad that names its paths does not follow the mounts.
    named = dl("a", "Executing", target=[{"path": "/x"}], **CRON)
    cj_named = {**cj, "spec": plan(replace(base, dataloads=[named])).steps[0].job["spec"]}  # type: ignore[union-attr]
    assert plan(with_cron(replace(base, dataloads=[named], dataset_obj=mounted), cj_named)).steps == []


def test_a_pending_dataload_that_fails_while_holding_the_lock_releases_it_first() -> None:
    # Its Lock written, its Executing status not (a failed write), then its class lost the spec.
    (release, failed) = plan(view(dl("a", "Pending"), holder="a", specs=())).steps
    assert release == Lock(None)
    assert isinstance(failed, Status)
    assert failed.status["phase"] == "Failed"


def test_a_cron_dataload_follows_its_newest_job_and_runs_again() -> None:
    cj = cronjob("a", scheduled="2026-12-05T01:05:00Z")
    running = cron_job("a", "2026-12-05T01:05:01Z")
    steps = plan(with_cron(view(dl("a", "Executing", **CRON), holder="a"), cj, running)).steps
    assert len(steps) == 1
    assert isinstance(steps[0], Status)
    assert steps[0].status["lastScheduleTime"] == "2026-12-05T01:05:00Z"
    assert steps[0].status["phase"] == "Executing"

    done = cron_job("a", "2026-12-05T01:05:01Z", "Complete")
    steps = plan(with_cron(view(dl("a", "Executing", **CRON), holder="a"), cj, done)).steps
    assert steps[0] == Lock(None)
    assert isinstance(steps[1], Status)
    assert steps[1].status["phase"] == "Complete"
    assert steps[1].status["duration"] == "4m59s"  # from its Job's creation

    # The next Job runs: Pending again (duration "-"), to take the lock before it executes.
    later = cronjob("a", scheduled="2026-12-05T01:10:00Z", succeeded="2026-12-05T01:10:00Z")
    again = cron_job("a", "2026-12-05T01:10:01Z")
    finished = dl("a", "Complete", **CRON)
    steps = plan(with_cron(view(finished), later, done, again)).steps
    (status,) = steps
    assert isinstance(status, Status)
    assert (status.status["phase"], status.status["duration"]) == ("Pending", "-")
    assert status.status["lastSuccessfulTime"] == "2026-12-05T01:10:00Z"


def test_the_summary_is_asked_for_while_a_dataload_loads_and_when_it_ends() -> None:
    running = plan(view(dl("a", "Executing"), holder="a", jobs={"a-loader-job": job("a")}))
    assert running.summarise
    assert running.requeue_after == PROGRESS_PERIOD
    ended = plan(view(dl("a", "Executing"), holder="a", jobs={"a-loader-job": job("a", "Complete")}))
    assert ended.summarise
    for quiet in (
        plan(view(dl("a", "Pending"), bound=False)),  # waiting: nothing loads
        plan(view(dl("a", "Executing"), holder="a")),  # its Job is only being made
        plan(view(dl("a", "Complete"))),
    ):
        assert not quiet.summarise
