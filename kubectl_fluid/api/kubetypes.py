"""Kubernetes core types the Fluid API embeds (a PodTemplateSpec, EnvVar, Volume...), and the
Quantity scalar.

Upstream's CRDs inline the whole core/v1 schema of each; here they are open objects the API server
keeps as given (``x-kubernetes-preserve-unknown-fields``): every field a Fluid manifest carries is
kept and accepted under ``kubectl apply --validate=strict``, and the API server validates it for
real when the controller writes the workload built from it (a bad template is a ``Ready=False``
condition with the server's own message). The product reads them as plain JSON dicts.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import WithJsonSchema

# An open object: core/v1 JSON the API server keeps whole.
KubeObject = Annotated[dict[str, Any], WithJsonSchema({"type": "object", "additionalProperties": True})]

# resource.Quantity, as Kubernetes schemas spell it: an integer or a string of the quantity grammar.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
Quantity = Annotated[
    int | str,
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
