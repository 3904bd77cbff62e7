"""The CRDs as the API server serves them to an operator: a Dataset the CEL rules refuse is refused
naming its field (not ``<nil>``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kubectl_fluid.api import names
from tests.e2e.fluid import kubectl_binary


def apply(kubeconfig: Path, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [kubectl_binary(), f"--kubeconfig={kubeconfig}", "apply", "-f", "-"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [("x" * 43, names.DATASET_NAME_TOO_LONG_MESSAGE), ("a.b", names.DATASET_NAME_NOT_DNS_1035_MESSAGE)],
)
def test_a_refused_dataset_name_is_refused_naming_the_field(
    fluid: Path, namespace: str, name: str, message: str
) -> None:
    dataset = f"""
apiVersion: {names.API_VERSION}
kind: Dataset
metadata: {{name: "{name}", namespace: {namespace}}}
spec:
  mounts: [{{name: m, mountPoint: "s3://bucket/dir"}}]
"""
    run = apply(fluid, dataset)
    assert run.returncode == 1
    # kubectl prints the API server's StatusCause: the field, the reason's words, the rule's message.
    said = " ".join(run.stderr.split())
    assert f'The Dataset "{name}" is invalid: metadata.name: Invalid value: {message}' in said, run.stderr
    assert "<nil>" not in run.stderr
