"""What the controller would create from the mooncake samples in manifests/samples (Dataset,
CacheRuntime, the CacheRuntimeClass), for the unit tests of the class's container scripts and of the
demo app that reads the runtime.sh it renders."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from controller.desired import desired_children
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset

SAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "samples"
Json = dict[str, Any]


def sample(path: str, kind: str) -> Json:
    docs: list[Json] = [
        d for d in yaml.safe_load_all((SAMPLES / path).read_text()) if d and d["kind"] == kind
    ]
    (doc,) = docs
    return doc


def children(**runtime_spec: Any) -> Any:
    runtime = copy.deepcopy(sample("dataset-mooncake.yaml", "CacheRuntime"))
    runtime["metadata"]["uid"] = "uid-1"  # as stored: owner references need it
    for component, spec in runtime_spec.items():
        runtime["spec"].setdefault(component, {}).update(spec)
    return desired_children(
        Dataset.model_validate(sample("dataset-mooncake.yaml", "Dataset")),
        CacheRuntime.model_validate(runtime),
        CacheRuntimeClass.model_validate(sample("cacheruntimeclass-mooncake.yaml", "CacheRuntimeClass")),
        "default",
    )
