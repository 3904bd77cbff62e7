"""Inputs desired_children refuses, with a message a person can act on."""

from __future__ import annotations

import pytest

from controller.desired.errors import SpecError
from kubectl_fluid.runtimeconfig import RuntimeConfigError, RuntimeConfigTooLarge
from kubectl_fluid.runtimeconfig.limits import MAX_ARG_STRLEN
from tests.unit.desired_samples import CLIENTLESS_RUNTIME, DATASET, MOONCAKE_CLASS, build, with_spec


@pytest.mark.parametrize("name", ["ds.v1", "1ds", "x" * 43])
def test_a_dataset_name_that_cannot_name_its_components_is_refused(name: str) -> None:
    dataset = with_spec(DATASET, "metadata.name", name)
    runtime = with_spec(CLIENTLESS_RUNTIME, "metadata.name", name)
    with pytest.raises(RuntimeConfigError, match="cannot name its cache components"):
        build(dataset, runtime, MOONCAKE_CLASS)


@pytest.mark.parametrize("topology", [None, {}, {"master": None}])
def test_a_class_without_components_is_refused_in_upstreams_words(topology: object) -> None:
    # The runtime config refuses it too (h-rtconfig), in the same words and with the same reason:
    # whichever speaks first.
    runtime_class = with_spec(MOONCAKE_CLASS, "topology", topology)
    with pytest.raises(
        RuntimeConfigError, match="at least one component should be defined in runtimeClass"
    ) as e:
        build(DATASET, CLIENTLESS_RUNTIME, runtime_class)
    assert e.value.reason == "InvalidRuntimeClass"


@pytest.mark.parametrize("template", [None, {}, {"spec": {}}, {"spec": {"containers": []}}])
def test_an_enabled_component_without_containers_is_refused_in_upstreams_words(template: object) -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, "topology.worker.template", template)
    with pytest.raises(SpecError, match="component worker must define at least one container") as error:
        build(DATASET, CLIENTLESS_RUNTIME, runtime_class)
    assert error.value.reason == "InvalidRuntimeClass"
    # Disabled, it is not built and need not have one.
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.worker.disabled", True)
    assert build(DATASET, runtime, runtime_class).statefulsets[0]["metadata"]["name"] == "ds1-master"


@pytest.mark.parametrize(
    ("path", "value", "at"),
    [
        ("spec.containers", {"name": "x"}, "spec.containers must be a list"),
        ("spec.containers.0.env", "A=1", r"spec.containers\[0\].env must be a list"),
        ("spec.containers.0.resources", ["1Gi"], r"spec.containers\[0\].resources must be an object"),
        ("spec.volumes", "none", "spec.volumes must be a list"),
        ("spec.affinity", {"nodeAffinity": []}, "spec.affinity.nodeAffinity must be an object"),
        ("metadata", {"labels": ["a"]}, "metadata.labels must be an object"),
    ],
)
def test_a_template_of_the_wrong_shape_is_refused_naming_the_path(path: str, value: object, at: str) -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, f"topology.worker.template.{path}", value)
    if path.startswith("spec.containers.0"):
        runtime_class = with_spec(
            MOONCAKE_CLASS,
            "topology.worker.template.spec.containers",
            [{"name": "worker", "image": "i", path.rsplit(".", 1)[1]: value}],
        )
    with pytest.raises(SpecError, match=rf'CacheRuntimeClass "mooncake" topology.worker.template: {at}'):
        build(DATASET, CLIENTLESS_RUNTIME, runtime_class)


def test_a_dataset_node_affinity_of_the_wrong_shape_is_refused() -> None:
    dataset = with_spec(DATASET, "spec.nodeAffinity", {"required": {"nodeSelectorTerms": {"a": 1}}})
    with pytest.raises(
        SpecError, match=r'Dataset "ds1" spec.nodeAffinity.required: nodeSelectorTerms must be a list'
    ):
        build(dataset, CLIENTLESS_RUNTIME, MOONCAKE_CLASS)


def test_runtime_name_must_match_the_dataset() -> None:
    runtime = with_spec(CLIENTLESS_RUNTIME, "metadata.name", "other")
    with pytest.raises(RuntimeConfigError, match="same name"):
        build(DATASET, runtime, MOONCAKE_CLASS)


def test_runtime_without_uid_is_refused() -> None:
    runtime = with_spec(CLIENTLESS_RUNTIME, "metadata.uid", None)
    with pytest.raises(RuntimeConfigError, match=r"no metadata\.uid"):
        build(DATASET, runtime, MOONCAKE_CLASS)


def test_file_system_type_must_be_a_label_value() -> None:
    runtime_class = with_spec(MOONCAKE_CLASS, "fileSystemType", "Moon Cake")
    with pytest.raises(RuntimeConfigError, match="fileSystemType"):
        build(DATASET, CLIENTLESS_RUNTIME, runtime_class)


def test_a_runtime_sh_value_over_the_kernel_limit_is_refused_with_its_own_reason() -> None:
    runtime = with_spec(CLIENTLESS_RUNTIME, "spec.master", {"options": {"blob": "x" * MAX_ARG_STRLEN}})
    with pytest.raises(RuntimeConfigTooLarge, match="MASTER_OPTIONS") as error:
        build(DATASET, runtime, MOONCAKE_CLASS)
    assert error.value.reason == "RuntimeConfigTooLarge"
