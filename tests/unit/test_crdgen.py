"""The committed CRDs match the models, and their schemas are structural."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from kubectl_fluid.api import crdgen, names
from kubectl_fluid.api.crdschema import StructuralSchemaError, structural_schema

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "manifests" / "crds"
SERVER_OWNED = ("apiVersion", "kind", "metadata")
FORBIDDEN = {"$ref", "$defs", "anyOf", "oneOf", "allOf", "not", "const", "nullable", "title"}


def test_committed_crds_match_the_models() -> None:
    assert crdgen.check(COMMITTED) == [], crdgen.REGENERATE


def test_check_reports_drift_missing_and_stale_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert crdgen.main(["--out", str(tmp_path)]) == 0
    assert crdgen.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "datasets.data.fluid.io.yaml").write_text("# edited by hand\n")
    (tmp_path / "fusemounts.data.fluid.io.yaml").unlink()
    (tmp_path / "olds.data.fluid.io.yaml").write_text("{}\n")
    capsys.readouterr()
    assert crdgen.main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "datasets.data.fluid.io.yaml: differs from the models" in err
    assert "fusemounts.data.fluid.io.yaml: missing" in err
    assert "olds.data.fluid.io.yaml: no model generates it" in err
    assert "python -m kubectl_fluid.api.crdgen" in err
    crdgen.write(tmp_path)
    assert crdgen.check(tmp_path) == []


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}.*")
    if "items" in schema:
        yield from _nodes(schema["items"], f"{path}[]")


def _schemas() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, text in crdgen.expected_files().items():
        doc = yaml.safe_load(text)
        for version in doc["spec"]["versions"]:
            yield name, version["schema"]["openAPIV3Schema"]


INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def test_schemas_are_structural() -> None:
    for name, schema in _schemas():
        for path, node in _nodes(schema):
            where = f"{name}{path}"
            if node.get("x-kubernetes-int-or-string"):
                # The one typeless node Kubernetes allows: an int-or-string, its anyOf exactly this.
                assert node["anyOf"] == INT_OR_STRING, where
                assert not (FORBIDDEN - {"anyOf"}) & node.keys(), where
                assert "type" not in node, where
                continue
            assert "type" in node, where
            assert not FORBIDDEN & node.keys(), where
            assert not ("properties" in node and "additionalProperties" in node), where
            if node["type"] == "object" and "additionalProperties" in node:
                assert isinstance(node["additionalProperties"], dict), where
            if node.get("x-kubernetes-preserve-unknown-fields"):
                assert node["type"] == "object", where


def test_open_objects_are_only_the_core_v1_passthroughs() -> None:
    open_fields = {
        path.split(".")[-1].removesuffix("[]")
        for _, schema in _schemas()
        for path, node in _nodes(schema)
        if node.get("x-kubernetes-preserve-unknown-fields")
    }
    # Upstream embeds these core/v1 types; here they are kept whole for the API server to check
    # when the workload built from them is written (kubectl_fluid/api/kubetypes.py says why).
    assert open_fields == {
        "env",
        "resources",
        "tolerations",
        "volumeMounts",
        "volumes",
        "imagePullSecrets",
        "template",
        "cacheAffinity",
        "required",  # Dataset spec.nodeAffinity.required, a NodeSelector
        "affinity",  # DataLoad spec.affinity, an Affinity
        "nodeAffinity",  # DataLoad status.nodeAffinity, a NodeAffinity
    }


def test_dataset_crd_limits_names_and_says_why() -> None:
    doc = yaml.safe_load(crdgen.expected_files()["datasets.data.fluid.io.yaml"])
    version = doc["spec"]["versions"][0]
    length, label = version["schema"]["openAPIV3Schema"]["x-kubernetes-validations"]
    assert length["rule"] == "size(self.metadata.name) <= 42"
    assert "fluid-runtime-config-" in length["message"]
    assert "63" in length["message"]
    assert label["rule"] == "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
    assert "DNS-1035" in label["message"]
    assert "Services" in label["message"]
    # A root rule names its field, or the API server reports it as `<nil>: Invalid value`; the path
    # must exist in the schema for the API server to take the CRD.
    for rule in (length, label):
        assert (rule["fieldPath"], rule["reason"]) == (".metadata.name", "FieldValueInvalid")
    metadata = version["schema"]["openAPIV3Schema"]["properties"]["metadata"]
    assert metadata == {"type": "object", "properties": {"name": {"type": "string"}}}
    # CEL's matches() is an RE2 search; on names without a newline Python's re.search agrees with it,
    # so the CRD and names.dataset_name_error accept the same short names.
    pattern = label["rule"].split("'")[1]
    for name in ("ds1", "a", "a-b", "a.b", "1a", "a-", "A", "a_b", "ab9"):
        assert (re.search(pattern, name) is not None) == (names.dataset_name_error(name) is None), name
    assert version["subresources"] == {"status": {}}
    # Upstream's columns, so `kubectl get dataset` reads as with Fluid.
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Ufs Total Size",
        "Cached",
        "Cache Capacity",
        "Cached Percentage",
        "Phase",
        "HCFS URL",
        "TOTAL FILES",
        "CACHE HIT RATIO",
        "Age",
    ]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    # As upstream: no default written into stored objects (the runtime config defaults it), and
    # mounts, when given, are not empty.
    assert "default" not in spec["accessModes"]
    assert spec["mounts"]["minItems"] == 1
    assert spec["mounts"]["items"]["properties"]["mountPoint"]["minLength"] == 5
    assert spec["placement"]["enum"] == ["Exclusive", "Shared", ""]


def test_crd_names_scopes_and_columns() -> None:
    docs = {
        yaml.safe_load(t)["spec"]["names"]["kind"]: yaml.safe_load(t)
        for t in crdgen.expected_files().values()
    }
    assert {k: d["spec"]["scope"] for k, d in docs.items()} == {
        "Dataset": "Namespaced",
        "CacheRuntime": "Namespaced",
        "CacheRuntimeClass": "Cluster",
        "FuseMount": "Cluster",
        "DataLoad": "Namespaced",
    }
    columns = {
        k: [c["name"] for c in d["spec"]["versions"][0].get("additionalPrinterColumns", [])]
        for k, d in docs.items()
    }
    assert "RuntimeClass" in columns["CacheRuntime"]
    assert {"Node", "Refs", "Phase"} <= set(columns["FuseMount"])
    assert columns["DataLoad"] == ["Dataset", "Phase", "Age", "Duration"]  # upstream's, in its order
    assert "subresources" not in docs["CacheRuntimeClass"]["spec"]["versions"][0]  # it has no status


def test_output_is_byte_stable() -> None:
    assert crdgen.expected_files() == crdgen.expected_files()


def test_unions_are_refused() -> None:
    class Bad(BaseModel):
        value: int | str

    with pytest.raises(StructuralSchemaError, match="union"):
        structural_schema(Bad)


def test_every_top_level_field_of_spec_and_status_is_described() -> None:
    # What `kubectl explain dataset.spec` prints; tests/e2e/test_crds.py reads it from the API server.
    for name, schema in _schemas():
        assert schema.get("description"), name
        tops = [schema["properties"][part] for part in ("spec", "status") if part in schema["properties"]]
        if not tops:  # CacheRuntimeClass, like StorageClass, has its fields at the top
            tops = [{"properties": {k: v for k, v in schema["properties"].items() if k not in SERVER_OWNED}}]
        for top in tops:
            undescribed = sorted(f for f, sub in top["properties"].items() if not sub.get("description"))
            assert undescribed == [], f"{name}: fields without a description"
