"""hack/podrunner.py: kubelet's env and command expansion, volumes, names and the namespace plan as
pure functions, then real runs (root: mount and UTS namespaces, overlayfs) that must leave the host's
/etc, hostname, mounts and process table as they were."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import podrunner
import pytest
from podrunner import Bind, Plan, PodRunnerError

from kubectl_fluid.api import names

Json = dict[str, Any]

needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="mount namespaces and overlayfs need root and util-linux (CI and the dev machine have both)",
)

RUNTIME_JSON = json.dumps(
    {
        "master": {
            "enabled": True,
            "name": "ds1-master",
            "replicas": 1,
            "service": {"name": "svc-ds1-master"},
        },
        "worker": {
            "enabled": True,
            "name": "ds1-worker",
            "replicas": 2,
            "service": {"name": "svc-ds1-worker"},
        },
    }
)
RUNTIME_SH = "#!/bin/sh\nexport MASTER_NAME='ds1-master'\n"
CONFIG = {"data": {names.RUNTIME_JSON_KEY: RUNTIME_JSON, names.RUNTIME_SH_KEY: RUNTIME_SH}}


class DictSource:
    """Objects of one namespace from dicts: the runner without a cluster."""

    def __init__(self, pods: list[Json], objects: dict[tuple[str, str], Json] | None = None) -> None:
        self.namespace = "ns1"
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.objects = objects or {}

    def pod(self, name: str) -> Json:
        return self.pods[name]

    def config_map(self, name: str) -> Json | None:
        return self.objects.get(("configmap", name))

    def secret(self, name: str) -> Json | None:
        return self.objects.get(("secret", name))


def make_pod(script: str, name: str = "app", **container: Any) -> Json:
    """An injected application pod of dataset ds1 running ``sh -c script``."""
    volume = names.runtime_config_volume("ds1")
    return {
        "metadata": {"name": name, "namespace": "ns1", "uid": "u-1", "labels": {"app": "x"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "ignored",
                    "command": ["sh", "-c", script],
                    "env": [
                        {"name": "FLUID_RUNTIME_CONFIG_PATH_DS1", "value": names.pod_runtime_sh_path("ds1")}
                    ],
                    "volumeMounts": [
                        {"name": volume, "mountPath": names.pod_config_dir("ds1"), "readOnly": True}
                    ],
                    **container,
                }
            ],
            "volumes": [{"name": volume, "configMap": {"name": names.runtime_config_configmap("ds1")}}],
        },
    }


def source_for(pod: Json, **objects: Json) -> DictSource:
    found = {("configmap", names.runtime_config_configmap("ds1")): CONFIG}
    for key, obj in objects.items():
        kind, _, name = key.partition("__")
        found[(kind, name.replace("_", "-"))] = obj
    return DictSource([pod], found)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    out = tmp_path / "root"
    out.mkdir()
    return out


# ------------------------------------------------------------------ kubelet's expansion


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("$(A)-$(B)", "1-$(B)"),  # an undefined reference stays as written
        ("$$(A)", "$(A)"),  # $$ escapes
        ("$(hostname -i)", "$(hostname -i)"),  # not a variable name: left alone for the shell
        ('. "$FLUID_X" && ${A}', '. "$FLUID_X" && ${A}'),  # shell syntax passes through
        ("a$", "a$"),
        ("$(A", "$(A"),
        ("$$$(A)", "$1"),
    ],
)
def test_expand_like_kubelet(text: str, want: str) -> None:
    assert podrunner.expand(text, {"A": "1"}) == want


def test_container_env_values_refs_and_env_from() -> None:
    container = {
        "name": "app",
        "envFrom": [
            {"configMapRef": {"name": "cm1"}, "prefix": "CM_"},
            {"secretRef": {"name": "nope", "optional": True}},
        ],
        "env": [
            {"name": "PATH", "value": "/pod/bin:$(PATH)"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cm1", "key": "k"}}},
            {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "p"}}},
            {"name": "GONE", "valueFrom": {"configMapKeyRef": {"name": "cm1", "key": "x", "optional": True}}},
            {"name": "BOTH", "value": "$(POD).$(NS)"},
        ],
    }
    pod = make_pod("true")
    source = DictSource(
        [pod],
        {
            ("configmap", "cm1"): {"data": {"k": "v"}},
            ("secret", "s1"): {"data": {"p": base64.b64encode(b"s3cret").decode()}},
        },
    )
    env = podrunner.container_env(pod, container, source, {"PATH": "/usr/bin", "HOME": "/root"})
    assert env == {
        "PATH": "/pod/bin:/usr/bin",
        "HOME": "/root",
        "CM_k": "v",
        "POD": "app",
        "NS": "ns1",
        "LABEL": "x",
        "IP": "127.0.0.1",
        "KEY": "v",
        "PASS": "s3cret",
        "BOTH": "app.ns1",
    }


def test_container_env_names_what_is_missing() -> None:
    container = {
        "name": "app",
        "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm9", "key": "k"}}}],
    }
    pod = make_pod("true")
    with pytest.raises(PodRunnerError, match='env K: key "k" of ConfigMap "cm9" not found in namespace ns1'):
        podrunner.container_env(pod, container, DictSource([pod]), {})
    odd = {
        "name": "app",
        "env": [{"name": "R", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
    }
    with pytest.raises(PodRunnerError, match="not supported"):
        podrunner.container_env(pod, odd, DictSource([pod]), {})


def test_container_and_command() -> None:
    pod = make_pod("true")
    pod["spec"]["initContainers"] = [
        {"name": "init", "image": "x", "command": ["echo"], "args": ["$(A)", "$$(A)"]}
    ]
    assert podrunner.find_container(pod, None)["name"] == "app"
    init = podrunner.find_container(pod, "init")
    assert podrunner.container_argv(init, {"A": "1"}) == ["echo", "1", "$(A)"]
    with pytest.raises(PodRunnerError, match='no container "x"; it has app, init'):
        podrunner.find_container(pod, "x")
    with pytest.raises(PodRunnerError, match="entrypoint"):
        podrunner.container_argv({"name": "c", "args": ["a"]}, {})


# ------------------------------------------------------------------ names


def test_runtime_hostnames_cover_services_and_statefulset_pods_in_every_spelling() -> None:
    got = podrunner.runtime_hostnames(RUNTIME_JSON, "ns1")
    assert "svc-ds1-master" in got
    assert "ds1-master-0.svc-ds1-master" in got
    assert "ds1-master-0.svc-ds1-master.ns1.svc.cluster.local" in got
    assert "ds1-worker-1.svc-ds1-worker.ns1" in got
    assert "svc-ds1-worker.ns1.svc" in got
    assert not [n for n in got if "ds1-master-1" in n or "client" in n]
    assert len(got) == len(set(got))


def test_pod_hostname_like_kubelet() -> None:
    pod = {"metadata": {"name": "ds1-master-0", "namespace": "ns1"}, "spec": {"subdomain": "svc-ds1-master"}}
    assert podrunner.pod_hostname(pod) == (
        "ds1-master-0",
        ["ds1-master-0.svc-ds1-master.ns1.svc.cluster.local", "ds1-master-0"],
    )
    named = {"metadata": {"name": "p", "namespace": "ns1"}, "spec": {"hostname": "h"}}
    assert podrunner.pod_hostname(named) == ("h", ["h"])


def test_hosts_file_keeps_the_host_entries() -> None:
    out = podrunner.hosts_file("127.0.0.1 localhost", [["a", "b"], ["c"], []])
    assert out.startswith("127.0.0.1 localhost\n")
    assert out.endswith("127.0.0.1\ta b\n127.0.0.1\tc\n")


# ------------------------------------------------------------------ the plan


def upper(plan: Plan, lower: str) -> Path:
    return plan.root / f"overlay-{plan.overlays.index(lower)}" / "upper"


def test_plan_writes_volumes_hosts_and_mount_points_only_under_its_root(root: Path) -> None:
    pod = make_pod("true")
    container = pod["spec"]["containers"][0]
    container["volumeMounts"] += [
        {"name": "items", "mountPath": "/etc/app/conf"},
        {"name": "secret", "mountPath": "/etc/app/secret"},
        {"name": "scratch", "mountPath": "/etc/app/scratch"},
        {"name": "items", "mountPath": "/etc/app/one.conf", "subPath": "sub/b.txt"},
        {"name": "token", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
    ]
    pod["spec"]["volumes"] += [
        {
            "name": "items",
            "configMap": {
                "name": "cm1",
                "defaultMode": 0o600,
                "items": [{"key": "b", "path": "sub/b.txt", "mode": 0o755}],
            },
        },
        {"name": "secret", "secret": {"secretName": "s1"}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
    ]
    source = source_for(
        pod,
        configmap__cm1={"data": {"a": "A", "b": "B"}},
        secret__s1={"data": {"p": base64.b64encode(b"P").decode()}},
    )
    plan = podrunner.build_plan(pod, source, root)

    assert plan.argv == ["sh", "-c", "true"]
    assert plan.hostname == "app"
    assert plan.overlays == ["/etc"]
    vol = root / "volumes"
    assert plan.binds == [
        Bind(str(vol / "items"), "/etc/app/conf", True),
        Bind(str(vol / "items" / "sub" / "b.txt"), "/etc/app/one.conf", True),
        Bind(str(vol / "scratch"), "/etc/app/scratch", False),
        Bind(str(vol / "secret"), "/etc/app/secret", True),
        Bind(str(vol / "fluid-runtime-config-ds1"), "/etc/fluid/config/ds1", True),
    ]  # sorted by mount path; the service-account token volume is left out
    assert (vol / "fluid-runtime-config-ds1" / "runtime.sh").read_text() == RUNTIME_SH
    assert not (vol / "items" / "a").exists()  # items: only the keys named
    assert stat.S_IMODE((vol / "items" / "sub" / "b.txt").stat().st_mode) == 0o755
    assert (vol / "secret" / "p").read_bytes() == b"P"
    etc = upper(plan, "/etc")
    hosts = (etc / "hosts").read_text()
    assert hosts.startswith(Path("/etc/hosts").read_text())
    assert "127.0.0.1\tds1-master-0.svc-ds1-master\n" in hosts
    assert "127.0.0.1\tapp\n" in hosts
    assert (etc / "hostname").read_text() == "app\n"
    assert (etc / "fluid" / "config" / "ds1").is_dir()  # mount points made in the overlay
    assert (etc / "app" / "one.conf").is_file()


def test_plan_refuses_what_it_cannot_provide(root: Path) -> None:
    pod = make_pod("true")
    with pytest.raises(
        PodRunnerError, match='ConfigMap "fluid-runtime-config-ds1" in namespace ns1 not found'
    ):
        podrunner.build_plan(pod, DictSource([pod]), root)
    pod["spec"]["volumes"][0]["configMap"]["items"] = [{"key": "nope", "path": "x"}]
    with pytest.raises(PodRunnerError, match='has no key "nope"'):
        podrunner.build_plan(pod, source_for(pod), root)
    missing = make_pod("true", command=["no-such-command-podrunner"])
    with pytest.raises(PodRunnerError, match="is not on this host"):
        podrunner.build_plan(missing, source_for(missing), root)
    pvc = make_pod("true")
    pvc["spec"]["containers"][0]["volumeMounts"].append({"name": "data", "mountPath": "/data"})
    pvc["spec"]["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "ds1"}})
    with pytest.raises(PodRunnerError, match="persistentVolumeClaim volumes are not supported"):
        podrunner.build_plan(pvc, source_for(pvc), root)


def test_overlay_roots(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    want_dir = str(tmp_path / "d" / "new" / "deeper")
    assert podrunner.overlay_roots([(want_dir, True), (str(tmp_path / "d"), True)], "/nowhere") == sorted(
        ["/etc", str(tmp_path / "d")]
    )
    # An existing file where a directory must be mounted: its parent is overlaid.
    assert podrunner.overlay_roots([(str(tmp_path / "f"), True)], "/nowhere") == sorted(
        ["/etc", str(tmp_path)]
    )
    assert podrunner.overlay_roots([("/etc/x/y", True)], "/nowhere") == ["/etc"]
    with pytest.raises(PodRunnerError, match="/ cannot be one"):
        podrunner.overlay_roots([("/no-such-top-dir-podrunner/x", True)], "/nowhere")
    with pytest.raises(PodRunnerError, match="TMPDIR"):
        podrunner.overlay_roots([(want_dir, True)], str(tmp_path / "d" / "tmp"))


def test_namespace_script_mounts_overlays_before_binds_and_execs_the_command(root: Path) -> None:
    plan = Plan(
        pod="p",
        namespace="ns1",
        container="c",
        argv=["x"],
        env={},
        cwd="/some dir",
        hostname="p",
        root=root,
        hosts=[],
        overlays=["/etc"],
        binds=[Bind("/src", "/etc/a", True), Bind("/src2", "/etc/b", False)],
    )
    script = podrunner.namespace_script(plan)
    layers = f"lowerdir=/etc,upperdir={root}/overlay-0/upper,workdir={root}/overlay-0/work"
    assert script == textwrap.dedent(
        f"""\
        set -e
        mount -t overlay podrunner -o {layers} /etc
        mount --bind /src /etc/a
        mount -o remount,bind,ro /etc/a
        mount --bind /src2 /etc/b
        hostname p
        cd '/some dir'
        exec "$@"
        """
    )


# ------------------------------------------------------------------ real runs


def host_state() -> dict[str, object]:
    return {
        "etc": sorted(os.listdir("/etc")),
        "hosts": Path("/etc/hosts").read_bytes(),
        "hostname": socket.gethostname(),
        "mounts": [
            line for line in Path("/proc/self/mountinfo").read_text().splitlines() if "podrunner" in line
        ],
    }


@pytest.fixture
def host_untouched() -> Iterator[None]:
    before = host_state()
    assert before["mounts"] == []
    yield
    assert host_state() == before


def start(pod: Json, source: DictSource | None = None, **kw: Any) -> podrunner.PodProcess:
    return podrunner.start_pod_object(pod, source or source_for(pod), echo=False, **kw)


@needs_namespaces
@pytest.mark.usefixtures("host_untouched")
def test_run_sees_config_names_env_and_hostname_and_returns_the_exit_code() -> None:
    script = """
        set -e
        . "$FLUID_RUNTIME_CONFIG_PATH_DS1"
        echo "master=$MASTER_NAME"
        getent hosts ds1-master-0.svc-ds1-master.ns1.svc.cluster.local
        echo "hostname=$(hostname) ip=$(hostname -i) HOSTNAME=$HOSTNAME"
        echo "podrunner-probe" > /etc/podrunner-probe
        if echo x > /etc/fluid/config/ds1/runtime.sh 2>/dev/null; then echo writable; fi
        echo "pwd=$(pwd)"
        exit 7
    """
    proc = start(make_pod(script, workingDir="/tmp"))
    assert proc.wait(30) == 7
    out = proc.stdout.splitlines()
    assert out[0] == "master=ds1-master"
    assert out[1].split() == ["127.0.0.1", "ds1-master-0.svc-ds1-master.ns1.svc.cluster.local"]
    assert out[2] == "hostname=app ip=127.0.0.1 HOSTNAME=app"
    assert out[3] == "pwd=/tmp"  # and runtime.sh was not writable
    assert not proc.plan.root.exists()
    assert not os.path.exists("/etc/podrunner-probe")


@needs_namespaces
@pytest.mark.usefixtures("host_untouched")
def test_a_missing_mount_point_outside_etc_is_made_in_an_overlay(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    target = base / "new" / "data"
    pod = make_pod(f"touch {target}/file && ls {target}")
    pod["spec"]["containers"][0]["volumeMounts"].append({"name": "scratch", "mountPath": str(target)})
    pod["spec"]["volumes"].append({"name": "scratch", "emptyDir": {}})
    proc = start(pod)
    assert proc.wait(30) == 0, proc.stderr
    assert proc.stdout == "file\n"
    assert os.listdir(base) == []


@needs_namespaces
@pytest.mark.usefixtures("host_untouched")
def test_stop_kills_the_whole_process_group_and_cleans_up() -> None:
    # Children in the background, and one that ignores SIGTERM: stop() must still leave nothing.
    script = "trap '' TERM; sleep 300 & sleep 301 & echo ready; wait"
    proc = start(make_pod(script))
    proc.wait_for_output("ready", timeout=30)
    assert len(proc.group_members()) >= 3
    assert proc.poll() is None
    assert proc.stop(grace=0.5) == -9
    assert proc.group_members() == []
    assert not proc.plan.root.exists()
    assert proc.stop() == -9  # idempotent


@needs_namespaces
@pytest.mark.usefixtures("host_untouched")
def test_leftover_children_die_with_the_main_process() -> None:
    proc = start(make_pod("sleep 300 & echo started"))
    assert proc.wait(30) == 0
    assert proc.group_members() == []


@needs_namespaces
@pytest.mark.usefixtures("host_untouched")
def test_run_times_out_and_stops() -> None:
    proc = start(make_pod("echo going; sleep 300"))
    with pytest.raises(PodRunnerError, match="still running after 1s; stopped"):
        podrunner.wait_result(proc, timeout=1)
    assert proc.returncode == -15
    assert proc.stdout == "going\n"


@needs_namespaces
@pytest.mark.usefixtures("host_untouched")
def test_wait_for_output_fails_when_the_process_exits_first() -> None:
    proc = start(make_pod("echo other; exit 3"))
    with pytest.raises(PodRunnerError, match=r"exited \(3\) before printing 'ready'"):
        proc.wait_for_output("ready", timeout=30)


# ------------------------------------------------------------------ the command line, through kubectl


@pytest.fixture
def fake_kubectl(tmp_path: Path) -> Path:
    """A kubectl that answers ``get KIND NAME -o json`` from files: KubectlSource and main() without
    a cluster."""
    store = tmp_path / "objects"
    store.mkdir()
    tool = tmp_path / "kubectl"
    tool.write_text(
        f"#!{sys.executable}\n"
        "import sys, pathlib\n"
        "args = [a for a in sys.argv[1:] if not a.startswith('--kubeconfig')]\n"
        "kind, name = args[args.index('get') + 1], args[args.index('get') + 2]\n"
        f"path = pathlib.Path({str(store)!r}) / f'{{kind}}-{{name}}.json'\n"
        "print(path.read_text() if path.exists() else '', end='')\n"
    )
    tool.chmod(0o755)
    return tool


def store(kubectl: Path, kind: str, name: str, obj: Json) -> None:
    (kubectl.parent / "objects" / f"{kind}-{name}.json").write_text(json.dumps(obj))


def test_cli_plan_reads_through_kubectl(fake_kubectl: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = make_pod("exit 5")
    store(fake_kubectl, "pod", "app", pod)
    store(fake_kubectl, "configmap", names.runtime_config_configmap("ds1"), CONFIG)
    args = ["--kubeconfig=/dev/null", "-n", "ns1", "--kubectl", str(fake_kubectl)]
    assert podrunner.main([*args, "--plan", "app"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["pod"] == "ns1/app"
    assert summary["binds"][0]["target"] == "/etc/fluid/config/ds1"
    assert podrunner.main([*args, "nope"]) == 1
    assert 'error: pod "nope" not found in namespace "ns1"' in capsys.readouterr().err


@needs_namespaces
@pytest.mark.usefixtures("host_untouched")
def test_cli_runs_the_pod_and_exits_with_its_code(fake_kubectl: Path) -> None:
    pod = make_pod('. "$FLUID_RUNTIME_CONFIG_PATH_DS1" && echo "$MASTER_NAME" && exit 5')
    store(fake_kubectl, "pod", "app", pod)
    store(fake_kubectl, "configmap", names.runtime_config_configmap("ds1"), CONFIG)
    run = subprocess.run(
        [
            sys.executable,
            "hack/podrunner.py",
            "--kubeconfig=/dev/null",
            "-n",
            "ns1",
            "--kubectl",
            str(fake_kubectl),
            "app",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (run.returncode, run.stdout) == (5, "ds1-master\n"), run.stderr
