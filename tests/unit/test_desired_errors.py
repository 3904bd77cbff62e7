"""Inputs desired_children refuses, with a message a person can act on."""

from __future__ import annotations

import pytest

from kubectl_fluid.runtimeconfig import RuntimeConfigError, RuntimeConfigTooLarge
from kubectl_fluid.runtimeconfig.limits import MAX_ARG_STRLEN
from tests.unit.desired_samples import CLIENTLESS_RUNTIME, DATASET, MOONCAKE_CLASS, build, with_spec


def test_dotted_dataset_name_is_refused() -> None:
    dataset = with_spec(DATASET, "metadata.name", "ds.v1")
    runtime = with_spec(CLIENTLESS_RUNTIME, "metadata.name", "ds.v1")
    with pytest.raises(RuntimeConfigError, match="must be a DNS label") as error:
        build(dataset, runtime, MOONCAKE_CLASS)
    assert "svc-ds.v1-master" in str(error.value)


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
