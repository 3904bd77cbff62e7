"""Hand-made snapshots of one dataset and its parts, as the API serves them, for the inspect tests."""

from __future__ import annotations

from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.snapshot import Snapshot
from tests.unit.test_cli_snapshot import obj as any_obj
from tests.unit.test_cli_snapshot import pod as bare_pod

NS = "team-a"
DS = "ds1"


def obj(name: str, namespace: str = NS, **rest: Any) -> dict[str, Any]:
    return any_obj(name, namespace, **rest)


def pod(
    name: str,
    node: str | None = "node-1",
    *,
    phase: str = "Running",
    ready: bool = True,
    claim: str | None = None,
    injected: str | None = None,
    component: str | None = None,
    waiting: str | None = None,
) -> dict[str, Any]:
    """A pod of ``NS`` (``test_cli_snapshot``'s, with a node, a status and a component's labels)."""
    made = bare_pod(name, claim=claim, injected=injected, runtime=DS if component else None)
    made["metadata"] = obj(name, metadata={"labels": made["metadata"]["labels"]})["metadata"]
    if component:
        made["metadata"]["labels"][names.LABEL_CACHERUNTIME_COMPONENT] = names.component_name(DS, component)  # type: ignore[arg-type]
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if waiting:
        status["containerStatuses"] = [{"name": "c", "state": {"waiting": {"reason": waiting}}}]
    if node:
        made["spec"]["nodeName"] = node
    made["status"] = status
    return made


def dataset(phase: str = "Bound") -> dict[str, Any]:
    return obj(
        DS,
        metadata={"creationTimestamp": "2026-12-05T08:00:00Z"},
        spec={"mounts": [{"mountPoint": "s3://bucket/data", "name": "data"}]},
        status={
            "phase": phase,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "DatasetReady", "message": "bound"},
                {
                    "type": "UpdateReady",
                    "status": "False",
                    "reason": "MountUFSFailed",
                    "message": "no bucket",
                },
            ],
        },
    )


def runtime(client_disabled: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeClassName": "curvine", "master": {"replicas": 1}}
    if client_disabled:
        spec["client"] = {"disabled": True}
    return obj(
        DS,
        spec=spec,
        status={
            "conditions": [{"type": "Ready", "status": "True", "reason": "RuntimeReady"}],
            "master": {"phase": "Ready"},
            "worker": {"phase": "PartialReady"},
        },
    )


def runtime_json(client: bool = True) -> str:
    parts: dict[str, Any] = {"master": {"enabled": True}, "worker": {"enabled": True}}
    if client:
        parts["client"] = {"enabled": True}
    import json

    return json.dumps(parts)


def statefulset(component: str, desired: int, ready: int) -> dict[str, Any]:
    return obj(
        names.component_name(DS, component),  # type: ignore[arg-type]
        metadata={"labels": {names.LABEL_CACHERUNTIME_NAME: DS}},
        spec={"replicas": desired},
        status={"readyReplicas": ready},
    )


def full(app_pods: list[dict[str, Any]] | None = None) -> Snapshot:
    """A FUSE dataset with every part present: master 1/1, worker 1/2, client on two nodes."""
    cm = names.runtime_config_configmap(DS)
    return Snapshot(
        NS,
        lists={
            "datasets": [dataset(), obj("other")],
            "cacheruntimes": [runtime()],
            "cacheruntimeclasses": [obj("curvine", namespace="", spec={"fileSystemType": "curvine"})],
            "configmaps": [
                obj(
                    cm,
                    metadata={
                        "resourceVersion": "42",
                        "creationTimestamp": "2026-12-05T08:00:00Z",
                        "managedFields": [
                            {"manager": "fluid-controller", "time": "2026-12-05T08:01:00Z"},
                            {"manager": "fluid-controller", "time": "2026-12-05T08:05:00Z"},
                        ],
                    },
                    data={names.RUNTIME_JSON_KEY: runtime_json(), names.RUNTIME_SH_KEY: "x" * 2000},
                    binaryData={"blob": "AAAA"},
                )
            ],
            "persistentvolumeclaims": [obj(DS, spec={"volumeName": f"{NS}-{DS}"}, status={"phase": "Bound"})],
            "persistentvolumes": [
                obj(
                    names.dataset_pv(NS, DS),
                    namespace="",
                    spec={"claimRef": {"namespace": NS, "name": DS}},
                    status={"phase": "Bound"},
                )
            ],
            "statefulsets": [statefulset("master", 1, 1), statefulset("worker", 2, 1)],
            "daemonsets": [
                obj(
                    names.component_name(DS, "client"),
                    metadata={"labels": {names.LABEL_CACHERUNTIME_NAME: DS}},
                    status={"desiredNumberScheduled": 2, "numberReady": 2},
                )
            ],
            "pods": [
                pod("ds1-master-0", component="master"),
                pod("ds1-worker-0", component="worker"),
                pod("ds1-worker-1", None, phase="Pending", ready=False, component="worker"),
                pod("ds1-client-a", component="client"),
                pod("ds1-client-b", "node-2", component="client"),
                *(
                    app_pods
                    if app_pods is not None
                    else [
                        pod("app-pvc", "node-1", claim=DS),
                        pod("app-injected", "node-2", injected=DS, ready=False, waiting="CrashLoopBackOff"),
                        pod("app-both", "node-2", claim=DS, injected=DS),
                        pod("app-other", claim="other"),
                    ]
                ),
            ],
            "fusemounts": [
                obj(
                    "node-1-abc",
                    namespace="",
                    spec={"nodeName": "node-1", "mode": "client", "dataset": {"namespace": NS, "name": DS}},
                    status={
                        "phase": "Ready",
                        "refCount": 1,
                        "podName": "ds1-client-a",
                        "volumes": [{"volumeID": "v", "targets": [{"path": "/t/1", "podUID": "u"}]}],
                    },
                ),
                obj(
                    "node-2-abc",
                    namespace="",
                    spec={"nodeName": "node-2", "mode": "client", "dataset": {"namespace": NS, "name": DS}},
                    status={"phase": "Broken", "refCount": 1, "reason": "the client pod is gone"},
                ),
            ],
            "dataloads": [
                obj("ds1-load-b", spec={"dataset": {"name": DS}}, status={"phase": "Executing"}),
                obj(
                    "ds1-load-a",
                    spec={"dataset": {"name": DS}},
                    status={"phase": "Complete", "duration": "12s"},
                ),
            ],
        },
    )
