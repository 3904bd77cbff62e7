"""``kubectl fluid version``: which version a workload is at (its label, else its image's tag), the
table, -o json, skew warnings, and ``--client`` without a cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid import __version__
from kubectl_fluid.api import names
from kubectl_fluid.cli.main import main
from kubectl_fluid.cli.settings import Session, Settings
from kubectl_fluid.cli.version import component_of, image_tag, skewed
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.kubeconfig import Access


def workload(
    kind: str, name: str, images: list[str], labels: dict[str, str] | None = None, **status: int
) -> Any:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": names.FLUID_NAMESPACE, "labels": labels or {}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": i} for i in images]}}},
        "status": status,
    }


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        ("kubectl-fluid:latest", "latest"),
        ("registry.example:5000/team/kubectl-fluid:0.1.0", "0.1.0"),
        ("registry.example:5000/kubectl-fluid", None),
        ("kubectl-fluid", None),
        ("kubectl-fluid@sha256:abc", "sha256:abc"),
        ("kubectl-fluid:0.1.0@sha256:abc", "sha256:abc"),
    ],
)
def test_image_tag(image: str, tag: str | None) -> None:
    assert image_tag(image) == tag


@given(st.from_regex(r"[a-z0-9]+(\.[a-z0-9]+)*(:[0-9]{2,5})?(/[a-z0-9]+){1,3}", fullmatch=True))
def test_a_registry_port_is_never_taken_for_a_tag(repository: str) -> None:
    assert image_tag(repository) is None
    assert image_tag(f"{repository}:v1") == "v1"


def test_the_version_label_wins_over_the_image_tag() -> None:
    labelled = workload(
        "Deployment", "fluid-webhook", ["kubectl-fluid:latest"], {names.LABEL_APP_VERSION: "0.1.0"}
    )
    assert component_of(labelled).version == "0.1.0"
    assert component_of(workload("Deployment", "w", ["kubectl-fluid:latest"])).version == "latest"
    assert component_of(workload("Deployment", "w", ["kubectl-fluid"])).version is None


def test_an_image_at_a_release_wins_over_the_label() -> None:
    # The manifests' label stays at their release when an overlay runs another image (kustomize
    # `images:`, the chart's image.tag): what runs is the image.
    overridden = workload(
        "Deployment", "fluid-webhook", ["kubectl-fluid:0.2.0"], {names.LABEL_APP_VERSION: "0.1.0"}
    )
    assert component_of(overridden).version == "0.2.0"
    assert [c.name for c in skewed("0.1.0", [component_of(overridden)])] == ["fluid-webhook"]
    pinned = workload("Deployment", "w", ["kubectl-fluid@sha256:ab"], {names.LABEL_APP_VERSION: "0.1.0"})
    assert component_of(pinned).version == "0.1.0"


def test_ready_counts_by_kind() -> None:
    deploy = component_of(workload("Deployment", "d", ["i:1"], readyReplicas=1))
    assert deploy.ready == "1/2"
    daemons = component_of(workload("DaemonSet", "n", ["i:1"], numberReady=3, desiredNumberScheduled=4))
    assert daemons.ready == "3/4"


def test_skew_is_a_different_release_never_latest_or_a_digest() -> None:
    comps = [
        component_of(workload("Deployment", n, [f"kubectl-fluid:{t}"]))
        for n, t in (
            ("a", "latest"),
            ("b", "v0.1.0"),
            ("c", "0.2.0"),
            ("d", "sha256:ab"),
            ("e", "0.1.0-rc.1"),
        )
    ]
    assert [c.name for c in skewed("0.1.0", comps)] == ["c", "e"]


class VersionApi:
    def __init__(self, workloads: list[Any]) -> None:
        self.workloads = workloads
        self.calls: list[tuple[str, str, Any]] = []

    def request(self, method: str, path: str, **_: Any) -> Any:
        self.calls.append((method, path, None))
        assert path == "/version"
        return {"gitVersion": "v1.36.3", "platform": "linux/amd64"}

    def list(self, path: str, params: Any = None) -> list[Any]:
        self.calls.append(("LIST", path, params))
        kind = (
            "Deployment"
            if path == resources.DEPLOYMENTS.collection_path(names.FLUID_NAMESPACE)
            else "DaemonSet"
        )
        return [{k: v for k, v in w.items() if k != "kind"} for w in self.workloads if w["kind"] == kind]

    def __enter__(self) -> VersionApi:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> VersionApi:
    webhook = {names.LABEL_APP_COMPONENT: "webhook"}
    node = {names.LABEL_APP_COMPONENT: "csi-node"}
    fake = VersionApi(
        [
            workload("Deployment", "fluid-webhook", ["kubectl-fluid:latest"], webhook, readyReplicas=2),
            workload(
                "DaemonSet",
                "fluid-csi-node",
                ["kubectl-fluid:0.0.9", "registrar:v2"],
                node,
                numberReady=2,
                desiredNumberScheduled=2,
            ),
        ]
    )
    access = Access(server="https://x", namespace="elsewhere", context="c")
    monkeypatch.setattr(Settings, "open", lambda self: Session(fake, "elsewhere", access))  # type: ignore[arg-type]
    return fake


def test_the_table_reads_fluid_system_by_the_part_of_label(
    api: VersionApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["version"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"Client Version: {__version__}",
        "Server Version: v1.36.3",
        "COMPONENT   KIND         NAME             VERSION   READY   IMAGE",
        "csi-node    DaemonSet    fluid-csi-node   0.0.9     2/2     kubectl-fluid:0.0.9",
        "webhook     Deployment   fluid-webhook    latest    2/2     kubectl-fluid:latest",
    ]
    assert err == f"Warning: daemonset/fluid-csi-node runs version 0.0.9, this plugin is {__version__}\n"
    selector = {"labelSelector": "app.kubernetes.io/part-of=fluid"}
    assert ("LIST", resources.DEPLOYMENTS.collection_path(names.FLUID_NAMESPACE), selector) in api.calls
    assert ("LIST", resources.DAEMONSETS.collection_path(names.FLUID_NAMESPACE), selector) in api.calls


def test_wide_json_and_another_namespace(api: VersionApi, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "-o", "wide"]) == 0
    assert "kubectl-fluid:0.0.9,registrar:v2" in capsys.readouterr().out
    assert main(["version", "-o", "json", "-n", "ops"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["clientVersion"] == {"version": __version__}
    assert document["serverVersion"]["gitVersion"] == "v1.36.3"
    assert api.calls[-1][1] == resources.DAEMONSETS.collection_path("ops")


def test_client_only_needs_no_cluster(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")
    assert main(["version", "--client"]) == 0
    assert capsys.readouterr().out == f"Client Version: {__version__}\n"
    assert main(["version", "--client", "-o", "yaml"]) == 0
    assert capsys.readouterr().out == f"clientVersion:\n  version: {__version__}\n"


def test_the_client_line_stands_when_the_cluster_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    assert main(["version", "--kubeconfig", str(tmp_path / "none")]) == 1
    out, err = capsys.readouterr()
    assert out == f"Client Version: {__version__}\n"
    assert err.startswith("error: kubeconfig ")
