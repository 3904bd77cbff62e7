"""Faults, measured: each of the product's processes killed -9 in the middle of its busiest work, and
the API server and etcd restarted under all of them. Real control plane, real processes, real FUSE;
every loop bounded, every byte on loopback.

What is guaranteed (the README's reliability section is written from these tests):
- webhook down: every labelled pod is refused (fail closed), none is stored unmutated; unlabelled pods
  never notice; it serves again as soon as it is ready after a restart.
- controller leader killed: the standby takes the Lease and finishes; every ConfigMap, workload and PV
  is as the Dataset says, once; deleting the Datasets leaves no PV behind.
- CSI node service killed during concurrent stages: kubelet's retries end with refcounts equal to the
  staged volumes, one FUSE per mount key, no mount or FUSE process left after the last unstage.
- kube-apiserver and etcd restarted: every process reconnects on its own (same pid: no crash, no
  restart) and its watch caches converge on what changed.

Figures go to the terminal summary of the run (``fault figures``) and to the closing notes.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from kubernetes import client, config

import localcluster
from csi.proto import csi_pb2, csi_pb2_grpc
from kubectl_fluid.api import names
from tests.e2e.csi import CsiNode, node_object
from tests.e2e.fluid import (
    MANIFESTS,
    ControllerProcess,
    LocalProcess,
    WebhookProcess,
    install,
    kubectl,
    lease_holder,
    service_account_kubeconfig,
)
from tests.e2e.podload import Answer, create_pods, pod
from tests.e2e.test_controller import Fluid, dataset, runtime
from tests.e2e.test_csi_node import CSI_NODE_ACCOUNT
from tests.e2e.wait import as_json, eventually

FIGURES: dict[str, dict[str, Any]] = {}


def figures(scenario: str, **values: Any) -> None:
    FIGURES.setdefault(scenario, {}).update(values)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] if ordered else float("nan")


# ---------------------------------------------------------------------------------------- webhook


def mutated(p: dict[str, Any], ds: str) -> bool:
    volumes = {v["name"] for v in p["spec"].get("volumes", [])}
    done = (p["metadata"].get("labels") or {}).get(names.LABEL_INJECT_DONE) == "true"
    return done and names.runtime_config_volume(ds) in volumes


def test_webhook_killed_under_200_pod_creates_a_second(
    k8s: client.ApiClient,
    kubeconfig: Path,
    namespace: str,
    controller: ControllerProcess,
    webhook: WebhookProcess,
) -> None:
    fl = Fluid(k8s, namespace)
    fl.create(dataset("ds1"))
    fl.create(runtime("ds1"))
    eventually(lambda: fl.bound("ds1"), "Dataset ds1 Bound", timeout=30)
    eventually(lambda: fl.configmap("ds1"), "runtime config of ds1", timeout=30)

    rate, seconds, kill_at, restart_at = 200, 12.0, 3.0, 5.0
    marks: dict[str, float] = {}

    async def fault() -> None:
        t0 = time.monotonic()
        await asyncio.sleep(kill_at)
        assert webhook.proc is not None
        os.kill(webhook.proc.pid, signal.SIGKILL)
        await asyncio.to_thread(webhook.proc.wait)
        marks["killed"] = time.monotonic() - t0
        await asyncio.sleep(restart_at - kill_at)
        marks["restarted"] = time.monotonic() - t0
        webhook.start()  # same port, same certificate Secret: the registration stays as it was

    def body(i: int) -> dict[str, Any]:
        if i % 2:
            return pod(i, {}, {})
        return pod(i, {names.LABEL_INJECT: "true"}, {names.ANNOTATION_DATASET: "ds1"})

    answers = asyncio.run(
        create_pods(
            kubeconfig, namespace, rate=rate, seconds=seconds, body=body, labelled=lambda i: i % 2 == 0,
            during=fault,
        )
    )  # fmt: skip
    webhook.wait_ready()

    labelled = [a for a in answers if a.labelled]
    plain = [a for a in answers if not a.labelled]
    admitted = [a for a in labelled if a.status == 201]
    refused = [a for a in labelled if a.status != 201]
    # Fail closed: whatever was admitted was mutated; whatever was refused names the webhook.
    assert [a for a in admitted if not mutated(a.pod or {}, "ds1")] == []
    assert refused, "the webhook was down for 2 s under load: labelled pods must have been refused"
    assert all("fluid" in a.message and "webhook" in a.message for a in refused), refused[0].message
    # Refusals only while it was down: each answered after the kill (requests in flight then are
    # refused too), and none sent after the restarted webhook's first admission.
    recovered = min(a.at + a.took for a in admitted if a.at + a.took > marks["restarted"])
    outside = [
        (round(a.at, 2), round(a.took, 2), a.message[:160])
        for a in refused
        if not (a.at + a.took >= marks["killed"] - 0.1 and a.at <= recovered)
    ]
    assert outside == [], (
        f"killed {marks['killed']:.2f} restarted {marks['restarted']:.2f} recovered {recovered:.2f}"
    )
    # Unlabelled pods never reach it (objectSelector): every one stored.
    assert [a.message for a in plain if a.status != 201] == []
    # The cluster agrees with the answers: every stored labelled pod carries the injection.
    stored = fl.core.list_namespaced_pod(namespace, label_selector=f"{names.LABEL_INJECT}=true").items
    assert len(stored) == len(admitted)
    assert all(mutated(as_json(p), "ds1") for p in stored)

    def took(group: list[Answer], lo: float, hi: float) -> list[float]:
        return [a.took * 1000 for a in group if a.status == 201 and lo <= a.at < hi]

    sent = len(answers)
    figures(
        "webhook killed -9 under load",
        offered_rate=f"{rate}/s for {seconds:.0f} s ({sent} creates, {sent / answers[-1].at:.0f}/s sent)",
        labelled_refused_while_down=len(refused),
        labelled_admitted_unmutated=0,
        unlabelled_refused=0,
        serves_again_after_restart_s=round(recovered - marks["restarted"], 2),
        unlabelled_p99_ms_before=round(percentile(took(plain, 0, marks["killed"]), 99), 1),
        unlabelled_p99_ms_while_down=round(percentile(took(plain, marks["killed"], recovered), 99), 1),
        labelled_p99_ms_before=round(percentile(took(labelled, 0, marks["killed"]), 99), 1),
        fault_timer_late_s=round(marks["killed"] - kill_at, 2),
    )


# ------------------------------------------------------------------------------------- controller

DATASETS = 200


def _create_pairs(fl: Fluid, count: int) -> None:
    def pair(i: int) -> None:
        name = f"ds-{i:03d}"
        fl.create(dataset(name))
        fl.create(runtime(name, worker={"replicas": 1, "options": {"idx": str(i)}}))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(pair, range(count)))


def _converged(fl: Fluid, count: int) -> list[str]:
    """The names of Datasets not yet right: a ConfigMap whose runtime.json is this Dataset's, owned by
    its CacheRuntime, and the Dataset Bound."""
    cms = {
        cm.metadata.name: cm
        for cm in fl.core.list_namespaced_config_map(
            fl.ns, label_selector=f"{names.LABEL_APP_MANAGED_BY}={names.MANAGED_BY}"
        ).items
    }
    bound = {
        d["metadata"]["name"]
        for d in fl.custom.list_namespaced_custom_object(names.GROUP, names.VERSION, fl.ns, "datasets")[
            "items"
        ]
        if (d.get("status") or {}).get("phase") == "Bound"
    }
    wrong = []
    for i in range(count):
        name = f"ds-{i:03d}"
        cm = cms.get(names.runtime_config_configmap(name))
        if cm is None or name not in bound:
            wrong.append(name)
            continue
        config = json.loads(cm.data[names.RUNTIME_JSON_KEY])
        if config["master"]["name"] != f"{name}-master" or config["worker"]["options"].get("idx") != str(i):
            wrong.append(name)
    return wrong


def _lease_free(coordination: client.CoordinationV1Api) -> bool:
    try:
        return lease_holder(coordination) == ""
    except client.ApiException as e:
        if e.status == 404:  # no controller has led in this cluster yet
            return True
        raise


def test_controller_leader_killed_while_200_datasets_converge(
    k8s: client.ApiClient, namespace: str, controller_session: ControllerProcess
) -> None:
    fl = Fluid(k8s, namespace)
    coordination = client.CoordinationV1Api(k8s)
    controller_session.stop()  # two fresh replicas of our own; the session's comes back for later tests
    eventually(lambda: _lease_free(coordination), "the session controller's lease released", timeout=20)
    replicas = {
        name: ControllerProcess(controller_session.kubeconfig, controller_session.log_dir, name)
        for name in ("fault-a", "fault-b")
    }
    try:
        for proc in replicas.values():
            proc.start()
        for proc in replicas.values():
            proc.wait_ready(timeout=60)
        leader_name = eventually(lambda: lease_holder(coordination) or None, "a leader", timeout=30)
        leader = replicas[leader_name]
        standby_name = next(n for n in replicas if n != leader_name)

        t0 = time.monotonic()
        _create_pairs(fl, DATASETS)
        created = time.monotonic() - t0
        # Kill the leader once some, not all, are done: half-finished keys are what it leaves behind.
        done_at_kill = eventually(
            lambda: (d := DATASETS - len(_converged(fl, DATASETS))) >= 20 and d,
            "20 Datasets converged before the kill",
            timeout=120,
        )
        leader.kill()
        killed = time.monotonic()
        eventually(
            lambda: lease_holder(coordination) == standby_name, "the standby holding the Lease", timeout=30
        )
        takeover = time.monotonic() - killed
        leader.start()  # it comes back as the standby
        eventually(lambda: not _converged(fl, DATASETS), f"all {DATASETS} Datasets converged", timeout=300)
        converge = time.monotonic() - t0
        assert lease_holder(coordination) == standby_name

        # Each object once, each where the Dataset says.
        statefulsets = [s.metadata.name for s in fl.apps.list_namespaced_stateful_set(namespace).items]
        services = [s.metadata.name for s in fl.core.list_namespaced_service(namespace).items]
        pvcs = [p.metadata.name for p in fl.core.list_namespaced_persistent_volume_claim(namespace).items]
        for listed in (statefulsets, services, pvcs):
            assert len(listed) == len(set(listed))
        per_dataset = {kind: len(items) / DATASETS for kind, items in
                       (("statefulsets", statefulsets), ("services", services), ("pvcs", pvcs))}  # fmt: skip
        assert per_dataset["pvcs"] == 1
        for i in range(DATASETS):
            name = f"ds-{i:03d}"
            assert f"{name}-master" in statefulsets
            assert f"{name}-worker" in statefulsets
        assert per_dataset["statefulsets"] == 2
        pvs = [
            pv
            for pv in fl.core.list_persistent_volume().items
            if pv.spec.claim_ref is not None and pv.spec.claim_ref.namespace == namespace
        ]
        assert sorted(str(pv.spec.claim_ref.name) for pv in pvs) == [f"ds-{i:03d}" for i in range(DATASETS)]
        assert {pv.metadata.name for pv in pvs} == {
            names.dataset_pv(namespace, f"ds-{i:03d}") for i in range(DATASETS)
        }

        # Deleting them all leaves no PV behind (the finalizer's job, done by the new leader).
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: fl.delete("datasets", f"ds-{i:03d}"), range(DATASETS)))

        def orphans() -> list[str]:
            return [
                str(pv.metadata.name)
                for pv in fl.core.list_persistent_volume().items
                if pv.spec.claim_ref is not None and pv.spec.claim_ref.namespace == namespace
            ]

        eventually(lambda: not orphans(), "no PV of a deleted Dataset left", timeout=300)
        figures(
            "controller leader killed -9",
            datasets=DATASETS,
            created_in_s=round(created, 1),
            converged_before_kill=done_at_kill,
            standby_took_lease_after_s=round(takeover, 1),
            all_converged_after_s=round(converge, 1),
            duplicates=0,
            orphan_pvs_after_delete=0,
        )
    finally:
        for proc in replicas.values():
            proc.stop()


# ------------------------------------------------------------------------------------ CSI node

MASTERS = "127.0.0.1:18996"
KEYS, PER_KEY = 5, 10


@pytest.fixture
def fault_node(
    core: client.CoreV1Api, fluid: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CsiNode]:
    name = f"e2e-fault-{secrets.token_hex(3)}"
    core.create_node(node_object(name))
    root = tmp_path_factory.mktemp("f", numbered=True)
    sa = service_account_kubeconfig(fluid, core, root / "kubeconfig", account=CSI_NODE_ACCOUNT)
    node = CsiNode(name, root, sa, extra=["--mount-mode=embedded"])
    node.start()
    try:
        yield node
    finally:
        node.stop()
        core.delete_node(name)
        node.stop_leftovers_then_complain()


def _volume(node: CsiNode, key: int, i: int) -> tuple[str, dict[str, str]]:
    fs_path, curvine = f"/k{key}", f"/k{key}/v{i}"
    (node.data / names.cluster_id(MASTERS) / curvine.lstrip("/")).mkdir(parents=True, exist_ok=True)
    context = {
        names.PARAM_MASTER_ADDRS: MASTERS,
        names.PARAM_FS_PATH: fs_path,
        names.PARAM_CURVINE_PATH: curvine,
    }
    return f"fault-k{key}-v{i}", context


CAPABILITY = csi_pb2.VolumeCapability(
    mount=csi_pb2.VolumeCapability.MountVolume(),
    access_mode=csi_pb2.VolumeCapability.AccessMode(
        mode=csi_pb2.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER
    ),
)


def _stage_request(node: CsiNode, volume_id: str, context: dict[str, str]) -> Any:
    staging = names.csi_staging_path(volume_id, str(node.kubelet_root / "plugins"))
    return csi_pb2.NodeStageVolumeRequest(
        volume_id=volume_id,
        staging_target_path=str(staging),
        volume_capability=CAPABILITY,
        volume_context=context,
    )


def _fusemount_refs(k8s: client.ApiClient, node: str) -> dict[str, int]:
    items = client.CustomObjectsApi(k8s).list_cluster_custom_object(
        names.GROUP, names.VERSION, "fusemounts", label_selector=names.fuse_mount_node_selector(node)
    )["items"]
    return {i["spec"]["fsPath"]: int((i.get("status") or {}).get("refCount", 0)) for i in items}


@pytest.mark.parametrize("kill_after", [1, 25], ids=["first-answer", "half-answered"])
def test_csi_node_killed_during_50_concurrent_stages(
    k8s: client.ApiClient, fault_node: CsiNode, kill_after: int
) -> None:
    node = fault_node
    volumes = [_volume(node, k, i) for k in range(KEYS) for i in range(PER_KEY)]
    requests = {vid: _stage_request(node, vid, ctx) for vid, ctx in volumes}

    channel = grpc.insecure_channel(f"unix://{node.socket}")
    stub = csi_pb2_grpc.NodeStub(channel)
    futures: dict[str, Any] = {
        vid: stub.NodeStageVolume.future(req, timeout=60) for vid, req in requests.items()
    }
    # Kill -9 once the first (or half of the) stages are answered: other keys' FUSE are starting,
    # other volumes are queued behind their key's lock.
    eventually(
        lambda: sum(f.done() for f in futures.values()) >= kill_after,
        f"{kill_after} NodeStage answered",
        timeout=60,
        interval=0.005,
    )
    node.kill()
    ok_before = sum(1 for f in futures.values() if f.done() and f.exception() is None)
    channel.close()
    restart = time.monotonic()
    node.start()

    # kubelet retries every stage that did not succeed until it does (NodeStage is idempotent).
    channel = grpc.insecure_channel(f"unix://{node.socket}")
    stub = csi_pb2_grpc.NodeStub(channel)
    retries, errors = 0, list[str]()
    with ThreadPoolExecutor(16) as pool:
        pending = list(requests)
        for _ in range(20):
            answers = pool.map(lambda v: _try(stub.NodeStageVolume, requests[v], errors), pending)
            results = dict(zip(pending, answers, strict=True))
            retries += len(pending)
            pending = [v for v, ok in results.items() if not ok]
            if not pending:
                break
            time.sleep(0.5)
    assert pending == [], f"stages still failing after the restart: {pending[:5]}"
    all_staged = time.monotonic() - restart

    # Refcounts equal the staged volumes, one FUSE per key, every volume's source mounted once beside
    # its key's mount point, and kubelet's staging paths plain directories.
    eventually(lambda: _fusemount_refs(k8s, node.name) == {f"/k{k}": PER_KEY for k in range(KEYS)},
               "FuseMount refcounts = staged volumes per key", timeout=30)  # fmt: skip
    assert len(node.fuse_pids()) == KEYS
    points = node.mounts()
    assert len(points) == len(set(points)), "a mount stacked twice"
    for req in requests.values():
        assert req.staging_target_path not in points
        assert Path(req.staging_target_path).is_dir()
    assert len(points) == KEYS + len(requests)

    # Targets are served: a file written through one volume's target is read through a second pod's.
    for k in range(KEYS):
        vid = f"fault-k{k}-v0"
        targets = [node.kubelet_root / "pods" / f"pod-{k}-{j}" / "mount" for j in range(2)]
        for target in targets:
            stub.NodePublishVolume(
                csi_pb2.NodePublishVolumeRequest(
                    volume_id=vid,
                    staging_target_path=requests[vid].staging_target_path,
                    target_path=str(target),
                    volume_capability=CAPABILITY,
                )
            )
        (targets[0] / "hello").write_text(f"key {k}")
        assert (targets[1] / "hello").read_text() == f"key {k}"
        for target in targets:
            stub.NodeUnpublishVolume(
                csi_pb2.NodeUnpublishVolumeRequest(volume_id=vid, target_path=str(target))
            )
    for vid, req in requests.items():
        stub.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(volume_id=vid, staging_target_path=req.staging_target_path)
        )
    channel.close()
    assert node.fuse_pids() == []
    assert node.mounts() == []
    eventually(lambda: _fusemount_refs(k8s, node.name) == {}, "FuseMounts gone", timeout=30)
    figures(
        f"CSI node killed -9 during 50 stages, after {kill_after} answered",
        stages=len(requests),
        mount_keys=KEYS,
        answered_ok_before_kill=ok_before,
        all_staged_after_restart_s=round(all_staged, 2),
        stage_calls_after_restart=retries,
        errors_seen_after_restart=sorted({e.split(":")[0] for e in errors}),
        first_error=errors[0][:200] if errors else None,
        fuse_processes=KEYS,
        leaked_mounts_or_fuse=0,
    )


def _try(call: Any, request: Any, errors: list[str]) -> bool:
    try:
        call(request, timeout=30)
    except grpc.RpcError as e:
        errors.append(f"{e.code().name}: {e.details()}")
        return False
    return True


# ------------------------------------------------------------------------ API server and etcd


@dataclass
class RestartBed:
    """A control plane of the test's own (restarting the API server of a shared or kind cluster is
    not a test's to do) with the product's three servers on it."""

    cluster: localcluster.Cluster
    k8s: client.ApiClient
    controller: ControllerProcess
    webhook: WebhookProcess
    node: CsiNode
    stub: csi_pb2_grpc.NodeStub

    def processes(self) -> list[LocalProcess]:
        return [self.controller, self.webhook, self.node]


@pytest.fixture
def restart_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartBed]:
    with localcluster.running(tmp_path_factory.mktemp("restart-cluster"), 1) as cluster:
        kc = cluster.kubeconfig
        k8s = config.new_client_from_config(config_file=str(kc))
        core = client.CoreV1Api(k8s)
        install(kc)
        kubectl(kc, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-mooncake.yaml"))
        core.create_namespace({"metadata": {"name": "restart"}})
        eventually(
            lambda: core.read_namespaced_service_account("default", "restart"), "default SA", timeout=30
        )
        logs = tmp_path_factory.mktemp("restart-logs")
        root = tmp_path_factory.mktemp("r", numbered=True)
        node_sa = service_account_kubeconfig(kc, core, root / "kubeconfig", account=CSI_NODE_ACCOUNT)
        procs = (
            ControllerProcess(service_account_kubeconfig(kc, core, logs / "c.kubeconfig"), logs, "restart-a"),
            WebhookProcess(
                service_account_kubeconfig(kc, core, logs / "w", account="fluid-webhook"), kc, logs
            ),
            CsiNode(cluster.nodes[0], root, node_sa, extra=["--mount-mode=embedded"]),
        )
        controller, webhook, node = procs
        channel = grpc.insecure_channel(f"unix://{node.socket}")
        try:
            controller.start()
            webhook.start()
            webhook.register()
            node.start()
            controller.wait_ready(timeout=60)
            webhook.wait_ready(timeout=60)
            admission = client.AdmissionregistrationV1Api(k8s)
            eventually(lambda: webhook.ca_bundle_patched(admission), "caBundle patched", timeout=30)
            yield RestartBed(cluster, k8s, controller, webhook, node, csi_pb2_grpc.NodeStub(channel))
        finally:
            channel.close()
            for proc in procs:
                proc.stop()
            node.stop_leftovers()


def test_apiserver_and_etcd_restarted_every_component_reconnects(restart_bed: RestartBed) -> None:
    """Controller, webhook and CSI node service run through a restart of kube-apiserver and etcd,
    then act on what changed, each with the pid it had before."""
    bed, node = restart_bed, restart_bed.node
    fl = Fluid(bed.k8s, "restart")
    coordination = client.CoordinationV1Api(bed.k8s)
    fl.create(dataset("before"))
    fl.create(runtime("before"))
    eventually(lambda: fl.bound("before"), "Dataset before Bound", timeout=30)
    first = _volume(node, 0, 0)
    bed.stub.NodeStageVolume(_stage_request(node, *first))
    eventually(lambda: _fusemount_refs(bed.k8s, node.name) == {"/k0": 1}, "FuseMount of the first volume")
    eventually(lambda: lease_holder(coordination) == "restart-a", "controller leading", timeout=30)
    pids = [getattr(p.proc, "pid", None) for p in bed.processes()]
    misses = bed.webhook.metric(API_REQUESTS)

    t0 = time.monotonic()
    localcluster.restart_storage(bed.cluster)
    restarted = time.monotonic()

    # Each component acts on a change made after the restart, through its own watches.
    fl.create(dataset("after"))
    fl.create(runtime("after"))
    eventually(lambda: fl.bound("after") and fl.configmap("after"), "Dataset after converged", timeout=90)
    controller_back = time.monotonic() - restarted
    eventually(
        lambda: _injected_from_cache(bed, "after"), "the webhook's caches holding Dataset after", timeout=90
    )
    webhook_back = time.monotonic() - restarted
    second = _volume(node, 0, 1)
    bed.stub.NodeStageVolume(_stage_request(node, *second))
    eventually(lambda: _fusemount_refs(bed.k8s, node.name) == {"/k0": 2}, "FuseMount refcount 2", timeout=90)
    csi_back = time.monotonic() - restarted
    eventually(lambda: lease_holder(coordination) == "restart-a", "controller leading again", timeout=60)

    # Nothing crashed or restarted: the same processes did all of it.
    assert [getattr(p.proc, "pid", None) for p in bed.processes()] == pids
    assert all(p.alive() for p in bed.processes())
    for volume in (first, second):
        req = _stage_request(node, *volume)
        bed.stub.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(
                volume_id=req.volume_id, staging_target_path=req.staging_target_path
            )
        )
    eventually(lambda: _fusemount_refs(bed.k8s, node.name) == {}, "FuseMount deleted", timeout=30)
    figures(
        "kube-apiserver and etcd restarted",
        restart_took_s=round(restarted - t0, 1),
        controller_converged_new_dataset_after_s=round(controller_back, 1),
        webhook_served_new_dataset_from_cache_after_s=round(webhook_back, 1),
        csi_mirror_caught_up_after_s=round(csi_back, 1),
        webhook_miss_gets=int(bed.webhook.metric(API_REQUESTS) - misses),
        process_restarts=0,
    )


API_REQUESTS = "fluid_webhook_api_requests_total"


def _injected_from_cache(bed: RestartBed, ds: str) -> bool:
    """A dry-run create is admitted exactly like a real one; the webhook answers it from its watch
    caches once they hold ``ds`` (no miss GET counted meanwhile)."""
    seen = bed.webhook.metric(API_REQUESTS)
    body = pod(0, {names.LABEL_INJECT: "true"}, {names.ANNOTATION_DATASET: ds})
    body["metadata"]["name"] = f"dry-{secrets.token_hex(3)}"
    admitted = as_json(client.CoreV1Api(bed.k8s).create_namespaced_pod("restart", body, dry_run="All"))
    return mutated(admitted, ds) and bed.webhook.metric(API_REQUESTS) == seen
