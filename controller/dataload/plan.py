"""What the DataLoads of one Dataset need next (pure): upstream's phases of a data operation
(``pkg/ddc/base/operation.go``) and its lock (``operation_lock.go``), over the facts the room reads.

- No phase: checked (its Dataset in its own namespace, a policy this product runs, a class with a
  DataLoad spec), then ``Pending`` with duration ``Unfinished``; a failed check is ``Failed`` with
  the reason, at once.
- ``Pending``: waits for the Dataset to be Bound and its runtime Ready, and for the lock: the
  Dataset's ``status.operationRef.DataLoad`` names the DataLoad running on it. The oldest waiting
  DataLoad takes a free lock (one naming a DataLoad that is gone or finished is free) and goes
  ``Executing``.
- ``Executing``: its Job is made (``job.py``); the Job's ``Complete`` or ``Failed`` condition ends it:
  phase, a condition of that type, duration from its creation to the Job's end, an Event; the lock
  is released first, in the same pass.
- ``Complete``/``Failed``: a lock still naming it is released; ``ttlSecondsAfterFinished`` deletes
  it once the time has passed.

Policy Cron makes a CronJob instead of the Job and follows its newest Job (``cron.py``).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from controller.dataload.cron import build_cronjob, current_job, schedule_times
from controller.dataload.job import Unsupported, build_job, dataload_spec
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataload import DataLoad

Json = dict[str, Any]
FINISHED = (names.PHASE_COMPLETE, names.PHASE_FAILED)
# A waiting DataLoad is looked at again after this long: the reconciler holds its own writes of a
# Dataset's phase and a runtime's Ready (``WatchCache.observe``), so their events may never reach the
# room (upstream requeues a waiting operation after 20 s).
WAIT_RECHECK = 5.0
# While a DataLoad executes, the Dataset's summary is asked for this often (its progress on
# ``kubectl fluid load --wait`` and ``kubectl get dataset``; the summary's own period is 90 s).
PROGRESS_PERIOD = 5.0
# Policies upstream runs for CacheRuntime that this controller does not (yet): failed, never silent.
_UNRUN_POLICIES = {
    "OnEvent": "policy OnEvent is not run for CacheRuntime (nor by upstream); use policy Once or Cron",
}


@dataclass(frozen=True)
class View:
    """What the room knows of one Dataset (``namespace``/``dataset``) and its DataLoads."""

    namespace: str
    dataset: str
    dataset_obj: Json | None
    runtime: CacheRuntime | None
    runtime_class: CacheRuntimeClass | None
    dataloads: list[Json]
    jobs: dict[str, Json]  # by name
    now: str
    cronjobs: dict[str, Json] = field(default_factory=dict)  # by name


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Status:
    """Write ``status`` to DataLoad ``name`` (and record ``event`` on it)."""

    name: str
    status: Json
    event: Event | None = None


@dataclass(frozen=True)
class Note:
    """Only an Event on DataLoad ``name``: why it waits."""

    name: str
    event: Event


@dataclass(frozen=True)
class Lock:
    """Set the Dataset's ``operationRef.DataLoad`` to ``holder`` (None: remove it)."""

    holder: str | None


@dataclass(frozen=True)
class CreateJob:
    """Create ``job``: a Job, or the CronJob of a DataLoad of policy Cron."""

    job: Json


@dataclass(frozen=True)
class UpdateCronJob:
    """Patch the CronJob ``name`` to ``spec`` (its schedule and Job template): a Cron DataLoad's
    schedule, or the Dataset's mounts it loads when it names no path, changed since it was made."""

    name: str
    spec: Json


@dataclass(frozen=True)
class Delete:
    """Delete DataLoad ``name`` (its ttlSecondsAfterFinished has passed)."""

    name: str


Step = Status | Note | Lock | CreateJob | UpdateCronJob | Delete


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    requeue_after: float | None = None
    # What is cached changes (a DataLoad runs or just ended): the Dataset's reportSummary is due now,
    # not at its period, so its cached percentage follows the load.
    summarise: bool = False

    def again_in(self, seconds: float) -> None:
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)


def lock_holder(dataset_obj: Json | None) -> str | None:
    ref = ((dataset_obj or {}).get("status") or {}).get("operationRef") or {}
    holder = ref.get(names.OPERATION_DATALOAD)
    return holder or None


def phase_of(obj: Json) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def plan(view: View) -> Plan:
    out = Plan()
    ordered = sorted(
        view.dataloads, key=lambda o: (o["metadata"].get("creationTimestamp") or "", o["metadata"]["name"])
    )
    by_name = {o["metadata"]["name"]: o for o in ordered}
    named = lock_holder(view.dataset_obj)
    holder = (
        named
        if named and phase_of(by_name.get(named, {})) in (names.PHASE_PENDING, names.PHASE_EXECUTING)
        else None
    )
    for obj in ordered:
        name = obj["metadata"]["name"]
        phase = phase_of(obj)
        if phase == "":
            _check(view, obj, out)
        elif phase == names.PHASE_PENDING:
            holder = _pending(view, obj, holder, out)
        elif phase == names.PHASE_EXECUTING:
            if _executing(view, obj, out) and holder == name:
                holder = None
        elif phase in FINISHED:
            _finished(view, obj, out)
    if named and holder is None and not any(isinstance(s, Lock) for s in out.steps):
        out.steps.append(Lock(None))  # the DataLoad it names is gone or finished
    # The lock first (a plan has one at most): whoever sees a DataLoad Complete or Failed sees the
    # lock released or handed on, never still naming it (upstream releases it a reconcile later).
    out.steps.sort(key=lambda s: not isinstance(s, Lock))
    return out


def _check(view: View, obj: Json, out: Plan) -> None:
    name = obj["metadata"]["name"]
    problem = _problem(view, obj)
    if problem is not None:
        reason, message = problem
        out.steps.append(_failed(view, obj, reason, message))
        return
    status = {
        **(obj.get("status") or {}),
        "phase": names.PHASE_PENDING,
        "duration": names.DURATION_UNFINISHED,
    }
    status.setdefault("conditions", [])
    status["infos"] = {}
    out.steps.append(Status(name, status))


def _problem(view: View, obj: Json) -> tuple[str, str] | None:
    """(reason, message) of why the DataLoad cannot run, if it cannot."""
    try:
        dataload = DataLoad.model_validate(obj)
    except ValidationError as e:
        return names.REASON_OPERATION_NOT_VALID, f"spec: {e.errors()[0].get('msg')}"
    target, spec = dataload.spec.dataset, dataload.spec
    refusals = (
        (
            target is None or not target.name,
            names.REASON_OPERATION_NOT_VALID,
            "spec.dataset.name is required",
        ),
        (
            target is not None and bool(target.namespace) and target.namespace != view.namespace,
            names.REASON_OPERATION_NOT_VALID,
            f"the DataLoad and its Dataset must be in one namespace: spec.dataset.namespace is "
            f"{target.namespace if target else ''}, the DataLoad's is {view.namespace}",
        ),
        (
            spec.run_after is not None,
            names.REASON_OPERATION_NOT_SUPPORTED,
            "runAfter is not run by this controller (it runs no other data operation to wait for)",
        ),
        (
            spec.policy in _UNRUN_POLICIES,
            names.REASON_OPERATION_NOT_SUPPORTED,
            _UNRUN_POLICIES.get(spec.policy, ""),
        ),
        (
            spec.policy == names.POLICY_CRON and not (spec.schedule or "").strip(),
            names.REASON_OPERATION_NOT_VALID,
            "policy Cron needs a schedule (cron format, e.g. */30 * * * *)",
        ),
    )
    for refused, reason, message in refusals:
        if refused:
            return reason, message
    if view.runtime_class is not None:
        try:
            dataload_spec(view.runtime_class)
        except Unsupported as e:
            return e.reason, str(e)
    return None


def _pending(view: View, obj: Json, holder: str | None, out: Plan) -> str | None:
    name: str = obj["metadata"]["name"]
    problem = _problem(view, obj)
    if problem is not None:
        out.steps.append(_failed(view, obj, *problem))
        return None if holder == name else holder  # ended: a lock it holds is released first
    waiting = _not_ready(view)
    if waiting is None and holder is not None and holder != name:
        waiting = f"DataLoad {holder} is running on Dataset {view.dataset}; this one runs after it"
    if waiting is not None:
        out.steps.append(Note(name, Event("Normal", names.REASON_OPERATION_WAITING, waiting)))
        out.again_in(WAIT_RECHECK)
        return holder
    out.steps.append(Lock(name))
    out.steps.append(Status(name, {**(obj.get("status") or {}), "phase": names.PHASE_EXECUTING}))
    return name


def _not_ready(view: View) -> str | None:
    if view.dataset_obj is None:
        return f"no Dataset {view.dataset} in namespace {view.namespace}"
    if view.runtime is None or view.runtime_class is None:
        return f"Dataset {view.dataset} has no CacheRuntime (or its CacheRuntimeClass) yet"
    if (view.dataset_obj.get("status") or {}).get("phase") != "Bound":
        return f"Dataset {view.dataset} is not Bound yet"
    ready = next(
        (
            c
            for c in (view.runtime.status.conditions if view.runtime.status else ())
            if c.type == names.CONDITION_READY
        ),
        None,
    )
    if ready is None or ready.status != "True":
        return f"CacheRuntime {view.dataset} is not Ready yet"
    return None


def _executing(view: View, obj: Json, out: Plan) -> bool:
    """Steps of a running DataLoad; True when it ends in this pass."""
    name = obj["metadata"]["name"]
    cron = _is_cron(obj)
    made = (
        view.cronjobs.get(names.dataload_cronjob(name)) if cron else view.jobs.get(names.dataload_job(name))
    )
    if made is None:
        if view.runtime is None or view.runtime_class is None:
            out.steps.append(
                _failed(view, obj, names.REASON_OPERATION_FAILED, f"the CacheRuntime {view.dataset} is gone")
            )
            return True
        try:
            built = _built(view, obj)
        except Unsupported as e:
            out.steps.append(_failed(view, obj, e.reason, str(e)))
            return True
        out.steps.append(CreateJob(built))
        return False
    if cron and view.runtime is not None and view.runtime_class is not None:
        _follow(view, obj, made, out)
    job = current_job(made, list(view.jobs.values())) if cron else made
    ended = _job_end(job) if job is not None else None
    if ended is None:
        times = schedule_times(made) if cron else {}
        if times and any((obj.get("status") or {}).get(k) != v for k, v in times.items()):
            out.steps.append(Status(name, {**(obj.get("status") or {}), **times}))
        if job is not None:  # loading (a Cron DataLoad's CronJob may have no Job yet)
            out.summarise = True
            out.again_in(PROGRESS_PERIOD)
        return False
    kind, reason, message, at = ended
    if kind == names.PHASE_COMPLETE:
        event = Event("Normal", names.REASON_OPERATION_SUCCEEDED, f"DataLoad {name} succeeded")
    else:
        event = Event(
            "Warning", names.REASON_OPERATION_FAILED, f"DataLoad {name} failed: {message or reason}"
        )
    assert job is not None
    started = job["metadata"].get("creationTimestamp") if cron else None
    status = _ended_status(obj, kind, reason, message, at, started=started)
    if cron:
        status.update(schedule_times(made))
        status["conditions"] = [c for c in status["conditions"] if c.get("type") == kind]
    out.steps.append(Status(name, status, event))
    out.summarise = True
    return True


def _built(view: View, obj: Json) -> Json:
    """The DataLoad's Job, or for policy Cron its CronJob, as they should be now."""
    assert view.runtime is not None
    assert view.runtime_class is not None
    mounts = ((view.dataset_obj or {}).get("spec") or {}).get("mounts")
    built = build_job(DataLoad.model_validate(obj), view.dataset, view.runtime, view.runtime_class, mounts)
    if not _is_cron(obj):
        return built
    return build_cronjob(built, str((obj.get("spec") or {}).get("schedule") or ""), obj["metadata"]["name"])


def _follow(view: View, obj: Json, made: Json, out: Plan) -> None:
    """A Cron DataLoad's CronJob kept to its schedule and its paths (a DataLoad naming none loads
    the Dataset's mounts as they are now, not as they were when the CronJob was made)."""
    try:
        wanted = _built(view, obj)["spec"]
    except Unsupported:
        return  # the class changed under it: the running CronJob is left as it is
    have = made.get("spec") or {}
    if have.get("schedule") != wanted["schedule"] or _loader_env(have) != _loader_env(wanted):
        out.steps.append(UpdateCronJob(made["metadata"]["name"], wanted))


def _loader_env(cronjob_spec: Json) -> list[Json]:
    pod = ((cronjob_spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return list(containers[0].get("env") or [])


def _is_cron(obj: Json) -> bool:
    return (obj.get("spec") or {}).get("policy") == names.POLICY_CRON


def _job_end(job: Json) -> tuple[str, str, str, str] | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in FINISHED and cond.get("status") == "True":
            return (
                cond["type"],
                cond.get("reason") or "",
                cond.get("message") or "",
                cond.get("lastTransitionTime") or "",
            )
    return None


def _failed(view: View, obj: Json, reason: str, message: str) -> Status:
    name = obj["metadata"]["name"]
    status = _ended_status(obj, names.PHASE_FAILED, reason, message, view.now)
    return Status(name, status, Event("Warning", reason, f"DataLoad {name}: {message}"))


def _ended_status(
    obj: Json, phase: str, reason: str, message: str, at: str, *, started: str | None = None
) -> Json:
    """The status of a DataLoad that ended at ``at``; its duration from ``started`` (a Cron
    DataLoad's Job's creation), else from the DataLoad's creation."""
    status = dict(obj.get("status") or {})
    created = started or obj["metadata"].get("creationTimestamp") or at
    condition = {
        "type": phase,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": at,
        "lastTransitionTime": at,
    }
    status.update(
        phase=phase,
        duration=go_duration(seconds_between(created, at)),
        conditions=[*(c for c in status.get("conditions") or () if c.get("type") != phase), condition],
    )
    status.setdefault("infos", {})
    return status


def _finished(view: View, obj: Json, out: Plan) -> None:
    if _is_cron(obj):
        _cron_again(view, obj, out)
        return
    ttl = (obj.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None:
        return
    ended = max(
        (c.get("lastTransitionTime") or "" for c in (obj.get("status") or {}).get("conditions") or ()),
        default="",
    )
    left = float(ttl) - seconds_between(ended or view.now, view.now)
    if left <= 0:
        out.steps.append(Delete(obj["metadata"]["name"]))
    else:
        out.again_in(left)


def _cron_again(view: View, obj: Json, out: Plan) -> None:
    """A Cron DataLoad that ended: Pending again (to take the lock) once its CronJob's next Job runs;
    its schedule times kept current meanwhile, and its CronJob kept to it (between runs is when a
    change must reach the template, before the CronJob makes the next Job from it)."""
    name = obj["metadata"]["name"]
    cronjob = view.cronjobs.get(names.dataload_cronjob(name))
    if cronjob is None:
        return
    if view.runtime is not None and view.runtime_class is not None:
        _follow(view, obj, cronjob, out)
    status = {**(obj.get("status") or {}), **schedule_times(cronjob)}
    job = current_job(cronjob, list(view.jobs.values()))
    if job is not None and _job_end(job) is None:
        status.update(phase=names.PHASE_PENDING, duration=names.DURATION_RUNNING_AGAIN)
    if status != (obj.get("status") or {}):
        out.steps.append(Status(name, status))


def parse_time(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def seconds_between(start: str, end: str) -> float:
    return max(0.0, (parse_time(end) - parse_time(start)).total_seconds())


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` of a whole number of seconds, as upstream prints durations."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
