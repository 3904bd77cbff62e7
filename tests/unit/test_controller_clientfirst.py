"""controller/clientfirst.py: which pods are a runtime's client pods."""

from __future__ import annotations

from typing import Any

from controller.clientfirst import client_pods
from kubectl_fluid.api import names


def pod(name: str, runtime: str, component: names.Component) -> dict[str, Any]:
    labels = {
        names.LABEL_CACHERUNTIME_NAME: runtime,
        names.LABEL_CACHERUNTIME_COMPONENT: names.component_name(runtime, component),
    }
    return {"metadata": {"name": name, "labels": labels}}


def test_only_the_runtimes_client_pods_are_waited_for() -> None:
    pods = [
        pod("ds-client-b", "ds", "client"),
        pod("ds-master-0", "ds", "master"),
        pod("ds-worker-0", "ds", "worker"),
        pod("other-client-x", "other", "client"),
        {"metadata": {"name": "app"}},
        pod("ds-client-a", "ds", "client"),
    ]
    assert client_pods(pods, "ds") == ["ds-client-a", "ds-client-b"]
    assert client_pods([], "ds") == []
