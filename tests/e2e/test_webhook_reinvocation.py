"""Issue 27, item 9, through the real API server: reinvocation injects what a later webhook's container
lacks, and the done label skips no check.

The later webhook is the test's own: a second MutatingWebhookConfiguration, named to sort after ours
(the API server calls configurations in name order), served over HTTPS from this process, which adds
a container to the pods of this test's namespace that ask for it. Our entry's reinvocationPolicy
IfNeeded then makes the API server call us again."""

from __future__ import annotations

import base64
import http.server
import json
import secrets
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import WEBHOOK_HOST, WebhookProcess
from tests.e2e.test_controller import Fluid, dataset
from tests.e2e.test_webhook import assert_injected, create, denial, pod
from tests.serving import serving
from webhook import certs

# The pods the later webhook adds a container to.
ADD_CONTAINER_LABEL = "kubectl-fluid.test/add-container"
LATE = {"name": "late", "image": "registry.k8s.io/pause:3.10"}


class LaterWebhook:
    """Adds container ``late`` to a pod that lacks it; records, for each call, our volume as the pod
    it was sent carried it (so that ours ran first), or None."""

    def __init__(self) -> None:
        self.our_volume: list[dict[str, Any] | None] = []

    def answer(self, review: dict[str, Any]) -> dict[str, Any]:
        request = review["request"]
        spec = request["object"]["spec"]
        ours = names.runtime_config_volume("ds1")
        self.our_volume.append(next((v for v in spec.get("volumes") or () if v["name"] == ours), None))
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        if all(c["name"] != LATE["name"] for c in spec["containers"]):
            patch = [{"op": "add", "path": "/spec/containers/-", "value": LATE}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    def server(self, cert_dir: Path) -> http.server.ThreadingHTTPServer:
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.dumps(
                    hook.answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer((WEBHOOK_HOST, 0), Handler)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert_dir / "tls.crt", cert_dir / "tls.key")
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
        return httpd


@pytest.fixture
def later_webhook(
    k8s: client.ApiClient, namespace: str, webhook: WebhookProcess, tmp_path: Path
) -> Iterator[LaterWebhook]:
    bundle = certs.generate("e2e-later-webhook", [], [WEBHOOK_HOST])
    certs.write_files(bundle, tmp_path)
    hook = LaterWebhook()
    admission = client.AdmissionregistrationV1Api(k8s)
    name = f"zz-e2e-later-{secrets.token_hex(3)}"
    assert name > webhook.config_name, "the API server calls configurations in name order"
    with serving(hook.server(tmp_path)) as port:
        admission.create_mutating_webhook_configuration(
            {
                "metadata": {"name": name},
                "webhooks": [
                    {
                        "name": "add-container.e2e.kubectl-fluid.test",
                        "clientConfig": {
                            "url": f"https://{WEBHOOK_HOST}:{port}/",
                            "caBundle": base64.b64encode(bundle.ca_cert).decode(),
                        },
                        "rules": [
                            {
                                "operations": ["CREATE"],
                                "apiGroups": [""],
                                "apiVersions": ["v1"],
                                "resources": ["pods"],
                            }
                        ],
                        "objectSelector": {"matchLabels": {ADD_CONTAINER_LABEL: "true"}},
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": namespace},
                        },
                        "failurePolicy": "Fail",
                        "sideEffects": "None",
                        "timeoutSeconds": 5,
                        "reinvocationPolicy": "Never",
                        "admissionReviewVersions": ["v1"],
                    }
                ],
            }
        )
        try:
            yield hook
        finally:
            admission.delete_mutating_webhook_configuration(name)


def runtime_config(fl: Fluid, ds: str) -> None:
    """Dataset ``ds`` and a ready runtime config, as the controller would leave them."""
    fl.create(dataset(ds))
    fl.core.create_namespaced_config_map(
        fl.ns,
        {
            "metadata": {
                "name": names.runtime_config_configmap(ds),
                "labels": {names.LABEL_APP_MANAGED_BY: names.MANAGED_BY},
            },
            "data": {names.RUNTIME_JSON_KEY: "{}", names.RUNTIME_SH_KEY: "#!/bin/sh\n"},
        },
    )


def test_a_container_a_later_webhook_adds_gets_the_config_on_reinvocation(
    k8s: client.ApiClient, namespace: str, webhook: WebhookProcess, later_webhook: LaterWebhook
) -> None:
    fl = Fluid(k8s, namespace)
    runtime_config(fl, "ds1")
    before = webhook.metric("fluid_webhook_admissions_total")
    body = pod("late", datasets="ds1")
    body["metadata"]["labels"][ADD_CONTAINER_LABEL] = "true"
    stored = create(fl, body)
    # The later webhook ran after ours, once, and was sent our volume as the API server defaults it:
    # a reinvocation that took that for a change of ours would undo the default.
    assert later_webhook.our_volume == [
        {
            "name": "fluid-runtime-config-ds1",
            "configMap": {"name": "fluid-runtime-config-ds1", "defaultMode": 420},
        }
    ]
    assert [c["name"] for c in stored["spec"]["containers"]] == ["app", "side", "late"]
    assert webhook.metric("fluid_webhook_admissions_total") == before + 2, "ours ran again"
    assert_injected(stored, ["ds1"])
    # The second pass added to "late" alone: nothing twice, and our volume as the API server keeps it.
    volumes = [v["name"] for v in stored["spec"]["volumes"]]
    assert len(volumes) == len(set(volumes))
    assert [c.get("volumeMounts") for c in stored["spec"]["containers"][:2]] == [
        stored["spec"]["containers"][2]["volumeMounts"]
    ] * 2


def test_a_pod_created_with_the_done_label_is_still_checked_and_injected(
    k8s: client.ApiClient, namespace: str, webhook: WebhookProcess
) -> None:
    fl = Fluid(k8s, namespace)
    runtime_config(fl, "ds1")
    done = pod("missing", datasets="ds9")
    done["metadata"]["labels"][names.LABEL_INJECT_DONE] = names.TRUE
    with pytest.raises(client.ApiException) as e:
        create(fl, done)
    assert f'dataset "ds9" not found in namespace "{namespace}"' in denial(e.value)

    ready = pod("ready", datasets="ds1")
    ready["metadata"]["labels"][names.LABEL_INJECT_DONE] = names.TRUE
    assert_injected(create(fl, ready), ["ds1"])
