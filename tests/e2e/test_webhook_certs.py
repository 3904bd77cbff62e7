"""``--bootstrap-certs`` against a real API server (SPEC §4, TLS): the shared Secret is created once and
reused, racing replicas end with one bundle, renewal keeps the CA, and the webhook configuration's
caBundle is set and kept set when someone resets it."""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.client import connect
from tests.e2e.wait import as_json
from webhook import certs
from webhook.cabundle import keep_ca_bundle_patched, patch_ca_bundle
from webhook.certs import CertBundle
from webhook.certsecret import bundle_of, ensure_secret

DNS = certs.service_dns_names(names.WEBHOOK_SERVICE, names.FLUID_NAMESPACE)
IPS = ["127.0.0.1"]


def run(kubeconfig: Path, body: Callable[[Any], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        return await body(await connect(str(kubeconfig)))

    return asyncio.run(main())


def stored(core: client.CoreV1Api, namespace: str, name: str) -> tuple[dict[str, Any], CertBundle | None]:
    secret = as_json(core.read_namespaced_secret(name, namespace))
    return secret, bundle_of(secret)


def secret_body(name: str, bundle: CertBundle) -> dict[str, Any]:
    data = {k: base64.b64encode(v).decode() for k, v in bundle.as_files().items()}
    return {"metadata": {"name": name}, "type": "kubernetes.io/tls", "data": data}


async def until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await asyncio.to_thread(check):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


# --------------------------------------------------------------------------- the Secret


def test_secret_is_created_once_and_reused(kubeconfig: Path, core: client.CoreV1Api, namespace: str) -> None:
    first: CertBundle = run(
        kubeconfig, lambda api: ensure_secret(api, namespace, names.WEBHOOK_CERT_SECRET, DNS, IPS)
    )
    secret, held = stored(core, namespace, names.WEBHOOK_CERT_SECRET)
    assert secret["type"] == "kubernetes.io/tls"
    assert sorted(secret["data"]) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert held == first
    assert certs.problem(first, DNS, IPS, datetime.now(UTC)) is None

    again: CertBundle = run(
        kubeconfig, lambda api: ensure_secret(api, namespace, names.WEBHOOK_CERT_SECRET, DNS, IPS)
    )
    assert again == first
    # Reused as it is: not even rewritten.
    after, _ = stored(core, namespace, names.WEBHOOK_CERT_SECRET)
    assert after["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]


@pytest.mark.parametrize("start", ["absent", "due"])
def test_racing_replicas_end_with_one_bundle(
    kubeconfig: Path,
    core: client.CoreV1Api,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    start: str,
) -> None:
    """Four replicas read the same state (no Secret: all create; a Secret due for renewal: all
    update), and only then write: exactly one write lands, the other three adopt it."""
    name = f"race-{secrets.token_hex(3)}"
    if start == "due":
        aging = certs.generate("ca", DNS, IPS, now=datetime.now(UTC) - timedelta(days=340))
        core.create_namespaced_secret(namespace, secret_body(name, aging))
    replicas = 4
    reads = 0
    real_get = http.get

    async def get_together(api: Any, path: str) -> dict[str, Any] | None:
        # The first read of every replica returns only when all have read: a guaranteed race.
        nonlocal reads
        found = await real_get(api, path)
        reads += 1
        if reads <= replicas:
            await barrier.wait()
        return found

    async def race(_api: Any) -> list[CertBundle]:
        apis = [await connect(str(kubeconfig)) for _ in range(replicas)]  # one client per replica
        return list(await asyncio.gather(*(ensure_secret(a, namespace, name, DNS, IPS) for a in apis)))

    barrier = asyncio.Barrier(replicas)
    monkeypatch.setattr(http, "get", get_together)
    results: list[CertBundle] = run(kubeconfig, race)
    _, held = stored(core, namespace, name)
    assert held is not None
    assert all(r == held for r in results)
    # Each loser read once more (got 409 Conflict, adopted the winner's): one write landed.
    assert reads == replicas + (replicas - 1)
    if start == "due":
        assert held.ca_cert == aging.ca_cert


def test_renewal_keeps_the_ca_and_broken_secrets_are_replaced(
    kubeconfig: Path, core: client.CoreV1Api, namespace: str
) -> None:
    # Issued 340 days ago for a year: inside the 30-day margin.
    old = certs.generate(names.WEBHOOK_CA_NAME, DNS[:1], IPS, now=datetime.now(UTC) - timedelta(days=340))
    body = secret_body("aging", old)
    body["metadata"]["labels"] = {"keep": "me"}
    body["data"]["extra"] = base64.b64encode(b"x").decode()
    core.create_namespaced_secret(namespace, body)
    renewed: CertBundle = run(kubeconfig, lambda api: ensure_secret(api, namespace, "aging", DNS, IPS))
    assert renewed.ca_cert == old.ca_cert  # caBundle stays valid for replicas still serving the old cert
    assert certs.serial(renewed.cert) != certs.serial(old.cert)
    assert certs.problem(renewed, DNS, IPS, datetime.now(UTC)) is None
    secret, held = stored(core, namespace, "aging")
    assert held == renewed
    assert secret["metadata"]["labels"] == {"keep": "me"}
    assert "extra" in secret["data"]

    # Not ours to keep as is: an Opaque Secret with junk in it. Its type cannot change, so it stays.
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "junk"}, "type": "Opaque", "data": {"tls.crt": "AAAA"}}
    )
    fresh: CertBundle = run(kubeconfig, lambda api: ensure_secret(api, namespace, "junk", DNS, IPS))
    secret, held = stored(core, namespace, "junk")
    assert held == fresh
    assert secret["type"] == "Opaque"


# --------------------------------------------------------------------------- the caBundle


@pytest.fixture
def admission(k8s: client.ApiClient) -> client.AdmissionregistrationV1Api:
    return client.AdmissionregistrationV1Api(k8s)


@pytest.fixture
def webhook_config(admission: client.AdmissionregistrationV1Api) -> Iterator[str]:
    """A unique name; the configuration itself is created by the test (some start without it) and
    deleted here. Its webhooks select a label nothing has and ignore failures: harmless to the
    cluster while it exists."""
    name = f"e2e-certs-{secrets.token_hex(4)}"
    try:
        yield name
    finally:
        try:
            admission.delete_mutating_webhook_configuration(name)
        except client.ApiException as e:
            if e.status != 404:
                raise


def create_config(admission: client.AdmissionregistrationV1Api, name: str, hooks: int = 2) -> None:
    admission.create_mutating_webhook_configuration(
        {
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": f"w{i}.e2e.fluid.io",
                    "clientConfig": {"url": f"https://127.0.0.1:1/x{i}"},
                    "objectSelector": {"matchLabels": {"e2e.fluid.io/nothing-has-this": name}},
                    "failurePolicy": "Ignore",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
                for i in range(hooks)
            ],
        }
    )


def bundles(admission: client.AdmissionregistrationV1Api, name: str) -> list[str | None]:
    config = as_json(admission.read_mutating_webhook_configuration(name))
    return [w["clientConfig"].get("caBundle") for w in config["webhooks"]]


def reset(admission: client.AdmissionregistrationV1Api, name: str) -> None:
    """What a re-apply of the manifest (which carries no caBundle) does."""
    admission.patch_mutating_webhook_configuration(
        name, [{"op": "remove", "path": "/webhooks/1/clientConfig/caBundle"}]
    )


def test_patch_ca_bundle_sets_it_on_every_webhook_once(
    kubeconfig: Path, admission: client.AdmissionregistrationV1Api, webhook_config: str
) -> None:
    ca = certs.generate("e2e", ["a"], []).ca_cert
    wanted = base64.b64encode(ca).decode()

    async def body(api: Any) -> None:
        assert await patch_ca_bundle(api, webhook_config, ca) == "missing"
        await asyncio.to_thread(create_config, admission, webhook_config)
        assert await patch_ca_bundle(api, webhook_config, ca) == "patched"
        assert await asyncio.to_thread(bundles, admission, webhook_config) == [wanted, wanted]
        version = as_json(admission.read_mutating_webhook_configuration(webhook_config))["metadata"][
            "resourceVersion"
        ]
        assert await patch_ca_bundle(api, webhook_config, ca) == "unchanged"
        after = as_json(admission.read_mutating_webhook_configuration(webhook_config))
        assert after["metadata"]["resourceVersion"] == version  # no write when nothing differs

        await asyncio.to_thread(reset, admission, webhook_config)
        assert await patch_ca_bundle(api, webhook_config, ca) == "patched"
        assert await asyncio.to_thread(bundles, admission, webhook_config) == [wanted, wanted]

    run(kubeconfig, body)


@pytest.mark.parametrize("watch", [True, False], ids=["watch", "poll"])
def test_keep_ca_bundle_patched_restores_a_reset(
    kubeconfig: Path, admission: client.AdmissionregistrationV1Api, webhook_config: str, watch: bool
) -> None:
    ca = certs.generate("e2e", ["a"], []).ca_cert
    wanted = base64.b64encode(ca).decode()
    # With the watch a reset is repaired long before the period; without it the period does it.
    period = 60.0 if watch else 0.3

    def patched() -> bool:
        return bundles(admission, webhook_config) == [wanted, wanted]

    async def body(api: Any) -> None:
        task = asyncio.create_task(keep_ca_bundle_patched(api, webhook_config, ca, period, watch=watch))
        try:
            if not watch:
                await asyncio.sleep(0.5)  # the loop has found nothing yet; it keeps trying
            # Applied after the loop started: it must not have given up.
            await asyncio.to_thread(create_config, admission, webhook_config)
            await until(patched, "caBundle set on the new configuration")
            for _ in range(3):
                await asyncio.to_thread(reset, admission, webhook_config)
                await until(patched, "caBundle restored after a reset")
            assert not task.done()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(kubeconfig, body)
