"""The loader Job of a DataLoad, built from its runtime class's ``dataOperationSpecs[name=DataLoad]``
(pure).

It is what upstream's cache dataloader chart renders (``charts/fluid-dataloader/cache/templates/
job.yaml``, values from ``pkg/ddc/cache/engine/dataload.go``): one pod, ``restartPolicy: Never``,
``backoffLimit`` 3, the spec's command and args, the env ``FLUID_DATALOAD_METADATA``,
``FLUID_DATALOAD_DATA_PATH`` and ``FLUID_DATALOAD_PATH_REPLICAS`` (paths and replicas joined by
``:``) and ``FLUID_RUNTIME_CONFIG_PATH``, with the runtime
config ConfigMap mounted read-only where component pods see it (fluid #6113). The image is the
spec's, else the master's (SPEC §7; upstream takes the worker's), as the master pod runs it
(``runtimeVersion`` over the class's first container); a runtime without a master uses the worker's.
The DataLoad is the Job's controlling owner, so deleting it takes the Job and its pods with it.

A DataLoad that names no path loads the whole Dataset. Upstream passes ``/`` then; this controller
passes where each of the Dataset's mounts sits (``/`` only when it has none the cache mounts), one
replica each: the same data, and what a class's script can load. Curvine's resolves each path to
its mount's UFS, and its master refuses ``/`` ("Not found mount info for path: /"), which is no
mount's.
"""

from __future__ import annotations

import copy
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass, DataOperationSpec
from kubectl_fluid.api.dataload import DataLoad
from kubectl_fluid.api.dataset import cache_mount_paths

Json = dict[str, Any]


class Unsupported(Exception):
    """The DataLoad cannot run for this runtime: its phase becomes Failed with ``reason``."""

    def __init__(self, message: str, reason: str = names.REASON_OPERATION_NOT_SUPPORTED) -> None:
        super().__init__(message)
        self.reason = reason


def dataload_spec(runtime_class: CacheRuntimeClass) -> DataOperationSpec:
    """The class's DataLoad spec, or Unsupported saying the class has none (or an empty one)."""
    spec = next(
        (s for s in runtime_class.data_operation_specs or () if s.name == names.OPERATION_DATALOAD), None
    )
    where = f'CacheRuntimeClass "{runtime_class.metadata.name}"'
    if spec is None:
        raise Unsupported(
            f"{where} has no dataOperationSpecs entry named DataLoad: its runtimes cannot load data"
        )
    if not spec.command and not spec.args:
        raise Unsupported(f"{where}: the DataLoad command and args can not be both empty")
    return spec


def loader_image(
    runtime: CacheRuntime, runtime_class: CacheRuntimeClass, spec: DataOperationSpec
) -> tuple[str, list[Json]]:
    """(image, imagePullSecrets): the spec's image, else the master's (the worker's without one)."""
    for component in ("master", "worker"):
        definition = runtime_class.component(component)
        if definition is None or runtime.spec.component(component).disabled:
            continue
        template = definition.template or {}
        containers = (template.get("spec") or {}).get("containers") or [{}]
        version = runtime.spec.component(component).runtime_version
        image = spec.image or (version.reference() if version else None) or containers[0].get("image")
        if image:
            return image, copy.deepcopy((template.get("spec") or {}).get("imagePullSecrets") or [])
    if spec.image:
        return spec.image, []
    raise Unsupported(
        f'CacheRuntime "{runtime.metadata.name}": no image for the DataLoad (neither the class\'s DataLoad '
        "spec nor its master or worker names one)"
    )


def loader_env(dataload: DataLoad, whole: list[str]) -> list[Json]:
    """The loader's env; ``whole`` is what loads the whole Dataset (``cache_mount_paths()``)."""
    targets = dataload.spec.target or []
    paths = [t.path for t in targets] or whole or ["/"]
    replicas = [str(t.replicas or 1) for t in targets] or ["1"] * len(whole or ["/"])
    return [
        {"name": names.ENV_DATALOAD_METADATA, "value": "true" if dataload.spec.load_metadata else "false"},
        {"name": names.ENV_DATALOAD_DATA_PATH, "value": ":".join(paths)},
        {"name": names.ENV_DATALOAD_PATH_REPLICAS, "value": ":".join(replicas)},
        {"name": names.ENV_RUNTIME_CONFIG_PATH, "value": names.COMPONENT_CONFIG_PATH},
    ]


def loader_labels(dataload: str, dataset: str, role: str) -> dict[str, str]:
    return {
        names.LABEL_DATALOAD_RELEASE: names.dataload_release(dataload),
        names.LABEL_DATALOAD_ROLE: role,
        names.LABEL_DATALOAD_APP: names.DATALOAD_APP,
        names.LABEL_DATALOAD_TARGET: dataset,
        names.LABEL_APP_MANAGED_BY: names.MANAGED_BY,
    }


def build_job(
    dataload: DataLoad,
    dataset: str,
    runtime: CacheRuntime,
    runtime_class: CacheRuntimeClass,
    mounts: list[Json] | None = None,
) -> Json:
    """The Job that loads ``dataload``'s paths of ``dataset`` (whose ``spec.mounts`` are ``mounts``);
    Unsupported when it cannot run."""
    spec = dataload_spec(runtime_class)
    image, pull_secrets = loader_image(runtime, runtime_class, spec)
    meta = dataload.metadata
    if not meta.uid:
        raise ValueError("a DataLoad as stored by the API server (with a uid) owns its Job")
    pod_meta = dataload.spec.pod_metadata
    container: Json = {
        "name": names.DATALOAD_CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": loader_env(dataload, cache_mount_paths(mounts)),
        "volumeMounts": [
            {
                "name": names.component_config_volume(dataset),
                "mountPath": names.COMPONENT_CONFIG_DIR,
                "readOnly": True,
            }
        ],
    }
    if spec.command:
        container["command"] = list(spec.command)
    if spec.args:
        container["args"] = list(spec.args)
    if dataload.spec.resources:
        container["resources"] = copy.deepcopy(dataload.spec.resources)
    pod: Json = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [
            {
                "name": names.component_config_volume(dataset),
                "configMap": {"name": names.runtime_config_configmap(dataset)},
            }
        ],
    }
    optional: dict[str, Any] = {
        "schedulerName": dataload.spec.scheduler_name,
        "nodeSelector": dataload.spec.node_selector,
        "affinity": dataload.spec.affinity,
        "tolerations": dataload.spec.tolerations,
        "imagePullSecrets": pull_secrets,
    }
    pod.update({k: copy.deepcopy(v) for k, v in optional.items() if v})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": names.dataload_job(meta.name),
            "namespace": meta.namespace,
            "labels": loader_labels(meta.name, dataset, names.DATALOAD_JOB_ROLE),
            "ownerReferences": [
                {
                    "apiVersion": names.API_VERSION,
                    "kind": names.KIND_DATALOAD,
                    "name": meta.name,
                    "uid": meta.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "backoffLimit": names.DATALOAD_BACKOFF_LIMIT,
            "completions": 1,
            "parallelism": 1,
            "template": {
                "metadata": {
                    "labels": {
                        **((pod_meta.labels if pod_meta else None) or {}),
                        **loader_labels(meta.name, dataset, names.DATALOAD_POD_ROLE),
                    },
                    "annotations": {
                        "sidecar.istio.io/inject": "false",
                        **((pod_meta.annotations if pod_meta else None) or {}),
                    },
                },
                "spec": pod,
            },
        },
    }
