"""``kubectl fluid bundle``'s plan (what goes where, from a hand-made snapshot), its redaction on the
way out, the archive it writes, and its progress lines."""

from __future__ import annotations

import io
import json
import tarfile
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from kubectl_fluid.api import names
from kubectl_fluid.cli import bundle, bundleplan
from kubectl_fluid.cli.snapshot import Snapshot
from kubectl_fluid.kube.errors import ApiError
from kubectl_fluid.redact import MASK

PLANTED = "Zq-planted-value-42"
JWT = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtZSJ9.c2ln"


def obj(name: str, namespace: str = "ns", **rest: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", "managedFields": [{}]}
    meta.update(rest.pop("metadata", {}))
    return {"metadata": meta, **rest}


def pod(name: str, namespace: str = "ns", restarts: int = 0, **labels: str) -> dict[str, Any]:
    return obj(
        name,
        namespace,
        metadata={"labels": labels, "annotations": {"note": f"token={PLANTED}"}},
        spec={
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "main", "env": [{"name": "DB_PASSWORD", "value": PLANTED}]}],
        },
        status={
            "initContainerStatuses": [{"name": "init", "restartCount": 0}],
            "containerStatuses": [{"name": "main", "restartCount": restarts}],
        },
    )


def snapshots() -> tuple[Snapshot, Snapshot]:
    runtime_label = {names.LABEL_CACHERUNTIME_NAME: "ds"}
    app = obj("app", spec={"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "ds"}}]})
    snap = Snapshot(
        "ns",
        lists={
            "datasets": [obj("ds"), obj("lonely")],
            "cacheruntimes": [obj("ds", spec={"runtimeClassName": "curvine"})],
            "cacheruntimeclasses": [obj("curvine", namespace="")],
            "configmaps": [
                obj(
                    names.runtime_config_configmap("ds"),
                    data={"runtime.json": json.dumps({"secret": PLANTED})},
                ),
                obj("unrelated", data={"x": "y"}),
            ],
            "persistentvolumeclaims": [obj("ds")],
            "persistentvolumes": [obj(names.dataset_pv("ns", "ds"), namespace="")],
            "statefulsets": [obj("ds-master", metadata={"labels": runtime_label})],
            "daemonsets": [obj("ds-client", metadata={"labels": runtime_label})],
            "pods": [pod("ds-master-0", restarts=3, **runtime_label), app],
            "fusemounts": [obj("n1-abc", namespace="", spec={"dataset": {"namespace": "ns", "name": "ds"}})],
            "dataloads": [obj("load", spec={"dataset": {"name": "ds"}})],
            "nodes": [obj("n1", namespace="", status={"images": [{"names": ["big"]}], "conditions": []})],
            "csinodes": [obj("n1", namespace="")],
            "events": [obj("e1", involvedObject={"uid": "uid-ns-ds"}, message=f"Bearer {PLANTED}")],
            "mutatingwebhookconfigurations": [
                obj(names.WEBHOOK_NAME, namespace=""),
                obj("other", namespace=""),
            ],
        },
    )
    system = Snapshot(
        names.FLUID_NAMESPACE,
        lists={"pods": [pod("fluid-controller-1", names.FLUID_NAMESPACE)], "events": []},
    )
    return snap, system


def make_plan(dataset: tuple[str, str] | None = None) -> bundleplan.Plan:
    snap, system = snapshots()
    return bundleplan.plan(snap, system, bundleplan.in_scope(snap, dataset), {"clientVersion": {}})


def test_the_plan_lists_the_files_a_maintainer_browses() -> None:
    plan = make_plan()
    ds, lonely = "namespaces/ns/datasets/ds", "namespaces/ns/datasets/lonely"
    assert plan.paths() == [
        "versions.yaml",
        "cluster/nodes.yaml",
        "cluster/csinodes.yaml",
        "cluster/fusemounts.yaml",
        "cluster/mutatingwebhookconfigurations.yaml",
        "fluid-system/pods.yaml",
        "fluid-system/events.yaml",
        "namespaces/ns/events.yaml",
        f"{ds}/dataset.yaml",
        f"{ds}/cacheruntime.yaml",
        f"{ds}/cacheruntimeclass.yaml",
        f"{ds}/configmap.yaml",
        f"{ds}/persistentvolume.yaml",
        f"{ds}/persistentvolumeclaim.yaml",
        f"{ds}/workloads.yaml",
        f"{ds}/pods.yaml",
        f"{ds}/app-pods.yaml",
        f"{ds}/fusemounts.yaml",
        f"{ds}/dataloads.yaml",
        f"{ds}/events.yaml",
        f"{lonely}/dataset.yaml",
        *(
            f"{lonely}/{f}.yaml"
            for f in ("workloads", "pods", "app-pods", "fusemounts", "dataloads", "events")
        ),
        # Logs: every container, init ones too; the previous log only of the one that restarted.
        "logs/fluid-system/fluid-controller-1/init.log",
        "logs/fluid-system/fluid-controller-1/main.log",
        "logs/ns/ds-master-0/init.log",
        "logs/ns/ds-master-0/main.log",
        "logs/ns/ds-master-0/main.previous.log",
    ]
    assert plan.missing == [
        "CacheRuntime ns/lonely",
        "the CacheRuntimeClass of ns/lonely",
        f"ConfigMap ns/{names.runtime_config_configmap('lonely')}",
        f"PersistentVolume {names.dataset_pv('ns', 'lonely')}",
        "PersistentVolumeClaim ns/lonely",
    ]
    previous = [r for r in plan.logs if r.previous]
    assert [(r.pod, r.container) for r in previous] == [("ds-master-0", "main")]
    assert make_plan(("ns", "lonely")).paths()[8] == f"{lonely}/dataset.yaml"


def files(plan: bundleplan.Plan) -> dict[str, Any]:
    return {e.path: yaml.safe_load(bundleplan.content(e)) for e in plan.entries}


def test_every_file_is_redacted_parses_and_holds_what_kubectl_would_show() -> None:
    plan = make_plan()
    for entry in plan.entries:
        assert PLANTED.encode() not in bundleplan.content(entry), entry.path
    out = files(plan)
    [app] = out["namespaces/ns/datasets/ds/app-pods.yaml"]["items"]
    assert app["metadata"]["name"] == "app"
    master = out["namespaces/ns/datasets/ds/pods.yaml"]["items"][0]
    assert master["metadata"]["annotations"] == {"note": f"token={MASK}"}
    assert master["spec"]["containers"][0]["env"] == [{"name": "DB_PASSWORD", "value": MASK}]
    assert "managedFields" not in master["metadata"]
    [node] = out["cluster/nodes.yaml"]["items"]
    assert "images" not in node["status"]
    hooks = out["cluster/mutatingwebhookconfigurations.yaml"]["items"]
    assert [h["metadata"]["name"] for h in hooks] == [names.WEBHOOK_NAME]
    # The runtime ConfigMap only, not the namespace's others.
    assert out["namespaces/ns/datasets/ds/configmap.yaml"]["metadata"][
        "name"
    ] == names.runtime_config_configmap("ds")
    assert [e["metadata"]["name"] for e in out["namespaces/ns/datasets/ds/events.yaml"]["items"]] == ["e1"]
    assert bundleplan.log_content(f"connecting with password={PLANTED}\n{JWT}\n".encode()) == (
        f"connecting with password={MASK}\n{MASK}\n".encode()
    )


def test_extras_add_files_from_the_same_snapshot() -> None:
    snap, system = snapshots()
    seen: list[Any] = []

    def diagnose(s: Snapshot, datasets: Any) -> list[bundleplan.Entry]:
        seen.append((s, list(datasets)))
        return [bundleplan.Entry("diagnose.json", {"findings": [], "note": f"secret={PLANTED}"})]

    plan = bundleplan.plan(snap, system, [("ns", "ds")], {}, [diagnose])
    assert seen == [(snap, [("ns", "ds")])]
    assert plan.entries[-1].path == "diagnose.json"
    assert json.loads(bundleplan.content(plan.entries[-1])) == {"findings": [], "note": f"secret={MASK}"}


class FakeApi:
    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, str]]] = []

    def raw(self, path: str, params: dict[str, str]) -> bytes:
        self.asked.append((path, params))
        if params["container"] == "init":
            raise ApiError(400, "BadRequest", "container init is waiting to start", method="GET", path=path)
        return f"started\nexport AWS_SECRET_ACCESS_KEY={PLANTED}\n".encode()


def test_the_archive_holds_the_plan_the_logs_and_a_readme(tmp_path: Path) -> None:
    plan = make_plan()
    api = FakeApi()
    lines = io.StringIO()
    target = tmp_path / "support.tar.gz"
    count = bundle._write(str(target), plan, api, bundle.Progress(lines), "\n".join)  # type: ignore[arg-type]
    with tarfile.open(target) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert count == len(members)
    assert all(name.startswith("support/") for name in members)
    assert not any(PLANTED.encode() in data for data in members.values())
    assert (
        members["support/logs/ns/ds-master-0/main.log"]
        == f"started\nexport AWS_SECRET_ACCESS_KEY={MASK}\n".encode()
    )
    assert "support/logs/ns/ds-master-0/init.log" not in members
    readme = members["support/README.txt"].decode()
    assert "logs/ns/ds-master-0/init.log: container init is waiting to start" in readme
    path, params = api.asked[-1]
    assert path == "/api/v1/namespaces/ns/pods/ds-master-0/log"
    assert params == {
        "container": "main",
        "tailLines": "10000",
        "limitBytes": str(5 * 2**20),
        "previous": "true",
    }
    # Not a terminal: one line per step.
    assert lines.getvalue().splitlines() == [f"logs {i}/5…" for i in range(1, 6)]
    assert not list(tmp_path.glob(".support*"))  # the temporary file renamed


def test_names() -> None:
    assert bundle.default_name(datetime(2026, 12, 5, 9, 30, 1)) == "fluid-bundle-20261205-093001.tar.gz"
    assert bundle.folder_of("/tmp/x/fluid-bundle-1.tar.gz") == "fluid-bundle-1"
    assert bundle.folder_of("a.tgz") == "a"
    assert [bundle.size_text(n) for n in (10, 21_600, 5 * 2**20)] == ["1 KiB", "21 KiB", "5.0 MiB"]


def test_readme_says_what_could_not_be_read() -> None:
    text = bundleplan.readme(
        created="now",
        plugin="0.1.0",
        context="ctx",
        scope="namespace ns",
        unreadable={"csinodes": "403 Forbidden"},
        missing=["CacheRuntime ns/x"],
        failed_logs=["logs/a: no"],
    )
    assert "csinodes: 403 Forbidden" in text
    assert "CacheRuntime ns/x" in text
    assert "logs/a: no" in text
    assert "logs/NS/POD/CONTAINER.previous.log" in text


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_is_one_line_rewritten() -> None:
    out = Terminal()
    progress = bundle.Progress(out)
    progress.step("collecting pods (1,234)…")
    progress.step("logs 1/2…")
    progress.done()
    assert out.getvalue() == "\r\033[Kcollecting pods (1,234)…\r\033[Klogs 1/2…\r\033[K"
    assert "\n" not in out.getvalue()


def test_the_bundle_carries_diagnoses_report_of_its_datasets() -> None:
    snap, _ = snapshots()
    [entry] = bundleplan.diagnosis(snap, [("ns", "lonely")])
    assert entry.path == "diagnose.json"
    assert entry.data["kind"] == "DiagnoseReport"
    # "lonely" has no CacheRuntime: diagnose's own rule says so, in the bundle as on the command line.
    assert [f["rule"] for f in entry.data["findings"]] == ["runtime-missing"]
    # bundle only reads: the webhook's probe was not made, and its rule says so rather than passing.
    assert [s["rule"] for s in entry.data["skipped"]] == ["webhook-unreachable"]
    assert bundleplan.diagnosis in bundleplan.EXTRAS
