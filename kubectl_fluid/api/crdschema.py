"""Turn a pydantic JSON schema into a Kubernetes structural schema.

The API server rejects what pydantic emits by default: ``$ref``/``$defs``, ``anyOf`` with a null
branch for optional fields, ``const``, and nodes without ``type``. It also writes every ``default``
into every stored object, so only defaults that carry meaning are kept.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

Schema = dict[str, Any]

_REF_PREFIX = "#/$defs/"
_NULL = {"type": "null"}
# Kubernetes keeps these keys of an OpenAPI node; anything else pydantic emits is dropped.
_KEPT = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "items",
        "additionalProperties",
        "enum",
        "default",
        "format",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "x-kubernetes-validations",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    }
)


class StructuralSchemaError(ValueError):
    """The model has a shape a structural schema cannot express."""


def structural_schema(model: type[BaseModel]) -> Schema:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Schema] = raw.pop("$defs", {})
    return _convert(raw, defs, model.__name__)


def _convert(node: Schema, defs: dict[str, Schema], where: str) -> Schema:
    node = dict(node)
    if "$ref" in node:
        ref: str = node.pop("$ref")
        # Keys beside the $ref (a field's own description or default) override the target's.
        return _convert({**defs[ref.removeprefix(_REF_PREFIX)], **node}, defs, where)
    if node.get("x-kubernetes-int-or-string"):
        # A Quantity or IntOrString: the one typeless union Kubernetes allows, spelled as it wants it.
        return {key: value for key, value in node.items() if key in _KEPT | {"anyOf"}}
    if "anyOf" in node:
        branches = [b for b in node.pop("anyOf") if b != _NULL]
        if len(branches) != 1:
            raise StructuralSchemaError(f"{where}: a union of several types has no structural schema")
        return _convert({**branches[0], **node}, defs, where)
    if "const" in node:
        node["enum"] = [node.pop("const")]

    out: Schema = {key: value for key, value in node.items() if key in _KEPT}
    # An empty default ({} / [] / "" / false / 0) means "unset"; writing it into stored objects adds
    # noise and makes "absent" and "empty" indistinguishable for no gain.
    if not out.get("default", True):
        del out["default"]
    if "type" not in out:
        raise StructuralSchemaError(f"{where}: schema node without a type: {sorted(node)}")

    if out["type"] == "object":
        props = {
            name: _convert(sub, defs, f"{where}.{name}") for name, sub in out.get("properties", {}).items()
        }
        out.pop("properties", None)
        if props:
            out["properties"] = props
        extra = out.pop("additionalProperties", None)
        if extra is True:
            # dict[str, Any]: an open object (EnvVar, ResourceRequirements...) the server must keep.
            out["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(extra, dict):
            out["additionalProperties"] = _convert(extra, defs, f"{where}.*")
    elif out["type"] == "array":
        out["items"] = _convert(out["items"], defs, f"{where}[]")
    return out
