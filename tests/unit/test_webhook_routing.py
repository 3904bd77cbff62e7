"""Routing to handler groups (SPEC §4): first match wins."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_fluid.api import names
from webhook.routing import GROUPS, Group, route


def _labelled(labels: dict[str, str] | None) -> dict[str, Any]:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(
    ("labels", "group"),
    [
        ({names.LABEL_INJECT: "true"}, "clientless"),
        ({names.LABEL_INJECT: "true", names.LABEL_SERVERLESS_INJECT: "true"}, "clientless"),
        ({names.LABEL_SERVERLESS_INJECT: "true"}, "serverless"),
        ({names.LABEL_INJECT: "false", names.LABEL_SERVERLESS_INJECT: "true"}, "serverless"),
        # The objectSelector matches "true" exactly; routing does the same.
        ({names.LABEL_INJECT: "True"}, "serverful"),
        ({"app": "x"}, "serverful"),
        ({}, "serverful"),
        (None, "serverful"),
    ],
)
def test_route(labels: dict[str, str] | None, group: Group) -> None:
    assert route(_labelled(labels)) == group


def test_pod_without_metadata_is_serverful() -> None:
    assert route({}) == "serverful"
    assert GROUPS == ("clientless", "serverless", "serverful")
