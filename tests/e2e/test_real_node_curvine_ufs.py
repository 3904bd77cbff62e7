"""Curvine's own class on one real node with a real S3 UFS: the class's execution entries run by the
controller (SPEC §7), through the real path only.

An S3 server (moto, hack/localcluster/peers/s3ufs.py) listens on the node's bridge address, where the
node's pods reach this host, and holds files of known content. The Dataset mounts it as Fluid users
write it: ``s3://BUCKET/PREFIX`` with endpoint options, the credentials from a Secret through
``encryptOptions``; the CacheRuntime is Curvine's sample. Once the master is Ready the controller runs
the class's ``mountUFS`` (Curvine's mountUfs.sh) in it over pods/exec, once; an app pod reads the S3
files through the Dataset's PVC, byte-exact. A mount added later is mounted without a restart; the
master pod deleted comes back and gets its mounts again; a mount that cannot be mounted is the
Dataset's ``UpdateReady=False`` and a Warning Event with the script's stderr; ``ReportSummary``
(Curvine's spelling) fills ``cacheStates``, ``ufsTotal`` and ``fileNum``, which ``kubectl get dataset``
prints. ``pods/exec`` itself (kubectl_fluid/kube/podexec.py) is tried on a real container too.
Then Curvine's own DataLoad (its class's ``dataOperationSpecs``, unchanged: ``cv load`` of the
Dataset's mount) through ``kubectl fluid load --wait``: a 32 MiB S3 file read cold before it, another
read after it, and the Dataset's cached percentage near 100 % after it (Curvine's ReportSummary script
computes it with images/curvine/fluid-report-summary-totals.patch).

The controller's summary period is set to 10 s here (``--summary-period``, upstream's 90 s by
default), the only change to the default install. Measured: seconds to mounted, each exec, the
remount, the reads before and after the load. A cluster of its own (tests/e2e/users_cluster.py), one
node; skipped, saying why, where a real node cannot run, an image cannot be built or Curvine's files
are not there."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

import localcluster
from kubectl_fluid.api import names
from kubectl_fluid.kube.client import connect
from kubectl_fluid.kube.podexec import ExecFailed, ExecTimeout, exec_in_pod
from localcluster import realnodes
from localcluster.peers import s3ufs
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_cli_inject import kubectl_fluid
from tests.e2e.test_real_node_curvine_fluid import CLASS, DATASET, image_of_the_samples
from tests.e2e.test_real_node_curvine_fluid import why_not as why_no_curvine_fluid
from tests.e2e.test_real_node_product import get, ready
from tests.e2e.users_cluster import users_cluster
from tests.e2e.wait import eventually

SYSTEM, APPS = "fluid-system", "default"
NAME = "curvine-demo"  # Curvine's CacheRuntime, and so the Dataset
MASTER = names.master_pod_name(NAME)
NODE = f"{realnodes.NAME_PREFIX}0"
BUCKET, SECRET = "fluid-ufs", "s3-credentials"
APP = "s3-reader"
SUMMARY_PERIOD = 10

# The bucket's files: (key, content). Seeded so a failure can be reproduced byte for byte.
_rng = random.Random(31)
FILES = {
    "data/big.bin": _rng.randbytes(3 << 20),
    "data/hello.txt": b"hello from S3 through Curvine\n",
    "data/sub/small.bin": _rng.randbytes(4097),
    "more/later.txt": b"mounted later, without a restart\n",
    # Two of a size that matters, untouched until the DataLoad's test: one read cold before the load,
    # the other after it (never read before, so no page cache of the app's FUSE serves it).
    "data/cold.bin": _rng.randbytes(32 << 20),
    "data/loaded.bin": _rng.randbytes(32 << 20),
}
FOR_THE_LOAD = ("data/cold.bin", "data/loaded.bin")


@dataclass
class Bed:
    cluster: localcluster.Cluster
    s3: s3ufs.S3Server
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def kc(self) -> Any:
        return self.cluster.kubeconfig


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_no_curvine_fluid()
    if reason:
        pytest.skip(reason)
    state = tmp_path_factory.mktemp("curvine-ufs-cluster")
    with users_cluster(state, nodes=1) as cluster:
        node = realnodes.RealNode.load(cluster.state_dir / realnodes.NODES_DIR / NODE)
        assert node is not None
        with s3ufs.serving(node.bridge_ip, state / "moto.log") as s3:
            s3.put(BUCKET)
            for key, data in FILES.items():
                s3.put(BUCKET, key, data)
            b = Bed(cluster, s3)
            yield b
            print("\n".join(f"{k}: {v:.2f}" for k, v in b.figures.items()))


def s3_mount(name: str, prefix: str, bucket: str = BUCKET) -> dict[str, Any]:
    """A mount as Fluid users write one for S3: options in the clear, keys from a Secret."""
    return {
        "name": name,
        "mountPoint": f"s3://{bucket}/{prefix}",
        "options": {"endpoint_url": "", "region_name": s3ufs.REGION, "path_style": "true"},
        "encryptOptions": [
            {"name": option, "valueFrom": {"secretKeyRef": {"name": SECRET, "key": option}}}
            for option in ("access", "secret")
        ],
    }


def with_endpoint(bed: Bed, mount: dict[str, Any]) -> dict[str, Any]:
    return {**mount, "options": {**mount["options"], "endpoint_url": bed.s3.endpoint}}


def dataset_and_runtime(bed: Bed, mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Curvine's Dataset and CacheRuntime, the Dataset's mounts those of the S3 bucket."""
    docs = [d for d in yaml.safe_load_all(DATASET.read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Dataset":
            doc["spec"]["mounts"] = [with_endpoint(bed, m) for m in mounts]
    return docs


def apply(bed: Bed, *objects: dict[str, Any]) -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(body))


def dataset(bed: Bed) -> dict[str, Any]:
    return get(bed.kc, "-n", APPS, "dataset", NAME)


def events_of(bed: Bed, reason: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = get(  # type: ignore[assignment]
        bed.kc, "-n", APPS, "events", "--field-selector", f"involvedObject.name={NAME}"
    )["items"]
    return [e for e in listed if e["reason"] == reason]


def runtime(bed: Bed) -> dict[str, Any]:
    return get(bed.kc, "-n", APPS, "cacheruntime", NAME)


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == type_), None)


def mounted_condition(bed: Bed) -> dict[str, Any] | None:
    return condition(dataset(bed), names.CONDITION_UFS_UPDATE_READY)


def controller_logs(bed: Bed) -> list[dict[str, Any]]:
    """Every controller replica's log lines (the leader runs the entries; which one leads is its
    Lease's business)."""
    pods = kubectl(
        bed.kc, "-n", SYSTEM, "get", "pods", "-l", "app.kubernetes.io/name=fluid-controller", "-o", "name"
    )
    text = "".join(kubectl(bed.kc, "-n", SYSTEM, "logs", pod, "--tail=-1") for pod in pods.split())
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def mount_runs(bed: Bed) -> list[dict[str, Any]]:
    return [r for r in controller_logs(bed) if r.get("msg") == "mountUFS ran"]


def exec_seconds(message: str) -> float:
    found = re.search(r" in ([0-9.]+)s", message)
    assert found, message
    return float(found.group(1))


def in_app(bed: Bed, *argv: str) -> str:
    return kubectl(bed.kc, "-n", APPS, "exec", APP, "--", *argv)


def cv_mounts(bed: Bed) -> str:
    conf = "/app/curvine/conf/curvine-cluster.toml"
    return kubectl(bed.kc, "-n", APPS, "exec", MASTER, "--", "/app/curvine/bin/cv", "mount", "--conf", conf)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_runtime_turns_ready_and_mount_ufs_runs_once(bed: Bed) -> None:
    kubectl(bed.kc, "apply", "-k", str(MANIFESTS))  # the default install
    # The one change: reportSummary every 10 s, so this module sees it without waiting 90.
    patch = [{"op": "add", "path": "/spec/template/spec/containers/0/args/-",
              "value": f"--summary-period={SUMMARY_PERIOD}"}]  # fmt: skip
    kubectl(bed.kc, "-n", SYSTEM, "patch", "deployment", "fluid-controller", "--type=json",
            "-p", json.dumps(patch))  # fmt: skip
    kubectl(bed.kc, "-n", SYSTEM, "rollout", "status", "deployment", "--timeout=5m")
    kubectl(bed.kc, "apply", "-f", str(CLASS))
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": APPS},
        "stringData": {"access": "test-access-key", "secret": "test-secret-key"},
    }
    t0 = time.monotonic()
    apply(bed, secret, *dataset_and_runtime(bed, [s3_mount("s3data", "data")]))
    eventually(
        lambda: (condition(runtime(bed), names.CONDITION_READY) or {}).get("status") == "True",
        "the runtime Ready",
        timeout=300,
        interval=1,
    )
    bed.figures["create to runtime Ready (s)"] = time.monotonic() - t0
    done = eventually(
        lambda: (c := mounted_condition(bed)) and c["status"] == "True" and c,
        "UpdateReady=True (mountUFS ran)",
        timeout=120,
        interval=0.5,
    )
    bed.figures["create to UFS mounted (s)"] = time.monotonic() - t0
    bed.figures["mountUFS exec, first (s)"] = exec_seconds(done["message"])
    assert done["reason"] == names.REASON_UFS_MOUNTED, done
    assert "/s3data" in done["message"], done
    ds = dataset(bed)
    assert [m["mountPoint"] for m in ds["status"]["mounts"]] == [f"s3://{BUCKET}/data"]
    master = get(bed.kc, "-n", APPS, "pod", MASTER)
    status = runtime(bed)["status"]
    assert status["mountedUfs"].startswith(master["metadata"]["uid"] + "/"), status
    assert status.get("mountTime")
    assert "/s3data" in cv_mounts(bed)
    time.sleep(3)  # a few more passes of the controller: nothing runs again
    assert len(mount_runs(bed)) == 1, mount_runs(bed)


def app_pod(command: list[str]) -> dict[str, Any]:
    """The app pod on the node, the Dataset's PVC at /data, Curvine's image (its shell, GNU date)
    running ``command`` (tests/bench/bench_firstbyte.py's too)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": APP, "namespace": APPS},
        "spec": {
            "nodeSelector": {names.LABEL_HOSTNAME: NODE},
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "app",
                    "image": image_of_the_samples(),
                    "imagePullPolicy": "IfNotPresent",
                    "command": command,
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": NAME}}],
        },
    }


def test_the_s3_files_are_read_byte_exact_through_an_app_pods_pvc(bed: Bed) -> None:
    pod = app_pod(["sleep", "infinity"])
    t0 = time.monotonic()
    apply(bed, pod)
    eventually(
        lambda: ready(get(bed.kc, "-n", APPS, "pod", APP)), "the app pod Ready", timeout=180, interval=1
    )
    bed.figures["app pod create to Ready (s)"] = time.monotonic() - t0
    want = {
        f"/data/s3data/{k.removeprefix('data/')}": sha(v)
        for k, v in FILES.items()
        if k.startswith("data/") and k not in FOR_THE_LOAD
    }
    t1 = time.monotonic()
    out = in_app(bed, "sha256sum", *want)
    bed.figures["cold read of the S3 files through the PVC (s)"] = time.monotonic() - t1
    got = {path: digest for digest, path in (line.split() for line in out.splitlines())}
    assert got == want


def timed_sha256_in_app(bed: Bed, path: str) -> tuple[str, float]:
    """The file's sha256 through the app pod's PVC and the seconds it took, timed in the pod (no exec
    round trip in the figure)."""
    out = in_app(bed, "sh", "-c", f'a=$(date +%s%N); sha256sum "{path}"; b=$(date +%s%N); echo $((b - a))')
    line, nanoseconds = out.splitlines()
    return line.split()[0], int(nanoseconds) / 1e9


def cached_percentage(bed: Bed) -> float:
    text = str(((dataset(bed).get("status") or {}).get("cacheStates") or {}).get("cachedPercentage") or "0")
    return float(text.rstrip("%"))


def test_curvines_own_dataload_loads_the_s3_files_and_a_read_after_it_leaves_s3_alone(bed: Bed) -> None:
    """Curvine's class unchanged: its DataLoad spec runs ``cv load`` of the Dataset's mount."""
    cold_path, loaded_path = (f"/data/s3data/{k.removeprefix('data/')}" for k in FOR_THE_LOAD)
    cold_key, loaded_key = FOR_THE_LOAD
    s3_gets = bed.s3.gets(BUCKET, cold_key)
    digest, cold = timed_sha256_in_app(bed, cold_path)
    assert digest == sha(FILES["data/cold.bin"])
    assert bed.s3.gets(BUCKET, cold_key) > s3_gets  # a cold read is S3's to serve
    bed.figures["cold read of 32 MiB from S3 through the PVC, before the load (s)"] = cold
    # The last summary before the load: the 32 MiB read after it is not cached yet (what a cold read
    # caches, Curvine caches too: its auto-cache).
    eventually(lambda: dataset(bed)["status"]["cacheStates"]["cachedPercentage"].endswith("%"), "a summary")
    before = cached_percentage(bed)
    bed.figures["cached percentage at the load's start (the last summary)"] = before

    t0 = time.monotonic()
    # No path: the whole Dataset, which the controller hands Curvine's script as its mount's path
    # (upstream's "/" reaches `cv load /`, which Curvine's master refuses: no mount is at /).
    run = kubectl_fluid(bed.kc, "load", NAME, "--wait", "--timeout=240s", "-n", APPS, timeout=300)
    bed.figures["kubectl fluid load --wait, create to Complete (s)"] = time.monotonic() - t0
    logs = kubectl(bed.kc, "-n", APPS, "logs", "-l", f"role={names.DATALOAD_POD_ROLE}", "--tail=30")
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{logs}"
    print(run.stderr, logs, sep="\n")
    seen = [line.split()[1] for line in run.stderr.splitlines()]
    order = [names.PHASE_PENDING, names.PHASE_EXECUTING, names.PHASE_COMPLETE]
    phases = [p for i, p in enumerate(seen) if p in order and (i == 0 or seen[i - 1] != p)]
    assert phases == sorted(phases, key=order.index), seen
    assert names.PHASE_EXECUTING in phases, seen
    assert phases[-1] == names.PHASE_COMPLETE, seen
    assert "Load job submitted" in logs or "Completed" in logs, logs  # Curvine's cv load ran
    created = run.stdout.splitlines()[0].split()[0].split("/")[1]
    job = get(bed.kc, "-n", APPS, "job", names.dataload_job(created))
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env[names.ENV_DATALOAD_DATA_PATH] == "/s3data", env  # the whole Dataset: its one mount

    s3_gets = bed.s3.gets(BUCKET, loaded_key)
    assert s3_gets > 0  # the load read it from S3
    digest, after = timed_sha256_in_app(bed, loaded_path)
    assert digest == sha(FILES["data/loaded.bin"])
    # What the load is for, witnessed by S3 itself, not by a clock (a figure only: under load a read
    # from moto on this host's bridge can be as quick as one from the cache, CI saw 0.29 s vs 0.32 s).
    assert bed.s3.gets(BUCKET, loaded_key) == s3_gets, "the read after the load went to S3"
    bed.figures["read of 32 MiB through the PVC after the load (s)"] = after
    bed.figures["cold read / read after the load"] = cold / after

    total = sum(len(v) for k, v in FILES.items() if k.startswith("data/"))  # /s3data, the one mount
    status = eventually(
        lambda: (s := dataset(bed)["status"]) and cached_percentage(bed) >= 95 and s,
        "cached percentage near 100 after the load",
        timeout=3 * SUMMARY_PERIOD + 30,
        interval=1,
    )
    assert before < 90, before  # what the load cached, not a read before it
    assert status["ufsTotal"] == f"{total / (1 << 20):.2f}MiB", status
    table = kubectl(bed.kc, "-n", APPS, "get", "dataset", NAME)
    print(table)
    header, row = table.splitlines()[:2]
    assert "CACHED PERCENTAGE" in header, table
    assert status["cacheStates"]["cachedPercentage"] in row, table
    assert status["ufsTotal"] in row, table


def test_a_mount_added_later_is_mounted_without_a_restart(bed: Bed) -> None:
    before = get(bed.kc, "-n", APPS, "pod", MASTER)
    t0 = time.monotonic()
    apply(bed, *dataset_and_runtime(bed, [s3_mount("s3data", "data"), s3_mount("more", "more")]))
    done = eventually(
        lambda: (c := mounted_condition(bed)) and c["status"] == "True" and "/more" in c["message"] and c,
        "the second mount mounted",
        timeout=240,
        interval=1,
    )
    bed.figures["mount added to mounted (s) (kubelet's ConfigMap sync included)"] = time.monotonic() - t0
    bed.figures["mountUFS exec, second mount (s)"] = exec_seconds(done["message"])
    after = get(bed.kc, "-n", APPS, "pod", MASTER)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert (
        after["status"]["containerStatuses"][0]["restartCount"]
        == before["status"]["containerStatuses"][0]["restartCount"]
    )
    assert len(dataset(bed)["status"]["mounts"]) == 2
    data = eventually(lambda: in_app(bed, "cat", "/data/more/later.txt"), "/more readable in the app pod")
    assert data.encode() == FILES["more/later.txt"]


def test_a_mount_ufs_that_fails_is_a_condition_and_a_warning_event(bed: Bed) -> None:
    mounts = [s3_mount("s3data", "data"), s3_mount("more", "more"), s3_mount("broken", "x", "no-such-bucket")]
    apply(bed, *dataset_and_runtime(bed, mounts))
    # First "not mounted yet: /broken" maybe (the runtime config on its way), then the script fails.
    failed = eventually(
        lambda: (c := mounted_condition(bed)) and c["status"] == "False" and " exited " in c["message"] and c,
        "UpdateReady=False, the script's exit",
        timeout=240,
        interval=1,
    )
    assert failed["reason"] == names.REASON_MOUNT_UFS_FAILED, failed
    events = eventually(
        lambda: [e for e in events_of(bed, names.REASON_MOUNT_UFS_FAILED) if " exited " in e["message"]],
        "a MountUFSFailed Event of the script's exit",
    )
    assert events[0]["type"] == "Warning"
    assert "no-such-bucket" in events[0]["message"], events[0]["message"]  # the stderr's tail
    print("the failure's Event:", events[0]["message"])
    # Curvine's script prints the secret key with the command line: the controller masks it.
    assert "test-secret-key" not in json.dumps(events) + json.dumps(failed)
    # Put right: the broken mount taken out, the Dataset's mounts are mounted again.
    apply(bed, *dataset_and_runtime(bed, [s3_mount("s3data", "data"), s3_mount("more", "more")]))
    eventually(
        lambda: (c := mounted_condition(bed)) and c["status"] == "True" and c,
        "UpdateReady=True again",
        timeout=240,
        interval=1,
    )


def test_the_master_pod_replaced_gets_its_mounts_back(bed: Bed) -> None:
    old = get(bed.kc, "-n", APPS, "pod", MASTER)["metadata"]["uid"]
    t0 = time.monotonic()
    kubectl(bed.kc, "-n", APPS, "delete", "pod", MASTER, "--wait=false")

    def remounted() -> bool:
        pod = get(bed.kc, "-n", APPS, "pod", MASTER)
        uid = pod["metadata"]["uid"]
        record = str((runtime(bed).get("status") or {}).get("mountedUfs", ""))
        return bool(uid != old and record.startswith(uid + "/"))

    eventually(remounted, "the new master's mounts", timeout=300, interval=1)
    bed.figures["master deleted to mounts back (s)"] = time.monotonic() - t0
    table = cv_mounts(bed)
    assert "/s3data" in table, table
    assert "/more" in table, table


def test_report_summary_fills_the_cache_states_that_kubectl_get_dataset_prints(bed: Bed) -> None:
    status = eventually(
        lambda: (s := dataset(bed).get("status") or {}).get("cacheStates", {}).get("cacheCapacity") and s,
        "status.cacheStates from ReportSummary",
        timeout=3 * SUMMARY_PERIOD + 60,
        interval=1,
    )
    assert set(status["cacheStates"]) == {"cached", "cachedPercentage", "cacheCapacity", "cacheHitRatio"}
    assert status.get("fileNum"), status
    assert status.get("ufsTotal") is not None, status
    table = kubectl(bed.kc, "-n", APPS, "get", "dataset", NAME, "-o", "wide")
    header, row = table.splitlines()[:2]
    assert "CACHE CAPACITY" in header, table
    assert "TOTAL FILES" in header, table
    assert status["cacheStates"]["cacheCapacity"] in row, table
    assert status["fileNum"] in row, table
    print(table)


def test_pods_exec_runs_in_a_real_container_with_exit_codes_output_and_a_deadline(bed: Bed) -> None:
    async def run() -> None:
        api = await connect(str(bed.kc))
        ok = await exec_in_pod(
            api, APPS, APP, "app", ["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=20
        )
        assert (ok.exit_code, ok.stdout, ok.stderr) == (3, b"out\n", b"err\n")
        quick = [await exec_in_pod(api, APPS, APP, "app", ["true"], timeout=20) for _ in range(5)]
        assert {q.exit_code for q in quick} == {0}
        bed.figures["pods/exec of `true`, median of 5 (s)"] = sorted(q.seconds for q in quick)[2]
        bed.figures["pods/exec subprotocol v5 (1) or v4 (0)"] = float(quick[0].subprotocol.startswith("v5"))
        t0 = time.monotonic()
        with pytest.raises(ExecTimeout):
            await exec_in_pod(api, APPS, APP, "app", ["sleep", "30"], timeout=2)
        assert time.monotonic() - t0 < 6
        with pytest.raises(ExecFailed, match="nope"):
            await exec_in_pod(api, APPS, APP, "nope", ["true"], timeout=20)
        with pytest.raises(ExecFailed):
            await exec_in_pod(api, APPS, APP, "app", ["/no/such/program"], timeout=20)

    asyncio.run(run())
