"""A DataLoad of policy Cron (pure): upstream's CronJob and its status handler
(``charts/fluid-dataloader/cache/templates/cronjob.yaml``, ``CronStatusHandler`` of
``pkg/controllers/v1alpha1/dataload/status_handler.go``).

The CronJob, named as the Job of a DataLoad of policy Once would be (shortened with a hash past the
52 characters a CronJob may have), has that Job's spec as its ``jobTemplate`` (so its Jobs carry the
loader labels the room watches) and the DataLoad's ``schedule``; both are kept to the DataLoad's
schedule and to the Dataset's mounts it loads (``plan.py: _follow()``). The DataLoad's status
follows the newest Job (the first one created at or after the CronJob's ``lastScheduleTime``): its
end makes the DataLoad ``Complete`` or ``Failed`` (and releases the lock, as a Once one does); a new
Job running after that makes it ``Pending`` again (duration ``-``), and it takes the lock again
before it is ``Executing``. ``lastScheduleTime`` and ``lastSuccessfulTime`` are the CronJob's.
"""

from __future__ import annotations

import copy
from typing import Any

from kubectl_fluid.api import names

Json = dict[str, Any]


def build_cronjob(job: Json, schedule: str, dataload: str) -> Json:
    """The CronJob that makes ``job`` (``job.py: build_job()``'s for DataLoad ``dataload``) on
    ``schedule``."""
    meta = copy.deepcopy(job["metadata"])
    labels = dict(meta["labels"])
    meta["labels"] = {**labels, names.LABEL_DATALOAD_ROLE: names.DATALOAD_CRONJOB_ROLE}
    meta["name"] = names.dataload_cronjob(dataload)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta,
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"metadata": {"labels": labels}, "spec": copy.deepcopy(job["spec"])},
        },
    }


def current_job(cronjob: Json, jobs: list[Json]) -> Json | None:
    """The CronJob's newest Job: the first created at or after its lastScheduleTime."""
    scheduled = (cronjob.get("status") or {}).get("lastScheduleTime")
    uid = cronjob["metadata"].get("uid")
    if not scheduled or not uid:
        return None
    owned = [
        j
        for j in jobs
        if any(r.get("uid") == uid for r in j["metadata"].get("ownerReferences") or ())
        and (j["metadata"].get("creationTimestamp") or "") >= scheduled
    ]
    owned.sort(key=lambda j: j["metadata"].get("creationTimestamp") or "")
    return owned[0] if owned else None


def schedule_times(cronjob: Json) -> Json:
    status = cronjob.get("status") or {}
    return {k: status[k] for k in ("lastScheduleTime", "lastSuccessfulTime") if status.get(k) is not None}
