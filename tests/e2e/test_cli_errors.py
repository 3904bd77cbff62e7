"""What an operator sees when the cluster cannot answer, or will not: one ``error:`` line that says what
to do, exit 1. Plus the parts of kubectl's plugin contract that need a real kubectl: help and
shell completion through ``kubectl_complete-fluid``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import yaml
from kubernetes import client

from kubectl_fluid.api import names
from kubectl_fluid.cli.main import VERBS
from tests.connectproxy import connect_proxy_running
from tests.e2e.fluid import kubectl_binary
from tests.e2e.test_cli_inject import PLUGIN_DIR, kubectl_fluid, ok, one_error_line
from tests.e2e.wait import eventually


def kubeconfig_with(admin: Path, out: Path, *, server: str | None = None, token: str | None = None) -> Path:
    """The admin kubeconfig with its server or its user replaced."""
    cfg = yaml.safe_load(admin.read_text())
    for cluster in cfg["clusters"]:
        if server:
            cluster["cluster"]["server"] = server
        ca = cluster["cluster"].get("certificate-authority")
        if ca and not Path(ca).is_absolute():
            cluster["cluster"]["certificate-authority"] = str(admin.parent / ca)
    if token:
        for user in cfg["users"]:
            user["user"] = {"token": token}
    out.write_text(json.dumps(cfg))
    return out


def test_an_unreachable_cluster(kubeconfig: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = kubeconfig_with(kubeconfig, tmp_path / "dead", server=f"https://127.0.0.1:{port}")
    line = one_error_line(kubectl_fluid(dead, "datasets"))
    assert line.startswith(
        f"error: cannot reach the Kubernetes API server at https://127.0.0.1:{port} (connection refused)"
    )
    assert "--kubeconfig" in line
    line = one_error_line(kubectl_fluid(kubeconfig, "datasets", "--context", "nope"))
    assert 'context "nope" not found' in line


def test_missing_rbac_names_the_permission(
    kubeconfig: Path, core: client.CoreV1Api, namespace: str, fluid: Path, tmp_path: Path
) -> None:
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    token = eventually(
        lambda: core.create_namespaced_service_account_token(
            "nobody", namespace, {"spec": {"expirationSeconds": 3600}}
        ),
        "a token for ServiceAccount nobody",
        timeout=30,
    ).status.token
    nobody = kubeconfig_with(kubeconfig, tmp_path / "nobody", token=token)

    line = one_error_line(kubectl_fluid(nobody, "datasets", "-n", namespace))
    assert "forbidden" in line
    assert f"kubectl auth can-i list datasets.data.fluid.io -n {namespace}" in line
    line = one_error_line(kubectl_fluid(nobody, "config", "show", "ds1", "-n", namespace))
    assert f"kubectl auth can-i get configmaps -n {namespace}" in line
    line = one_error_line(kubectl_fluid(nobody, "mounts"))
    assert "kubectl auth can-i list fusemounts.data.fluid.io" in line


def test_help_and_completion_through_kubectl(
    kubeconfig: Path, k8s: client.ApiClient, namespace: str, fluid: Path
) -> None:
    out = ok(kubectl_fluid(kubeconfig, "--help"))
    assert out.startswith("Usage: kubectl fluid [OPTIONS] COMMAND [ARGS]...")
    dataset = {
        "apiVersion": names.API_VERSION,
        "kind": "Dataset",
        "metadata": {"name": "ds-complete"},
        "spec": {},
    }
    client.CustomObjectsApi(k8s).create_namespaced_custom_object(
        names.GROUP, names.VERSION, namespace, "datasets", dataset
    )

    def complete(*words: str) -> list[str]:
        env = {
            **os.environ,
            "PATH": f"{PLUGIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
            "KUBECONFIG": str(kubeconfig),
        }
        run = subprocess.run(
            [kubectl_binary(), "__complete", "fluid", *words],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return run.stdout.splitlines()

    verbs = complete("")
    # Every verb, in VERBS' order (read from VERBS: a verb added later is covered too).
    assert [v.split("\t")[0] for v in verbs] == [*VERBS, ":4"]
    assert complete("inject", "cr") == ["cronjob/", ":6"]
    assert complete("config", "show", "-n", namespace, "ds-") == ["ds-complete", ":4"]
    # The dataset-life verbs complete names from the real API server too (their unit tests stub it).
    assert complete("inspect", "dataset", "-n", namespace, "ds-") == ["ds-complete", ":4"]
    assert complete("diagnose", "dataset", "-n", namespace, "ds-") == ["ds-complete", ":4"]
    assert complete("bundle", "-n", namespace, "--dataset", "ds-") == ["ds-complete", ":4"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-complete"}}
    pod["spec"] = {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}
    client.CoreV1Api(k8s).create_namespaced_pod(namespace, pod)
    assert complete("debug", "pod", "-n", namespace, "pod-") == ["pod-complete", ":4"]
    assert complete("diagnose", "pod", "-n", namespace, "pod-") == ["pod-complete", ":4"]


def test_proxy_url_reaches_the_cluster_through_a_connect_proxy(
    kubeconfig: Path, namespace: str, fluid: Path, tmp_path: Path
) -> None:
    cfg = yaml.safe_load(kubeconfig_with(kubeconfig, tmp_path / "plain").read_text())
    with connect_proxy_running() as proxy:
        for cluster in cfg["clusters"]:
            cluster["cluster"]["proxy-url"] = proxy.url
        proxied = tmp_path / "proxied"
        proxied.write_text(json.dumps(cfg))
        run = kubectl_fluid(proxied, "datasets", "-n", namespace)
        assert run.returncode == 0, run.stderr
        assert f"No resources found in {namespace} namespace." in run.stderr
        server = cfg["clusters"][0]["cluster"]["server"].removeprefix("https://")
        assert proxy.tunnels
        assert set(proxy.tunnels) == {server}


def test_a_quoted_boolean_in_the_kubeconfig_is_one_error_line(kubeconfig: Path, tmp_path: Path) -> None:
    cfg = yaml.safe_load(kubeconfig_with(kubeconfig, tmp_path / "plain").read_text())
    cfg["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = "false"
    quoted = tmp_path / "quoted"
    quoted.write_text(yaml.safe_dump(cfg))
    line = one_error_line(kubectl_fluid(quoted, "datasets"))
    assert line.startswith("error: insecure-skip-tls-verify of cluster ")
    assert "must be true or false, not 'false'" in line
