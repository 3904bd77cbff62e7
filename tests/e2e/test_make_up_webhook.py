"""``make up`` (hack/localcluster/product.py) on a cluster of its own: a webhook process that runs but does
not answer ``/healthz`` (its event loop wedged, as in issue 11) is restarted, a healthy one is left alone, and
the registration carries all three webhook entries, each pointed at the local process."""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client, config

import localcluster
from kubectl_fluid.api import names
from localcluster import product

WEBHOOK = "fluid-webhook"


def webhook_procs(cluster: localcluster.Cluster) -> list[localcluster.Proc]:
    return [p for p in cluster.procs if p.name == WEBHOOK]


def answers(port: int, ca: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=3, context=context) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.mark.skipif(shutil.which("go") is None, reason="building the local control plane needs Go >= 1.26")
def test_a_webhook_that_stops_answering_is_restarted_by_make_up(tmp_path: Path, kubeconfig: Path) -> None:
    state = tmp_path / "wedged"
    cluster = localcluster.up(state, 1, None)
    try:
        product.install(cluster)
        product.ensure_webhook(cluster)
        ca = state / "webhook-certs" / "ca.crt"
        [first] = webhook_procs(cluster)
        product.ensure_webhook(cluster)
        assert webhook_procs(cluster) == [first], "a webhook that answers is left alone"

        admission = client.AdmissionregistrationV1Api(config.new_client_from_config(str(cluster.kubeconfig)))
        registered = admission.read_mutating_webhook_configuration(names.WEBHOOK_NAME).webhooks
        url = f"https://127.0.0.1:{cluster.ports[WEBHOOK]}{names.WEBHOOK_MUTATE_PATH}"
        assert {h.name: (h.client_config.url, h.object_selector.match_labels) for h in registered} == {
            **{entry: (url, {label: names.TRUE}) for entry, label in names.WEBHOOK_ENTRIES.items()},
            names.WEBHOOK_PROPAGATION_ENTRY: (url, None),
        }

        # Alive (its pid and start time are those recorded) but answering nothing: from outside, what
        # a webhook whose event loop is stuck looks like.
        os.kill(first.pid, signal.SIGSTOP)
        assert first.alive()
        assert not answers(cluster.ports[WEBHOOK], ca)
        product.ensure_webhook(cluster)
        [second] = webhook_procs(cluster)
        assert second.pid != first.pid
        assert not first.alive()
        assert answers(cluster.ports[WEBHOOK], ca)
        registered = admission.read_mutating_webhook_configuration(names.WEBHOOK_NAME).webhooks
        assert {h.client_config.url for h in registered} == {
            f"https://127.0.0.1:{cluster.ports[WEBHOOK]}{names.WEBHOOK_MUTATE_PATH}"
        }
    finally:
        localcluster.down(state)
    assert not any(p.alive() for p in cluster.procs)
