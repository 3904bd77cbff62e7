"""Standalone mode: one FUSE pod per mount key on this node, created and deleted through the API.

- ``launch`` creates the pod (csi/fuse/fusepod.py) and returns once the kernel shows its FUSE mount at the
  mount key's host path; a pod that ends first, or a mount that never comes, is an error that says
  which and why (the container's termination message or reason).
- A pod left from before (same name) is reused while it runs, replaced when it has ended.
- A FUSE mount that breaks (ENOTCONN) or disappears means the pod's FUSE died: the pod is replaced
  and ``on_restart(key)`` runs, as in embedded mode. ``restartPolicy: Never`` keeps kubelet from
  restarting it on its own, behind the node service's back.
- ``stop`` deletes the pod, waits for its mount to go, and detaches whatever is left.
- Each pod's Node is its controller and a budget of its own (csi/fuse/fusebudget.py) refuses its
  eviction: ``kubectl drain`` takes the node's FUSE pods without ``--force`` and waits for the node
  service to delete them once their volumes are unstaged. Without the right to read its Node (an
  install of an older RBAC) a pod is made without its owner and said so.
- Whether a mount serves is asked through it in a thread of the key's own, as in embedded mode
  (csi/fuse/fusemanager.py: ``serving``, ``broken``): a FUSE that does not answer holds up only its
  own watcher; everything else reads the mount table, never the mount.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kr8s.asyncio

from csi.fuse import mounts
from csi.fuse.fusebudget import fuse_pod_budget
from csi.fuse.fusemanager import FuseError, _notify, broken, is_fuse_mount, serving
from csi.fuse.fusepod import fuse_pod
from csi.fuse.fuserunner import FuseHandle
from csi.keyedthreads import DEFAULT_DEADLINE, KeyedThreads
from csi.model.fusepodparams import PodSettings, pod_resources, priority_class
from kubectl_fluid.api import names
from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import NODES, POD_DISRUPTION_BUDGETS, PODS

# The name it logged under before csi/ had sub-packages: log filters and tests match it.
log = logging.getLogger("csi.fusepods")

Connect = Callable[[], Awaitable[kr8s.asyncio.Api]]


@dataclass
class FusePod:
    key: str
    name: str
    argv: list[str]
    mnt_path: str
    settings: PodSettings = ()
    stopping: bool = False
    restarts: int = 0
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)


class FusePodManager:
    def __init__(
        self,
        node: str,
        connect: Connect,
        image: str,
        on_restart: Callable[[str], None] | None = None,
        *,
        env: Sequence[tuple[str, str]] = (),
        host_paths: Sequence[str] = (),
        resources: Mapping[str, Any] | None = None,
        priority_class: str | None = None,
        poll: float = 0.5,
        start_timeout: float = 180.0,  # an image pull on a fresh node
        stop_timeout: float = 60.0,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        self.node, self.connect, self.image = node, connect, image
        self.env, self.host_paths = tuple(env), tuple(host_paths)
        # Every FUSE pod's resources and priority unless its StorageClass says otherwise.
        self.resources: Mapping[str, Any] = resources or {}
        self.priority_class = priority_class
        self.on_restart = on_restart
        self.poll, self.start_timeout, self.stop_timeout = poll, start_timeout, stop_timeout
        self.pods: dict[str, FusePod] = {}
        self.starts = 0
        self.threads = KeyedThreads(deadline, "fluid-csi-fuse")
        self._client: kr8s.asyncio.Api | None = None
        # The Node's uid, once read ("" when it could not be: its pods then go without an owner).
        self._node_uid: str | None = None

    async def _api(self) -> kr8s.asyncio.Api:
        if self._client is None:
            self._client = await self.connect()
        return self._client

    # ------------------------------------------------------------------ FuseRunner

    def running(self, key: str) -> bool:
        return key in self.pods

    def handle(self, key: str) -> FuseHandle | None:
        pod = self.pods.get(key)
        return None if pod is None else FuseHandle(pod_name=pod.name)

    async def launch(
        self,
        key: str,
        argv: list[str],
        mnt_path: str,
        settings: PodSettings = (),
        spawned: Callable[[FuseHandle], None] | None = None,
    ) -> FuseHandle:
        if key in self.pods:
            return FuseHandle(pod_name=self.pods[key].name)
        pod = FusePod(key, names.fuse_pod_name(self.node, key), argv, mnt_path, settings)
        try:
            await self._launch(pod)
        except BaseException:
            # Failed, timed out or cancelled (kubelet gave up on the call): the pod exists and would
            # mount later at a path nothing tracks. Delete it; a retried NodeStage creates it again.
            with contextlib.suppress(Exception):
                await self._delete(pod.name)
            raise
        self.pods[key] = pod
        pod.watcher = asyncio.create_task(self._watch(pod))
        return FuseHandle(pod_name=pod.name)

    async def takeover(
        self, key: str, argv: list[str], mnt_path: str, handle: FuseHandle, settings: PodSettings = ()
    ) -> bool:
        if not handle.pod_name or not await serving(self.threads, key, mnt_path):
            self.threads.forget(key)
            return False
        pod = FusePod(key, handle.pod_name, argv, mnt_path, settings)
        self.pods[key] = pod
        pod.watcher = asyncio.create_task(self._watch(pod))
        log.info("adopted FUSE pod", extra={"mount_key": key, "pod": pod.name})
        return True

    async def stop(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            # Not adopted (its mount was already gone), yet its pod may still exist: delete it by name.
            with contextlib.suppress(Exception):
                await self._delete(names.fuse_pod_name(self.node, key))
            self.threads.forget(key)
            return
        pod.stopping = True
        if pod.watcher is not None:
            pod.watcher.cancel()
            # Whatever ended the watcher, stopping must still delete the pod and its mount.
            with contextlib.suppress(BaseException):
                await pod.watcher
        await self._delete(pod.name)
        deadline = time.monotonic() + self.stop_timeout
        while is_fuse_mount(pod.mnt_path) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if mounts.mounted_at(pod.mnt_path):
            with contextlib.suppress(mounts.MountError):
                mounts.unmount(pod.mnt_path, lazy=True)  # asks nothing of the FUSE server
        self.threads.forget(key)
        log.info("stopped FUSE pod", extra={"mount_key": key, "pod": pod.name})

    async def close(self) -> None:
        for pod in self.pods.values():
            if pod.watcher is not None:
                pod.watcher.cancel()
        await asyncio.gather(*(p.watcher for p in self.pods.values() if p.watcher), return_exceptions=True)

    # ------------------------------------------------------------------ pods

    def pod_body(
        self,
        key: str,
        argv: list[str],
        mnt_path: str,
        settings: PodSettings = (),
        node_uid: str | None = None,
    ) -> dict[str, Any]:
        """The FUSE pod of ``key`` as this manager creates it: the node's resources and priority with
        what its StorageClass sets (``settings``), its Node as owner when ``node_uid`` is known."""
        return fuse_pod(
            self.node, key, argv, mnt_path, self.image, env=self.env, host_paths=self.host_paths,
            resources=pod_resources(self.resources, settings),
            priority_class=priority_class(self.priority_class, settings),
            node_uid=node_uid,
        )  # fmt: skip

    async def _owner_uid(self) -> str | None:
        if self._node_uid is None:
            try:
                node = await http.get(await self._api(), NODES.object_path(None, self.node))
            except http.ApiError as err:
                node = None
                log.warning(
                    "cannot read Node %s (%s): FUSE pods are made without their Node as owner, and "
                    "`kubectl drain` refuses them without --force; give the node service get on nodes",
                    self.node,
                    err,
                )
            self._node_uid = str(node["metadata"]["uid"]) if node else ""
        return self._node_uid or None

    async def _keep_from_eviction(self, key: str, pod: dict[str, Any]) -> None:
        """The pod's budget (fusebudget.py), applied: a pod left from before gets it too. Not having it
        costs only what a drain does to the FUSE, so a refusal is said and not raised."""
        body = fuse_pod_budget(self.node, key, str(pod["metadata"]["uid"]))
        path = POD_DISRUPTION_BUDGETS.object_path(names.FLUID_NAMESPACE, body["metadata"]["name"])
        params = {"fieldManager": names.CSI_NODE_FIELD_MANAGER, "force": "true"}
        try:
            await http.request(
                await self._api(), "PATCH", path, params=params, body=body, content_type=http.APPLY_PATCH
            )
        except http.ApiError as err:
            log.warning(
                "no disruption budget for FUSE pod %s (%s): a drain evicts it with the applications",
                body["metadata"]["name"],
                err,
                extra={"mount_key": key},
            )

    async def _launch(self, pod: FusePod) -> None:
        # Whatever is there but a serving FUSE (a dead one's remains, a stray bind) would hide the
        # new pod's mount.
        if mounts.mounted_at(pod.mnt_path) and not await serving(self.threads, pod.key, pod.mnt_path):
            with contextlib.suppress(mounts.MountError):
                mounts.unmount(pod.mnt_path, lazy=True)
        created = await self._create(
            self.pod_body(pod.key, pod.argv, pod.mnt_path, pod.settings, await self._owner_uid())
        )
        await self._keep_from_eviction(pod.key, created)
        self.starts += 1
        deadline = time.monotonic() + self.start_timeout
        next_check = 0.0
        while not is_fuse_mount(pod.mnt_path):
            now = time.monotonic()
            if now > deadline:
                raise FuseError(
                    f"FUSE pod {names.FLUID_NAMESPACE}/{pod.name} did not mount {pod.mnt_path} within "
                    f"{self.start_timeout:.0f}s: check the pod's events and logs"
                )
            if now >= next_check:
                next_check = now + 1.0
                ended = _ended(
                    await http.get(await self._api(), PODS.object_path(names.FLUID_NAMESPACE, pod.name))
                )
                if ended:
                    raise FuseError(
                        f"FUSE pod {names.FLUID_NAMESPACE}/{pod.name} ended before mounting: {ended}"
                    )
            await asyncio.sleep(0.05)
        log.info("started FUSE pod", extra={"mount_key": pod.key, "pod": pod.name, "mnt_path": pod.mnt_path})

    async def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        """The pod as the server holds it: the one created, or one left from before that still runs."""
        api = await self._api()
        name = body["metadata"]["name"]
        path = PODS.object_path(names.FLUID_NAMESPACE, name)
        for _ in range(3):
            try:
                created: dict[str, Any] = await http.request(
                    api, "POST", PODS.collection_path(names.FLUID_NAMESPACE), body=body
                )
                return created
            except http.ApiError as err:
                if err.code != 409:
                    raise FuseError(f"cannot create FUSE pod {names.FLUID_NAMESPACE}/{name}: {err}") from err
            existing = await http.get(api, path)
            if (
                existing is not None
                and not existing["metadata"].get("deletionTimestamp")
                and not _ended(existing)
            ):
                return existing  # left by an earlier node service and still running: it is ours
            if existing is not None:
                await self._delete(name)
        raise FuseError(f"FUSE pod {names.FLUID_NAMESPACE}/{name} keeps coming back; delete it and retry")

    async def _delete(self, name: str) -> None:
        """Delete the pod and wait until its name is free (so a replacement can be created)."""
        api = await self._api()
        path = PODS.object_path(names.FLUID_NAMESPACE, name)
        with contextlib.suppress(http.ApiError):
            await http.request(api, "DELETE", path)
        deadline = time.monotonic() + self.stop_timeout
        while time.monotonic() < deadline:
            if await http.get(api, path) is None:
                return
            await asyncio.sleep(0.2)
        log.warning("FUSE pod still terminating", extra={"pod": name})

    async def _why_ended(self, name: str, wait: float = 2.0) -> str:
        """Why the pod's container ended (``exit code 137: OOMKilled``), asked before the pod is
        deleted and its status with it; the kubelet reports it a moment after the mount died, so
        this waits up to ``wait`` seconds for it (empty if the container still runs)."""
        api = await self._api()
        deadline = time.monotonic() + wait
        while True:
            ended = _ended(await http.get(api, PODS.object_path(names.FLUID_NAMESPACE, name)))
            if ended or time.monotonic() >= deadline:
                return ended
            await asyncio.sleep(0.2)

    async def _watch(self, pod: FusePod) -> None:
        while True:
            while is_fuse_mount(pod.mnt_path) and not await broken(self.threads, pod.key, pod.mnt_path):
                await asyncio.sleep(self.poll)
            if pod.stopping:
                return
            pod.restarts += 1
            try:
                why = await self._why_ended(pod.name)
                log.warning(
                    "FUSE pod %s's mount died (%s); replacing the pod",
                    pod.name,
                    why or "its container still runs",
                    extra={"mount_key": pod.key, "pod": pod.name},
                )
                await self._delete(pod.name)
                await self._launch(pod)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                # The API server away, a bind that failed...: the watcher must outlive it, or the
                # mount stays broken and nothing replaces the pod again.
                log.error("replacing FUSE pod of mount key %s failed: %s; retrying", pod.key, e)
                await asyncio.sleep(min(30.0, 0.5 * 2**pod.restarts))
                continue
            _notify(self.on_restart, pod.key)


def _ended(pod: dict[str, Any] | None) -> str:
    """Why ``pod`` is over (empty while it may still mount): gone, Failed or Succeeded with the
    container's own termination message or reason."""
    if pod is None:
        return "the pod was deleted"
    status = pod.get("status", {})
    if status.get("phase") not in ("Failed", "Succeeded"):
        return ""
    for container in status.get("containerStatuses", []):
        done = container.get("state", {}).get("terminated")
        if done:
            detail = done.get("message") or done.get("reason") or ""
            return f"exit code {done.get('exitCode')}: {detail}".strip(": ")
    return f"phase {status['phase']}: {status.get('message') or status.get('reason') or 'no reason given'}"
