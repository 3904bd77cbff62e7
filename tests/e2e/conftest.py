"""E2E fixtures: one cluster per test session, one fresh namespace per test.

The cluster is the one ``KUBECONFIG`` names when it is set (kind, or any other cluster: the suite runs
there unchanged), otherwise a private local control plane started for this session in a temporary
folder and stopped at its end (see hack/localcluster/). Assertions read the cluster through the
official ``kubernetes`` client, independent of the project's own kr8s glue.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import kr8s
import pytest
from kubernetes import client, config

import localcluster
from tests.e2e.fluid import (
    E2E_NAMESPACE_LABEL,
    MANIFESTS,
    ControllerProcess,
    WebhookProcess,
    install,
    kubectl,
    service_account_kubeconfig,
)
from tests.e2e.wait import eventually


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    given = os.environ.get("KUBECONFIG")
    if given:
        # KUBECONFIG may list several files; the first is the one clients write to and we read.
        yield Path(given.split(os.pathsep)[0])
        return
    nodes = int(os.environ.get("LOCALCLUSTER_NODES", "2"))
    with localcluster.running(tmp_path_factory.mktemp("cluster"), nodes) as cluster:
        # Everything in this session (kr8s, kubectl, the official client, child processes) sees it.
        os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
        try:
            yield cluster.kubeconfig
        finally:
            del os.environ["KUBECONFIG"]


@pytest.fixture(scope="session")
def k8s(kubeconfig: Path) -> client.ApiClient:
    """The official client: the independent eyes of every e2e assertion."""
    api: client.ApiClient = config.new_client_from_config(config_file=str(kubeconfig))
    return api


@pytest.fixture(scope="session")
def core(k8s: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(k8s)


@pytest.fixture(scope="session")
def apps(k8s: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(k8s)


@pytest.fixture(scope="session")
def kr8s_api(kubeconfig: Path) -> kr8s.Api:
    return kr8s.api(kubeconfig=str(kubeconfig))


@pytest.fixture
def namespace(core: client.CoreV1Api, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace, deleted after the test. Waits for its ``default`` ServiceAccount: the
    ServiceAccount admission plugin refuses pods created before the controller-manager makes it."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].rstrip("-")
    name = f"e2e-{slug}-{secrets.token_hex(3)}"
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={E2E_NAMESPACE_LABEL: "true"}))
    )
    try:
        eventually(
            lambda: core.read_namespaced_service_account("default", name),
            f"ServiceAccount default in namespace {name}",
            timeout=30,
        )
        yield name
    finally:
        core.delete_namespace(name)


@pytest.fixture(scope="session")
def fluid(kubeconfig: Path) -> Path:
    """CRDs, namespace, RBAC and the sample CacheRuntimeClasses installed from manifests/."""
    install(kubeconfig)
    for sample in ("cacheruntimeclass-mooncake.yaml", "cacheruntimeclass-curvine.yaml"):
        kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "samples" / sample))
    return kubeconfig


@pytest.fixture(scope="session")
def controller_kubeconfig(
    fluid: Path, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return service_account_kubeconfig(fluid, core, tmp_path_factory.mktemp("sa") / "controller.kubeconfig")


@pytest.fixture(scope="session")
def controller_session(
    controller_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControllerProcess]:
    proc = ControllerProcess(controller_kubeconfig, tmp_path_factory.mktemp("logs"), "e2e-a")
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def controller(controller_session: ControllerProcess) -> ControllerProcess:
    """The controller, running and ready (started again if a previous test stopped it)."""
    if not controller_session.alive():
        controller_session.start()
    controller_session.wait_ready()
    return controller_session


@pytest.fixture(scope="session")
def webhook_session(
    fluid: Path, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebhookProcess]:
    logs = tmp_path_factory.mktemp("webhook")
    sa = service_account_kubeconfig(fluid, core, logs / "webhook.kubeconfig", account="fluid-webhook")
    proc = WebhookProcess(sa, fluid, logs)
    try:
        yield proc
    finally:
        proc.stop()
        # Without its server a registered configuration (failurePolicy Fail) refuses labelled pods.
        client.AdmissionregistrationV1Api(
            config.new_client_from_config(config_file=str(fluid))
        ).delete_mutating_webhook_configuration(proc.config_name)


@pytest.fixture
def webhook(webhook_session: WebhookProcess, k8s: client.ApiClient) -> WebhookProcess:
    """The webhook, running, registered with its caBundle, and ready (restarted if a test stopped it)."""
    if not webhook_session.alive():
        webhook_session.start()
        webhook_session.register()
    webhook_session.wait_ready()
    admission = client.AdmissionregistrationV1Api(k8s)
    eventually(
        lambda: webhook_session.ca_bundle_patched(admission), "caBundle patched into the configuration"
    )
    return webhook_session


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fault tests' figures (tests/e2e/test_faults.py), printed after the run so that CI's log and
    a developer's terminal carry them: they are measurements, not pass/fail thresholds."""
    import sys

    faults = sys.modules.get("tests.e2e.test_faults")
    recorded = getattr(faults, "FIGURES", None)
    if not recorded:
        return
    terminalreporter.section("fault figures")
    for scenario, values in recorded.items():
        terminalreporter.line(f"{scenario}:")
        for key, value in values.items():
            terminalreporter.line(f"  {key.replace('_', ' ')}: {value}")
