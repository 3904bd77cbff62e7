"""The FUSE path with the real Curvine on a real node, as the default install runs it: the product
deployed with ``kubectl apply -k manifests/`` unchanged (its node DaemonSet runs Curvine's
curvine-fuse from Curvine's image, hack/images/curvine.py, with the settings of ConfigMap
fluid-csi-fuse-settings), a real Curvine master and worker on this host's loopback (the FUSE pods use
the host's network), and a static PV of a directory made in that Curvine. Two real pods mount it
through one standalone FUSE pod running the real curvine-fuse, admitted by the FUSE pod policy; a file
written in one container is read in the other and, through a curvine-fuse of the host's own, in
Curvine itself; the FUSE killed -9 in its pod is replaced and both pods read again; after the master's
restart the pods read again or the FuseMount says why not; both pods deleted → the FUSE pod gone and
nothing of the volume mounted, on the host or in the node.

A cluster of its own whose one node is a real, untainted kubelet, as in test_real_node_product.
Skipped, saying why, where a real node cannot run, an image cannot be built or Curvine's binaries
are not there."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import localcluster
from kubectl_fluid.api import names
from localcluster import product, realnodes
from localcluster.peers import curvinebins, curvinecluster
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.test_real_node_fuse import app_pod, fuse_processes, node_fusemounts
from tests.e2e.test_real_node_product import get, ready
from tests.e2e.users_cluster import users_cluster, why_no_users_cluster
from tests.e2e.wait import eventually
from tests.tools import BUILT_BY, CHART, helm, helm_binary

SYSTEM = "fluid-system"
APPS = "default"
NODE = f"{realnodes.NAME_PREFIX}0"
DIRECTORY = "/real-node"  # the volume's directory in Curvine
CLAIM = "curvine-real"
WRITTEN = "written-through-curvine"


@dataclass
class Bed:
    cluster: localcluster.Cluster
    layout: curvinecluster.Layout
    image: str
    node: realnodes.RealNode
    key: str = ""  # the volume's mount key, once its FUSE pod runs
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def kc(self) -> Path:
        return self.cluster.kubeconfig


def why_not() -> str | None:
    reason = why_no_users_cluster()
    if reason is None and curvinebins.find() is None:
        reason = f"no real Curvine binaries: {curvinebins.peer_dir()} has none"
    return reason


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_not()
    if reason:
        pytest.skip(reason)
    from images import curvine as curvine_image

    version = curvinebins.version()
    # The default install's images, Curvine's among them, are the users cluster's own.
    with users_cluster(tmp_path_factory.mktemp("curvine-cluster")) as cluster:
        layout = product.ensure_curvine(cluster)
        assert layout is not None
        node = realnodes.RealNode.load(cluster.state_dir / realnodes.NODES_DIR / NODE)
        assert node is not None
        yield Bed(cluster, layout, curvine_image.name(version), node)


def static_volume(
    bed: Bed, claim: str = CLAIM, directory: str = DIRECTORY, **attributes: str
) -> list[dict[str, Any]]:
    """A PV of ``directory`` in the test's Curvine and its claim; ``attributes`` join its volume
    attributes (a static PV's are its StorageClass parameters)."""
    csi = {
        "driver": names.CSI_DRIVER,
        "volumeHandle": claim,
        "volumeAttributes": {
            names.PARAM_MASTER_ADDRS: bed.layout.master_addrs(),
            names.PARAM_CURVINE_PATH: directory,
            **attributes,
        },
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": claim},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "claimRef": {"namespace": APPS, "name": claim},
                "csi": csi,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": APPS},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": claim,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    ]


def apply(bed: Bed, *objects: dict[str, Any]) -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(body))


def fuse_pods(bed: Bed) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = get(bed.kc, "-n", SYSTEM, "pods", "-l", names.LABEL_MOUNT_KEY)["items"]  # type: ignore[assignment]
    return [p for p in listed if not p["metadata"].get("deletionTimestamp")]


def sh(bed: Bed, pod: str, script: str) -> str:
    return kubectl(bed.kc, "-n", APPS, "exec", pod, "--", "sh", "-c", script)


def sh_quiet(bed: Bed, pod: str, script: str) -> str:
    """``sh`` whose failure (a read while the FUSE is away) is its output, for waiting on."""
    try:
        return sh(bed, pod, script)
    except AssertionError as failed:
        return str(failed)


def test_two_real_pods_share_the_real_curvine_through_one_fuse_pod(bed: Bed, tmp_path: Path) -> None:
    kubectl(bed.kc, "apply", "-k", str(MANIFESTS))  # the default install, unchanged
    for workload in ("daemonset/fluid-csi-node", "deployment/fluid-csi-controller"):
        kubectl(bed.kc, "-n", SYSTEM, "rollout", "status", workload, "--timeout=300s")

    # The volume's directory, made in Curvine through a curvine-fuse of the host's own.
    with curvinecluster.mounted(bed.layout, "/", tmp_path / "root"):
        (tmp_path / "root" / DIRECTORY.lstrip("/")).mkdir(exist_ok=True)
    apply(bed, *static_volume(bed))
    t0 = time.monotonic()
    apply(bed, app_pod("writer", CLAIM), app_pod("reader", CLAIM))
    for name in ("writer", "reader"):
        eventually(
            lambda n=name: ready(get(bed.kc, "-n", APPS, "pod", n)),  # type: ignore[misc]
            f"pod {name} Running with the Curvine volume",
            timeout=240,
        )
    bed.figures["pods with the Curvine volume Running after their creation"] = time.monotonic() - t0

    # One FUSE pod, from the Curvine image, running the real curvine-fuse on the real masters.
    [fuse] = fuse_pods(bed)
    [container] = fuse["spec"]["containers"]
    assert f"docker.io/{container['image']}" == bed.image
    assert container["command"][0] == "/opt/curvine/curvine-fuse"
    assert container["command"][container["command"].index("--master-addrs") + 1] == bed.layout.master_addrs()
    kubectl(bed.kc, "-n", SYSTEM, "logs", fuse["metadata"]["name"])
    listed = kubectl_fluid(bed.kc, "mounts", "--node", NODE, "-o", "wide")
    table = ok(listed)
    assert bed.layout.master_addrs() in table, table
    # Issue 28, item 3: Curvine's own program serves it, named on the FuseMount and in the table.
    assert " curvine-fuse " in table, table
    assert "stand-in" not in listed.stderr, listed.stderr
    bed.key = fuse["metadata"]["labels"][names.LABEL_MOUNT_KEY]
    assert fuse_processes(bed.node, bed.key), "the real curvine-fuse is not running in the node"

    sh(bed, "writer", f"echo {WRITTEN} > /data/hello")
    read = sh(bed, "reader", "cat /data/hello").strip()
    assert read == WRITTEN, (
        f"the reader read {read!r}; curvine-fuse's log:\n"
        + kubectl(bed.kc, "-n", SYSTEM, "logs", fuse["metadata"]["name"])[-4000:]
    )
    with curvinecluster.mounted(bed.layout, DIRECTORY, tmp_path / "dir"):
        assert (tmp_path / "dir" / "hello").read_text() == f"{WRITTEN}\n"


def both_read(bed: Bed, when: str) -> None:
    """Both running pods read the writer's file (their containers were not restarted)."""
    for name in ("reader", "writer"):
        eventually(
            lambda n=name: sh_quiet(bed, n, "cat /data/hello").strip() == WRITTEN,  # type: ignore[misc]
            f"{name} reading the file again {when}",
            timeout=120,
        )
    restarts = {get(bed.kc, "-n", APPS, "pod", n)["status"]["containerStatuses"][0]["restartCount"] for n in (
        "reader", "writer")}  # fmt: skip
    assert restarts == {0}, f"an app container was restarted {when}"


def test_the_real_curvine_fuse_killed_9_in_its_pod_is_replaced_and_the_running_pods_read_again(
    bed: Bed,
) -> None:
    [old] = fuse_pods(bed)
    [pid] = eventually(lambda: fuse_processes(bed.node, bed.key), "the real curvine-fuse running in the node")
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)

    def replaced() -> dict[str, Any] | None:
        fresh = [p for p in fuse_pods(bed) if p["metadata"]["uid"] != old["metadata"]["uid"]]
        return fresh[0] if fresh and fresh[0]["status"]["phase"] == "Running" else None

    new = eventually(replaced, "the killed curvine-fuse's pod replaced by the node service", timeout=120)
    assert new["metadata"]["name"] == old["metadata"]["name"]
    both_read(bed, "after kill -9 of curvine-fuse")
    bed.figures["curvine-fuse kill -9 in its pod to both pods reading again"] = time.monotonic() - t0
    assert pid not in fuse_processes(bed.node, bed.key)
    sh(bed, "reader", "echo after-recovery > /data/again")
    assert sh(bed, "writer", "cat /data/again").strip() == "after-recovery"


def test_after_a_master_restart_the_pods_read_again_or_the_fusemount_says_broken_and_why(bed: Bed) -> None:
    """The master's restart is not the FUSE's death: the same curvine-fuse either serves the pods
    again, or, when the restarted master no longer knows the FUSE's fs-path (this single-node test
    bed's master may come back without what was made since it started), the FuseMount says Broken and
    why, rather than Ready over a dead mount."""
    [pid] = fuse_processes(bed.node, bed.key)
    t0 = time.monotonic()
    product.restart_curvine_master(bed.cluster, bed.layout)
    seen: list[str] = []

    def outcome() -> str | None:
        got = sh_quiet(bed, "reader", "cat /data/hello").strip()
        seen.append(got)
        if got == WRITTEN:
            return "served again"
        [fm] = [m for m in node_fusemounts(bed.kc) if m["spec"]["mountKey"] == bed.key]
        status = fm.get("status", {})
        if status.get("phase") == "Broken" and fm["spec"]["fsPath"] in status.get("reason", ""):
            return f"Broken: {status['reason']}"
        return None

    try:
        said = eventually(outcome, "served again, or Broken with the reason", timeout=120, interval=1)
    except AssertionError:
        raise AssertionError(
            f"after the master's restart the reader saw {seen[:3]} ... {seen[-3:]}"
        ) from None
    bed.figures[f"master restart to the mount's outcome ({said[:40]})"] = time.monotonic() - t0
    if said == "served again":
        both_read(bed, "after the master's restart")
    assert fuse_processes(bed.node, bed.key) == [pid], "the FUSE was replaced, not recovered"


OOM_CLAIM = "curvine-small-fuse"
# Under what curvine-fuse holds while eight writers stream into it (60-75 MiB measured with four),
# above what it needs idle (16-22 MiB): its volume's writers, not its start, take it over the limit.
OOM_LIMIT = "48Mi"


def test_a_fuse_oom_killed_under_its_storageclass_limit_is_replaced_and_the_pods_read_again(
    bed: Bed, tmp_path: Path
) -> None:
    """A StorageClass's fuse-memory-limit reaches the FUSE pod (with the install's priority class);
    writers push the real curvine-fuse over it, the kernel OOM-kills it, the node service says why
    and replaces the pod, and both running pods read their volume again without a restart."""
    directory = "/small-fuse"
    with curvinecluster.mounted(bed.layout, "/", tmp_path / "root"):
        (tmp_path / "root" / directory.lstrip("/")).mkdir(exist_ok=True)
    limit = {names.PARAM_FUSE_MEMORY_LIMIT: OOM_LIMIT}
    apply(bed, *static_volume(bed, OOM_CLAIM, directory, **limit))
    pods = ("small-writer", "small-reader")
    apply(bed, *(app_pod(name, OOM_CLAIM) for name in pods))
    try:
        for name in pods:
            eventually(lambda n=name: ready(get(bed.kc, "-n", APPS, "pod", n)), f"pod {name} Running", 240)  # type: ignore[misc]
        [fuse] = [p for p in fuse_pods(bed) if p["metadata"]["labels"][names.LABEL_MOUNT_KEY] != bed.key]
        [container] = fuse["spec"]["containers"]
        assert container["resources"]["limits"]["memory"] == OOM_LIMIT
        assert container["resources"]["requests"]["memory"] == OOM_LIMIT  # the default request, capped
        assert fuse["spec"]["priorityClassName"] == "system-node-critical"
        assert fuse["status"]["qosClass"] == "Burstable"
        sh(bed, "small-writer", "echo before-the-oom > /data/kept")

        t0 = time.monotonic()
        # Eight writers at once; they fail (EIO, ENOTCONN) once the FUSE is killed, as they must.
        one = "dd if=/dev/zero of=/data/big$i bs=1M count=256 2>/dev/null"
        writers = f"for i in 1 2 3 4 5 6 7 8; do {one} & done; wait"
        sh_quiet(bed, "small-writer", writers)

        def replaced() -> dict[str, Any] | None:
            now = [p for p in fuse_pods(bed) if p["metadata"]["name"] == fuse["metadata"]["name"]]
            fresh = [p for p in now if p["metadata"]["uid"] != fuse["metadata"]["uid"]]
            return fresh[0] if fresh and fresh[0]["status"].get("phase") == "Running" else None

        eventually(replaced, "the OOM-killed FUSE pod replaced by the node service", timeout=120)
        node_log = kubectl(
            bed.kc, "-n", SYSTEM, "logs", "-l", "app.kubernetes.io/name=fluid-csi-node", "--tail=-1"
        )
        said = [
            line
            for line in node_log.splitlines()
            if fuse["metadata"]["name"] in line and "mount died" in line
        ]
        assert said, node_log[-3000:]
        assert "OOMKilled" in said[0], said
        for name in pods:
            eventually(
                lambda n=name: sh_quiet(bed, n, "cat /data/kept").strip() == "before-the-oom",  # type: ignore[misc]
                f"{name} reading its volume again after the OOM kill",
                timeout=120,
            )
        bed.figures["FUSE OOM-killed under its limit to both pods reading again"] = time.monotonic() - t0
        restarts = {
            get(bed.kc, "-n", APPS, "pod", n)["status"]["containerStatuses"][0]["restartCount"] for n in pods
        }
        assert restarts == {0}
    finally:
        kubectl(bed.kc, "-n", APPS, "delete", "pod", *pods, "--ignore-not-found", "--wait=true")
        kubectl(bed.kc, "-n", APPS, "delete", "pvc", OOM_CLAIM, "--ignore-not-found", "--wait=true")
        kubectl(bed.kc, "delete", "pv", OOM_CLAIM, "--ignore-not-found", "--wait=true")
    eventually(lambda: len(fuse_pods(bed)) == 1, "the small FUSE's pod gone with its volume", timeout=120)


def unpropagated_pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """An app pod of the volume as a user writes one: no mountPropagation."""
    body = app_pod(name, CLAIM)
    for container in body["spec"]["containers"]:
        for mount in container["volumeMounts"]:
            mount.pop("mountPropagation", None)
    body["metadata"]["labels"] = labels or {}
    return body


def test_a_fuse_pod_deleted_the_webhooks_pods_read_again_and_a_pod_it_did_not_admit_is_reported(
    bed: Bed,
) -> None:
    """Issue 28, item 1, as the tester met it: a pod mounting the volume without mountPropagation,
    then the FUSE pod deleted. The pod the webhook admitted (it asked for nothing) got HostToContainer
    and reads again; a pod kept from the webhook (upstream's opt-out label: what every such pod was
    before) keeps the dead mount, and the FuseMount's reason, ``mounts`` REASON and an Event on the
    pod say so and what to do."""
    kubectl(bed.kc, "-n", SYSTEM, "rollout", "status", "deployment/fluid-webhook", "--timeout=300s")

    def ca_patched() -> bool:
        config: dict[str, Any] = get(bed.kc, "mutatingwebhookconfiguration", names.WEBHOOK_NAME)
        return all(w["clientConfig"].get("caBundle") for w in config["webhooks"])

    eventually(ca_patched, "the webhook's CA in every entry of its configuration", timeout=120)
    apply(
        bed,
        unpropagated_pod("plain"),
        unpropagated_pod("optout", {names.LABEL_ENABLE_INJECTION: names.FALSE}),
    )
    for name in ("plain", "optout"):
        eventually(
            lambda n=name: ready(get(bed.kc, "-n", APPS, "pod", n)),  # type: ignore[misc]
            f"pod {name} Running with the Curvine volume",
            timeout=240,
        )
    plain_pod: dict[str, Any] = get(bed.kc, "-n", APPS, "pod", "plain")
    plain_mount = plain_pod["spec"]["containers"][0]["volumeMounts"][0]
    assert plain_mount.get("mountPropagation") == "HostToContainer", plain_mount
    optout_pod: dict[str, Any] = get(bed.kc, "-n", APPS, "pod", "optout")
    optout_mount = optout_pod["spec"]["containers"][0]["volumeMounts"][0]
    assert "mountPropagation" not in optout_mount, optout_mount
    for name in ("plain", "optout"):
        assert sh(bed, name, "cat /data/hello").strip() == WRITTEN

    [old] = fuse_pods(bed)
    t0 = time.monotonic()
    kubectl(bed.kc, "-n", SYSTEM, "delete", "pod", old["metadata"]["name"], "--wait=false")
    eventually(
        lambda: sh_quiet(bed, "plain", "cat /data/hello").strip() == WRITTEN,
        "the pod the webhook admitted reading again after its FUSE pod was deleted",
        timeout=120,
    )
    bed.figures["FUSE pod deleted to a pod without propagation by hand reading again"] = time.monotonic() - t0
    dead = sh_quiet(bed, "optout", "cat /data/hello")
    assert "Transport endpoint is not connected" in dead, dead

    def reported() -> dict[str, Any] | None:
        [fm] = [m for m in node_fusemounts(bed.kc) if m["spec"]["mountKey"] == bed.key]
        reason = (fm.get("status") or {}).get("reason") or ""
        return fm if f"{APPS}/optout" in reason else None

    fm = eventually(reported, "the FuseMount naming the pod that still shows the replaced FUSE", timeout=60)
    assert fm["status"]["phase"] == "Ready", fm["status"]
    assert "plain" not in fm["status"]["reason"]
    stale = {t.get("pod"): t.get("stale") for v in fm["status"]["volumes"] for t in v["targets"]}
    assert stale[f"{APPS}/plain"] is None
    assert "HostToContainer" in stale[f"{APPS}/optout"]
    wide = ok(kubectl_fluid(bed.kc, "mounts", "--node", NODE, "-o", "wide"))
    assert f"pod {APPS}/optout still shows the FUSE that was replaced" in wide, wide
    listed: dict[str, Any] = get(
        bed.kc, "-n", APPS, "events", "--field-selector", "involvedObject.name=optout"
    )
    events = listed["items"]
    assert [e["message"] for e in events if e["reason"] == "FuseRemountNotSeen"], events

    # Deleting the pod, as the reason says, is the way out: the report goes with its target.
    kubectl(bed.kc, "-n", APPS, "delete", "pod", "plain", "optout")

    def reason_gone() -> bool:
        fm = next(m for m in node_fusemounts(bed.kc) if m["spec"]["mountKey"] == bed.key)
        return not (fm.get("status") or {}).get("reason")

    eventually(
        reason_gone,
        "the FuseMount's reason gone with the pod",
        timeout=60,
    )
    both_read(bed, "after the FUSE pod was deleted")


def test_both_pods_deleted_the_fuse_pod_goes_and_nothing_of_the_volume_stays_mounted(bed: Bed) -> None:
    kubectl(bed.kc, "-n", APPS, "delete", "pod", "writer", "reader")
    eventually(lambda: not fuse_pods(bed), "the FUSE pod deleted once no volume is staged", timeout=120)
    eventually(lambda: not fuse_processes(bed.node, bed.key), "no curvine-fuse of the key left", timeout=30)

    def key_mounts() -> list[str]:
        with open("/proc/self/mountinfo") as table:
            host = [line.split()[4] for line in table]
        return [p for p in host + realnodes.namespace_mounts(bed.cluster, bed.node) if bed.key in p]

    eventually(lambda: not key_mounts(), "nothing of the mount key mounted, host or node", timeout=60)


@pytest.mark.skipif(helm_binary() is None, reason=f"helm is {BUILT_BY}")
def test_helm_install_with_default_values_runs_the_same_real_curvine_fuse(bed: Bed) -> None:
    """The chart with its default values in place of the kustomize install (the same objects: a unit
    test compares them; this runs them): a volume's FUSE pod runs Curvine's curvine-fuse from
    Curvine's image on the real node, and what one pod writes the other reads."""
    # Everything of the kustomize install but the CRDs (kept, as Helm keeps them; deleting both at
    # once races the namespace's deletion against the CRDs').
    installed = [d for d in yaml.safe_load_all(kubectl(bed.kc, "kustomize", str(MANIFESTS))) if d]
    rest = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [d for d in installed if d["kind"] != "CustomResourceDefinition"],
    }
    kubectl(
        bed.kc,
        "delete",
        "-f",
        "-",
        "--wait=true",
        "--timeout=240s",
        "--ignore-not-found",
        stdin=json.dumps(rest),
    )
    release = ("--kubeconfig", str(bed.kc), "--namespace", SYSTEM)
    helm("install", "fluid", str(CHART), *release, "--create-namespace", "--wait", "--timeout", "300s")
    try:
        apply(bed, app_pod("writer", CLAIM), app_pod("reader", CLAIM))
        for name in ("writer", "reader"):
            eventually(lambda n=name: ready(get(bed.kc, "-n", APPS, "pod", n)), f"pod {name} Running", 240)  # type: ignore[misc]
        [fuse] = fuse_pods(bed)
        [container] = fuse["spec"]["containers"]
        assert f"docker.io/{container['image']}" == bed.image
        assert container["command"][0] == "/opt/curvine/curvine-fuse"
        sh(bed, "writer", "echo through-the-chart > /data/charted")
        assert sh(bed, "reader", "cat /data/charted").strip() == "through-the-chart"
        kubectl(bed.kc, "-n", APPS, "delete", "pod", "writer", "reader", "--wait=true")
        eventually(lambda: not fuse_pods(bed), "the FUSE pod gone with the pods", timeout=120)
    finally:
        helm("uninstall", "fluid", *release, "--wait", "--timeout", "240s", check=False)


def test_zz_figures(bed: Bed) -> None:
    """The module's measurements, for the notes (not thresholds)."""
    for what, seconds in bed.figures.items():
        print(f"{what}: {seconds:.1f}s")
