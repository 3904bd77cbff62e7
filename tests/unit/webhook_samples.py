"""Pods, lookups and the profile shared by the webhook's unit tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubectl_fluid.api import names
from webhook.lookup import StaticLookup
from webhook.profile import DEFAULT_PROFILE, Profile, load_profile

NS = "team-a"
# A copy of ../shared/bench/review.json (the bench's AdmissionReview): a Deployment-made pod with
# generateName, two containers, an init container and a projected service-account volume.
REVIEW_FILE = Path(__file__).with_name("webhook_review.json")


def review() -> dict[str, Any]:
    return json.loads(REVIEW_FILE.read_text())  # type: ignore[no-any-return]


def review_pod() -> dict[str, Any]:
    return review()["request"]["object"]  # type: ignore[no-any-return]


def default_profile() -> Profile:
    profile, warnings = load_profile(DEFAULT_PROFILE)
    assert warnings == []
    return profile


def dataset(name: str, namespace: str = NS) -> dict[str, Any]:
    return {"kind": "Dataset", "metadata": {"namespace": namespace, "name": name}}


def runtime_config(
    name: str, namespace: str = NS, *, runtime_sh: bool = True, scoped: bool = False
) -> dict[str, Any]:
    data = {names.RUNTIME_JSON_KEY: "{}"}
    if runtime_sh:
        data[names.RUNTIME_SH_KEY] = "#!/bin/sh\n"
    if scoped:
        data[names.RUNTIME_SCOPED_SH_KEY] = "#!/bin/sh\n"
    return {
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": names.runtime_config_configmap(name)},
        "data": data,
    }


def dataset_pvc(name: str, namespace: str = NS, *, label: str = "s") -> dict[str, Any]:
    """The PVC the controller makes for a dataset, with only the ``s`` label, only the
    ``dataset-id`` label, or both."""
    labels: dict[str, str] = {}
    if label in ("s", "both"):
        labels[names.dataset_pvc_label(namespace, name)] = names.TRUE
    if label in ("id", "both"):
        labels[names.LABEL_DATASET_ID] = names.dataset_id(namespace, name)
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"namespace": namespace, "name": names.dataset_pvc(name), "labels": labels},
    }


def ready_lookup(*datasets: str, extra: tuple[dict[str, Any], ...] = ()) -> StaticLookup:
    """Datasets whose runtime config is ready (Dataset + ConfigMap with runtime.sh)."""
    objects = [obj for ds in datasets for obj in (dataset(ds), runtime_config(ds))]
    return StaticLookup([*objects, *extra])


def injection_pod(
    datasets: str | None = "ds1",
    *,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod that asks for clientless injection of ``datasets`` (None: no annotation)."""
    meta: dict[str, Any] = {
        "generateName": "app-",
        "labels": {names.LABEL_INJECT: names.TRUE, **(labels or {})},
    }
    if datasets is not None:
        meta["annotations"] = {names.ANNOTATION_DATASET: datasets}
    spec: dict[str, Any] = {"containers": containers or [{"name": "app", "image": "app:1"}]}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if volumes is not None:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
