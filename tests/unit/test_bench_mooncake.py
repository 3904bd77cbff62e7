"""The Mooncake bench's pure parts: the pod's container as a local process (env paths moved to where
the volume's files are written), the resolver it gets, the comparison of the two clients' settings,
and the pooling of their samples into rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from demo import mooncake_app
from kubectl_fluid.api import names
from tests.bench import bench_mooncake as bench
from tests.bench import mooncake_kv
from tests.bench.report import Report
from tests.unit.mooncake_samples import children
from tests.unit.test_mooncake_app import sourced_env

CONFIG_DIR = names.pod_config_dir("kv")  # with its trailing "/", as the webhook mounts it


def injected_pod() -> dict[str, Any]:
    """The bench's app pod with what the webhook adds to it."""
    pod = bench.app_pod("ns")
    volume = names.runtime_config_volume("kv")
    (container,) = pod["spec"]["containers"]
    container["env"] = [
        {"name": n, "value": f"{CONFIG_DIR}runtime.sh"} for n in names.runtime_config_env_names("kv")
    ]
    container["env"].append({"name": "OTHER", "value": "/etc/fluid/configs"})  # not under the mount path
    container["volumeMounts"] = [{"name": volume, "mountPath": CONFIG_DIR, "readOnly": True}]
    pod["spec"]["volumes"] = [
        {"name": volume, "configMap": {"name": names.runtime_config_configmap("kv")}},
        {"name": "scratch", "emptyDir": {}},
    ]
    return pod


def test_the_app_pod_asks_for_injection_and_sources_runtime_sh() -> None:
    pod = bench.app_pod("ns")
    assert pod["metadata"]["labels"] == {names.LABEL_INJECT: names.TRUE}
    assert pod["metadata"]["annotations"] == {names.ANNOTATION_DATASET: "kv"}
    (container,) = pod["spec"]["containers"]
    assert container["command"][:2] == ["sh", "-c"]
    assert container["command"][2].startswith(f'. "${names.runtime_config_env_names("kv")[-1]}" && exec ')


def test_the_containers_configmap_volumes_are_found_by_mount_path() -> None:
    pod = injected_pod()
    (container,) = pod["spec"]["containers"]
    assert bench.configmap_mounts(pod, container) == {
        CONFIG_DIR.rstrip("/"): names.runtime_config_configmap("kv")
    }


def test_env_paths_under_a_mount_move_to_its_local_directory(tmp_path: Path) -> None:
    (container,) = injected_pod()["spec"]["containers"]
    env = bench.container_env(container, {CONFIG_DIR.rstrip("/"): tmp_path})
    assert {env[n] for n in names.runtime_config_env_names("kv")} == {str(tmp_path / "runtime.sh")}
    assert env["OTHER"] == "/etc/fluid/configs"  # a prefix of the name, not of the path: left alone


def test_env_the_api_would_resolve_is_refused() -> None:
    container = {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}
    with pytest.raises(ValueError, match="plain values only"):
        bench.container_env(container, {})


def test_the_resolver_serves_the_name_the_app_dials(tmp_path: Path) -> None:
    """The name the demo app builds from a rendered runtime.sh is the one the bench's /etc/hosts maps."""
    env = sourced_env(children().configmap["data"][names.RUNTIME_SH_KEY], tmp_path)
    master = mooncake_app.connection_from_env(env, "127.0.0.1").master_server_addr
    assert master.rpartition(":")[0] == bench.master_dns_name("demo")
    assert bench.hosts_text([master.rpartition(":")[0], "vm"]) == (
        f"127.0.0.1 localhost\n127.0.0.1 {bench.master_dns_name('demo')}\n127.0.0.1 vm\n"
    )


def test_the_injected_and_by_hand_settings_agree_but_for_the_masters_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = sourced_env(
        children(master={"options": {"rpc_port": "40051"}}).configmap["data"][names.RUNTIME_SH_KEY], tmp_path
    )
    for name, value in {**env, **bench.by_hand_env(40051)}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(mooncake_app, "own_address", lambda: "127.0.0.1")
    injected, by_hand = mooncake_kv.injected_setup(), mooncake_kv.by_hand_setup()
    assert list(injected) == list(by_hand)  # the by-hand client passes them positionally in this order
    assert bench.config_differences(injected, by_hand) == []
    assert by_hand["master_server_addr"] == "127.0.0.1:40051"


def test_settings_that_differ_are_named() -> None:
    base = {"protocol": "tcp", "master_server_addr": "a:1", "local_buffer_size": 16}
    assert bench.config_differences(base, {**base, "master_server_addr": "127.0.0.1:1"}) == []
    assert bench.config_differences(base, {**base, "protocol": "rdma", "master_server_addr": "b:2"}) == [
        "protocol: 'tcp' vs 'rdma'",
        "master port: 1 vs 2",
    ]


def process(put_ms: float, get_ms: float, count: int = 4) -> dict[str, Any]:
    """One client process's output: every call of each size taking the given time."""
    each = {"put": [put_ms / 1000] * count, "get": [get_ms / 1000] * count}
    walls = {"put_wall": count * put_ms / 1000, "get_wall": count * get_ms / 1000}
    return {"sizes": {str(size): {**each, **walls} for size in mooncake_kv.SIZES}}


def test_processes_pool_into_percentiles_and_throughput() -> None:
    summary = bench.summarise([process(1, 2), process(1, 2)])
    mib = 1 << 20
    assert summary[f"put {mib} p50"] == pytest.approx(1)
    assert summary[f"get {mib} p99"] == pytest.approx(2)
    assert summary[f"put {mib} MB/s"] == pytest.approx(mib / 1e6 / 0.001)  # one value per ms
    assert summary[f"get {mib} MB/s"] == pytest.approx(mib / 1e6 / 0.002)


def test_the_quietest_process_is_the_least_of_the_processes_p50s() -> None:
    summary = bench.summarise([process(3, 2), process(1, 5), process(2, 4)])
    assert summary["put 4096 p50 quietest"] == pytest.approx(1)
    assert summary["get 4096 p50 quietest"] == pytest.approx(2)
    assert summary["put 4096 p50"] == pytest.approx(2)  # pooled: the middle process's
    assert summary[f"put {1 << 20} MB/s quietest"] == pytest.approx((1 << 20) / 1e6 / 0.001)  # 1 ms a put


def test_rows_set_the_issues_goals() -> None:
    report = Report()
    bench.report_rows(report, bench.summarise([process(1, 2)]), bench.summarise([process(1, 1)]))
    latency = [r for r in report.rows if r.unit == "ms" and not r.name.startswith("floor")]
    floors = [r for r in report.rows if r.name.startswith("floor")]
    throughput = [r for r in report.rows if r.unit == "MB/s" and not r.name.startswith("floor")]
    assert (len(latency), len(throughput), len(floors)) == (8, 2, 6)
    assert all(r.baseline_name == "configured by hand" for r in latency + throughput)
    assert {r.goal.text for r in latency if r.goal} == {"ratio <= 1.03x"}
    assert {r.goal.text for r in floors if r.goal} == {"ratio <= 1.03x", "ratio >= 0.97x"}
    assert {r.goal.text for r in throughput if r.goal} == {"ratio >= 0.97x"}
    assert [r.met for r in throughput] == [True, False]  # puts as fast, gets half as fast
    assert report.rows[0].name == "mooncake put 4 KiB p50, injected config"
