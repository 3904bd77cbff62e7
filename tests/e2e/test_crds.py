"""The CRDs as the API server serves them to an operator: a Dataset the CEL rules refuse is refused
naming its field (not ``<nil>``), and ``kubectl explain`` describes the top-level spec fields of every
kind, from the descriptions the generator takes from the models."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from kubectl_fluid.api import crdgen, names
from tests.e2e.fluid import kubectl, kubectl_binary
from tests.e2e.wait import eventually

KINDS = {r.crd.kind: r.crd for r in crdgen.RESOURCES}
SERVER_OWNED = ("apiVersion", "kind", "metadata")


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


def test_the_served_schemas_describe_every_top_level_spec_field(fluid: Path, k8s: client.ApiClient) -> None:
    crds = client.ApiextensionsV1Api(k8s)
    for kind, info in KINDS.items():
        crd = crds.read_custom_resource_definition(info.name)
        schema = crd.spec.versions[0].schema.open_apiv3_schema
        assert schema.description, kind
        # A CacheRuntimeClass, like a StorageClass, has its fields at the top.
        spec = schema.properties.get("spec", schema)
        assert spec.description, kind
        fields = {f: sub for f, sub in spec.properties.items() if f not in SERVER_OWNED}
        assert fields, kind
        undescribed = sorted(f for f, sub in fields.items() if not sub.description)
        assert undescribed == [], f"{kind} spec fields without a description"


@pytest.mark.parametrize("kind", KINDS)
def test_kubectl_explain_prints_the_spec_fields_descriptions(fluid: Path, kind: str) -> None:
    # The API server publishes a new CRD's OpenAPI a moment after it is Established.
    path = KINDS[kind].plural if kind == "CacheRuntimeClass" else f"{KINDS[kind].plural}.spec"
    text = eventually(lambda: kubectl(fluid, "explain", path), f"kubectl explain {path}")
    assert "FIELDS:" in text
    assert "<no description>" not in text, text
    assert "<empty>" not in text, text
