"""Which handler group a pod belongs to (SPEC §4). Label values must be exactly ``"true"``, as the
webhook configuration's objectSelector matches them: a pod that only almost asks is not routed as if
it had asked."""

from __future__ import annotations

from typing import Any, Final, Literal

from kubectl_fluid.api import names

Group = Literal["clientless", "serverless", "serverful"]
CLIENTLESS: Final = "clientless"
SERVERLESS: Final = "serverless"
SERVERFUL: Final = "serverful"
GROUPS: Final[tuple[Group, ...]] = (CLIENTLESS, SERVERLESS, SERVERFUL)


def asks_for_injection(pod: dict[str, Any]) -> bool:
    """Whether the pod carries one of the groups' labels. One that does not reached the webhook
    through the propagation entry (``names.WEBHOOK_PROPAGATION_ENTRY``) and is served as serverful,
    never refused."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return any(labels.get(label) == names.TRUE for label in names.INJECTION_LABELS)


def route(pod: dict[str, Any]) -> Group:
    """First match wins: the clientless label, then the serverless label, else serverful."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(names.LABEL_INJECT) == names.TRUE:
        return CLIENTLESS
    if labels.get(names.LABEL_SERVERLESS_INJECT) == names.TRUE:
        return SERVERLESS
    return SERVERFUL
