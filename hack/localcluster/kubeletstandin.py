"""A kubelet stand-in for the local cluster's kwok nodes: the CSI calls kubelet would make.

kwok turns pods Running without a kubelet, so nothing would call the node service. This process
watches pods, PVCs and PVs, and for the pods on the nodes it serves that use PVs of our driver it
makes kubelet's calls to that node's node service: NodeStage then NodePublish when a pod arrives,
NodeUnpublish when it goes, NodeUnstage when no pod on the node uses the volume any more. It also
runs the containers of the node services' standalone FUSE pods (the image is ignored: the command
runs as a local process), since those are the only pods here whose containers must really run.

Like kubelet, it keeps no state of its own: what is staged and published is read back from the
``vol_data.json`` records it writes beside each staging and publish directory (kubelet's own layout),
written only after a call succeeded, removed only after the undoing call succeeded. So a restart
of the stand-in, or of a node service, converges again. A failed call is retried on every pass and
reported on the pod as a ``FailedMount`` Warning Event, kubelet's wording.

    PYTHONPATH=hack python -m localcluster.kubeletstandin \
        --kubeconfig K --node NAME=SOCKET=KUBELET_ROOT [--node ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc

from csi.proto import csi_pb2, csi_pb2_grpc
from kubectl_fluid import logs
from kubectl_fluid.api import names
from kubectl_fluid.kube import client, http, resources
from kubectl_fluid.kube.watchcache import WatchCache
from localcluster.kubelet_volumes import Publication, plan, pod_running_here, wanted

log = logging.getLogger("kubelet-standin")
VOL_DATA = "vol_data.json"
COMPONENT = "kubelet-standin"


@dataclass
class Node:
    name: str
    socket: str
    kubelet_root: Path
    stub: csi_pb2_grpc.NodeAsyncStub | None = None  # the stubs file types the aio variant only

    @property
    def plugins_root(self) -> str:
        return str(self.kubelet_root / "plugins")

    def staging_path(self, handle: str) -> Path:
        return Path(names.csi_staging_path(handle, self.plugins_root))

    def target_path(self, pod_uid: str, pv: str) -> Path:
        return Path(names.csi_publish_target(pod_uid, pv, str(self.kubelet_root)))

    def staged(self) -> dict[str, bool]:
        """Volume handle → whether its NodeStage was seen to succeed."""
        driver_dir = Path(self.plugins_root) / "kubernetes.io" / "csi" / names.CSI_DRIVER
        return dict(_read_record(record) for record in driver_dir.glob(f"*/{VOL_DATA}"))

    def published(self) -> dict[tuple[str, str, str], tuple[str, bool]]:
        """(node, pod uid, pv) → (volume handle, whether its NodePublish was seen to succeed)."""
        found: dict[tuple[str, str, str], tuple[str, bool]] = {}
        for record in (self.kubelet_root / "pods").glob(f"*/volumes/kubernetes.io~csi/*/{VOL_DATA}"):
            pv_dir = record.parent
            pod_uid = pv_dir.parent.parent.parent.name
            found[(self.name, pod_uid, pv_dir.name)] = _read_record(record)
        return found


def _read_record(record: Path) -> tuple[str, bool]:
    data = json.loads(record.read_text())
    return str(data["volumeHandle"]), bool(data.get("confirmed", True))


def _write_record(directory: Path, handle: str, pv: str | None = None, *, confirmed: bool) -> None:
    """Written before the call (unconfirmed: it may have happened) and again after it succeeded, as
    kubelet does: a call whose answer was lost is still known, retried while wanted and undone after."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "driverName": names.CSI_DRIVER,
        "volumeHandle": handle,
        "confirmed": confirmed,
        **({"specVolID": pv} if pv else {}),
    }
    tmp = directory / f".{VOL_DATA}.tmp"
    tmp.write_text(json.dumps(data))
    os.replace(tmp, directory / VOL_DATA)


def _capability(pub: Publication) -> csi_pb2.VolumeCapability:
    mode = csi_pb2.VolumeCapability.AccessMode.Mode.Value(pub.access_mode)
    return csi_pb2.VolumeCapability(
        mount=csi_pb2.VolumeCapability.MountVolume(),
        access_mode=csi_pb2.VolumeCapability.AccessMode(mode=mode),
    )


class Standin:
    def __init__(self, api: Any, nodes: list[Node], resync: float) -> None:
        self.api = api
        self.nodes = {node.name: node for node in nodes}
        self.resync = resync
        self.pods = WatchCache(api, resources.PODS)
        self.pvcs = WatchCache(api, resources.PERSISTENT_VOLUME_CLAIMS)
        self.pvs = WatchCache(api, resources.PERSISTENT_VOLUMES)
        self.wake = asyncio.Event()
        # FUSE pods run from their own loop: a NodeStage in standalone mode waits for the very FUSE
        # pod this process must start, so the volume loop cannot be what starts it.
        self.wake_fuse = asyncio.Event()
        # (pod uid, pv) → the last failure reported on the pod, so a retry that fails the same way
        # does not post the same Event every pass.
        self.reported: dict[tuple[str, str], str] = {}
        self.fuse_containers: dict[str, subprocess.Popen[bytes]] = {}  # by pod uid
        for cache in (self.pods, self.pvcs, self.pvs):
            cache.add_handler(self._changed)

    async def run(self) -> None:
        for node in self.nodes.values():
            node.stub = csi_pb2_grpc.NodeStub(grpc.aio.insecure_channel(f"unix://{node.socket}"))
        tasks = [asyncio.create_task(cache.run()) for cache in (self.pods, self.pvcs, self.pvs)]
        try:
            for cache in (self.pods, self.pvcs, self.pvs):
                await cache.synced.wait()
            log.info("serving nodes %s", ", ".join(sorted(self.nodes)))
            tasks.append(asyncio.create_task(self._fuse_pod_loop()))
            print("ready", flush=True)
            while True:
                self.wake.clear()
                await self.reconcile()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), self.resync)
        finally:
            for task in tasks:
                task.cancel()
            for uid in list(self.fuse_containers):
                self._kill_container(uid)

    def _changed(self, _event: str, _obj: dict[str, Any]) -> None:
        self.wake.set()
        self.wake_fuse.set()

    async def _fuse_pod_loop(self) -> None:
        while True:
            self.wake_fuse.clear()
            self.run_fuse_pods()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake_fuse.wait(), self.resync)

    def _on_disk(
        self,
    ) -> tuple[dict[tuple[str, str, str], str], set[tuple[str, str]], set[tuple[str, ...]]]:
        """What the records say is published and staged, and which of those calls are unconfirmed."""
        published: dict[tuple[str, str, str], str] = {}
        staged: set[tuple[str, str]] = set()
        unsure: set[tuple[str, ...]] = set()
        for node in self.nodes.values():
            for key, (handle, confirmed) in node.published().items():
                published[key] = handle
                if not confirmed:
                    unsure.add(key)
            for handle, confirmed in node.staged().items():
                staged.add((node.name, handle))
                if not confirmed:
                    unsure.add((node.name, handle))
        return published, staged, unsure

    async def reconcile(self) -> None:
        want = wanted(
            self.pods.items(),
            {(ns, name): o for o in self.pvcs.items() for ns, name in [_key(o)]},
            {o["metadata"]["name"]: o for o in self.pvs.items()},
            self.nodes,
        )
        published, staged, unsure = self._on_disk()
        todo = plan(want, published, staged, unsure=unsure)
        failed_stage: set[tuple[str, str]] = set()
        for pub in todo.stage:
            if not await self._call(pub, "MountVolume.MountDevice", self._stage(pub)):
                failed_stage.add((pub.node, pub.volume_handle))
        for pub in todo.publish:
            if (pub.node, pub.volume_handle) not in failed_stage:
                await self._call(pub, "MountVolume.SetUp", self._publish(pub))
        still_published: set[tuple[str, str]] = set()
        for key in todo.unpublish:
            if not await self._quiet(self._unpublish(key, published[key])):
                still_published.add((key[0], published[key]))
        for node_name, handle in todo.unstage:
            if (node_name, handle) not in still_published:
                await self._quiet(self._unstage(self.nodes[node_name], handle))

    def run_fuse_pods(self) -> None:
        want = {
            pod["metadata"]["uid"]: pod
            for pod in self.pods.items(names.FLUID_NAMESPACE)
            if pod["metadata"].get("labels", {}).get(names.LABEL_APP_COMPONENT) == names.FUSE_POD_COMPONENT
            and pod_running_here(pod, self.nodes)
        }
        for uid in [uid for uid in self.fuse_containers if uid not in want]:
            self._kill_container(uid)
        for uid, pod in want.items():
            if uid in self.fuse_containers:
                continue  # restartPolicy Never: an exited container stays exited
            container = pod["spec"]["containers"][0]
            argv = [*container.get("command", []), *container.get("args", [])]
            env = {**os.environ, **{e["name"]: e.get("value", "") for e in container.get("env", [])}}
            self.fuse_containers[uid] = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, start_new_session=True
            )
            log.info("started FUSE pod %s's container", pod["metadata"]["name"])

    def _kill_container(self, uid: str) -> None:
        proc = self.fuse_containers.pop(uid)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.info("stopped a FUSE pod's container (pid %d)", proc.pid)

    async def _call(self, pub: Publication, what: str, call: Any) -> bool:
        try:
            await call
        except grpc.aio.AioRpcError as err:
            message = (
                f'{what} failed for volume "{pub.pv}" : rpc error: code = {_go_code(err.code())} '
                f"desc = {err.details()}"
            )
            log.warning("%s/%s: %s", pub.pod_namespace, pub.pod_name, message)
            if self.reported.get((pub.pod_uid, pub.pv)) != message:
                self.reported[(pub.pod_uid, pub.pv)] = message
                await self._event(pub, message)
            return False
        self.reported.pop((pub.pod_uid, pub.pv), None)
        return True

    async def _quiet(self, call: Any) -> bool:
        try:
            await call
        except grpc.aio.AioRpcError as err:
            log.warning("%s: %s", err.code().name, err.details())
            return False
        return True

    async def _stage(self, pub: Publication) -> None:
        node = self.nodes[pub.node]
        assert node.stub is not None
        staging = node.staging_path(pub.volume_handle)
        staging.mkdir(parents=True, exist_ok=True)
        _write_record(staging.parent, pub.volume_handle, confirmed=False)
        await node.stub.NodeStageVolume(
            csi_pb2.NodeStageVolumeRequest(
                volume_id=pub.volume_handle,
                staging_target_path=str(staging),
                volume_capability=_capability(pub),
                volume_context=dict(pub.attributes),
            )
        )
        _write_record(staging.parent, pub.volume_handle, confirmed=True)
        log.info("staged %s on %s", pub.volume_handle, pub.node)

    async def _publish(self, pub: Publication) -> None:
        node = self.nodes[pub.node]
        assert node.stub is not None
        target = node.target_path(pub.pod_uid, pub.pv)
        _write_record(target.parent, pub.volume_handle, pub.pv, confirmed=False)
        await node.stub.NodePublishVolume(
            csi_pb2.NodePublishVolumeRequest(
                volume_id=pub.volume_handle,
                staging_target_path=str(node.staging_path(pub.volume_handle)),
                target_path=str(target),
                volume_capability=_capability(pub),
                readonly=pub.readonly,
                volume_context={**dict(pub.attributes), **pub.pod_info()},
            )
        )
        _write_record(target.parent, pub.volume_handle, pub.pv, confirmed=True)
        log.info("published %s for pod %s/%s", pub.pv, pub.pod_namespace, pub.pod_name)

    async def _unpublish(self, key: tuple[str, str, str], handle: str) -> None:
        node_name, pod_uid, pv = key
        node = self.nodes[node_name]
        assert node.stub is not None
        target = node.target_path(pod_uid, pv)
        await node.stub.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=handle, target_path=str(target))
        )
        (target.parent / VOL_DATA).unlink(missing_ok=True)
        # Empty directories only, bottom-up: never a recursive delete, which would cross into a
        # volume still mounted below (another PV of the same pod) and delete the cache's data.
        _prune(target.parent, stop=node.kubelet_root / "pods")
        self.reported.pop((pod_uid, pv), None)
        log.info("unpublished %s of pod %s on %s", pv, pod_uid, node_name)

    async def _unstage(self, node: Node, handle: str) -> None:
        assert node.stub is not None
        staging = node.staging_path(handle)
        await node.stub.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(volume_id=handle, staging_target_path=str(staging))
        )
        (staging.parent / VOL_DATA).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            staging.rmdir()
        _prune(staging.parent, stop=staging.parent.parent)
        log.info("unstaged %s on %s", handle, node.name)

    async def _event(self, pub: Publication, message: str) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "metadata": {"generateName": f"{pub.pod_name}.", "namespace": pub.pod_namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pub.pod_name,
                "namespace": pub.pod_namespace,
                "uid": pub.pod_uid,
            },
            "reason": "FailedMount",
            "message": message,
            "type": "Warning",
            "source": {"component": COMPONENT, "host": pub.node},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            path = resources.EVENTS.collection_path(pub.pod_namespace)
            await http.request(self.api, "POST", path, body=event)
        except http.ApiError as err:
            log.warning("could not post an Event on %s/%s: %s", pub.pod_namespace, pub.pod_name, err)


def _prune(directory: Path, stop: Path) -> None:
    """Remove ``directory`` and its parents up to (not including) ``stop`` while they are empty."""
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _go_code(code: grpc.StatusCode) -> str:
    """The status code as Go's gRPC (and so kubelet's messages) spells it: ``FailedPrecondition``."""
    return "".join(word.capitalize() for word in code.name.split("_"))


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def parse_node(text: str) -> Node:
    try:
        name, socket, root = text.split("=", 2)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--node {text!r}: expected NAME=SOCKET=KUBELET_ROOT") from None
    return Node(name, socket.removeprefix("unix://"), Path(root))


async def amain(args: argparse.Namespace) -> None:
    api = await client.connect(args.kubeconfig)
    # SIGTERM (make down, the tests) ends run() through its finally: the FUSE pods' containers this
    # process started are stopped, not orphaned to serve on beside a restarted stand-in's.
    main_task = asyncio.current_task()
    assert main_task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, main_task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await Standin(api, args.node, args.resync).run()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--kubeconfig")
    p.add_argument("--node", type=parse_node, action="append", required=True, help="NAME=SOCKET=KUBELET_ROOT")
    p.add_argument("--resync", type=float, default=2.0, help="seconds between passes without events")
    p.add_argument("--log-format", choices=["json", "text"], default="text")
    args = p.parse_args(argv)
    logs.setup("info", args.log_format)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(amain(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
