"""Resource paths, and the product's kinds spelled in kube/resources agreeing with the models."""

from __future__ import annotations

import pytest

from kubectl_fluid.api.base import Resource as Model
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.api.fusemount import FuseMount
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.resources import Resource


@pytest.mark.parametrize(
    ("resource", "model"),
    [
        (resources.DATASETS, Dataset),
        (resources.CACHERUNTIMES, CacheRuntime),
        (resources.CACHERUNTIMECLASSES, CacheRuntimeClass),
        (resources.FUSEMOUNTS, FuseMount),
    ],
)
def test_product_kinds_match_the_models(resource: Resource, model: type[Model]) -> None:
    assert (resource.plural, resource.kind) == (model.crd.plural, model.crd.kind)
    assert resource.namespaced == (model.crd.scope == "Namespaced")


def test_paths() -> None:
    assert resources.PODS.collection_path() == "/api/v1/pods"
    assert resources.PODS.object_path("a b", "p/q") == "/api/v1/namespaces/a%20b/pods/p%2Fq"
    assert resources.DATASETS.collection_path("ns") == "/apis/data.fluid.io/v1alpha1/namespaces/ns/datasets"
    # A cluster-scoped kind ignores the namespace.
    assert resources.PERSISTENT_VOLUMES.object_path("ns", "pv") == "/api/v1/persistentvolumes/pv"
    assert resources.LEASES.api_version == "coordination.k8s.io/v1"
