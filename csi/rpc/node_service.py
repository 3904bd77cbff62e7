"""The CSI Node service: one FUSE per mount key per node, bind mounts into pods, exact refcounts.

NodeStage starts (or reuses) the FUSE of the volume's mount key and binds the volume's directory in
it at the volume's source, beside the key's mount point (kubelet's staging path stays a plain
directory: csi/model/mountkey.py says why); NodePublish binds the source at the pod's target
(read-only when asked, or when the access mode allows no writer); NodeUnpublish removes only that
target; NodeUnstage removes the source and, when it was the key's last volume, stops the FUSE. The
state file and the kernel mount table are the truth: every change a restart needs is saved before
the call returns (a mount's phase, which recovery finds again, goes with the next write), and a
restarted service recovers from them.

Saving is a group commit: a change is applied to ``self.state`` at once (``_save``) and a call
answers only once the state it leaves is on disk (``_durable``); one write, off the event loop,
serves every call waiting at that moment, so concurrent calls share fsyncs instead of queueing
behind each other's. A failed write fails every call waiting on it, and the next call writes again.
Where order matters (a FUSE must not start before the state that names it is on disk) the code
waits for the write there.

State transitions are pure (``csi.node.state``) and applied to ``self.state`` between awaits, so calls on
different keys never overwrite each other; calls on one key are serialised by a per-key lock, which
is what makes 50 concurrent stages of one key start exactly one FUSE. What a call does to the host
(lookups through a FUSE mount, which wait on its server; mount(2)) runs under that lock in the key's
own thread (csi/keyedcalls.py), never on the event loop: the loop goes on serving the other keys'
calls and the health probes meanwhile, and a FUSE restart's re-binding, the recovery and the health
check take the key's lock too, so none runs beside a call's binds.

A FUSE that stops answering (its cache's master hangs, and curvine-fuse waits rpc-timeout-ms on each
request) holds up only its own key: once that key's host work has run for ``deadline`` seconds the
call answers DEADLINE_EXCEEDED, naming the key, the mount and what to do, and the FuseMount says
Broken and why; the work goes on and finishes when the FUSE answers. Until then the key's other
calls answer ABORTED at once, and the recovery and the health check mark it Broken and go on with
the other keys. Nothing that can reach a FUSE runs on the event loop: the mount table is read from
/proc/self/mountinfo (never by looking the path up), and umount(2) asks no FUSE server.

Before a FUSE of a key starts, its configuration file is written beside the key's mount point
(csi/fuse/fuseconfig.py: the node's FUSE settings with the volume's masters) and, when the program is
installed here, ``validate-config`` checks it with the very flags (csi/fuse/fusevalidate.py) beside
the FUSE's start; a refusal stops that FUSE and is FAILED_PRECONDITION with curvine-fuse's own words.
The file goes with the key's mount point.

With ``--log-level debug``, NodeStage and NodePublish log where their time went, step by step
(``_logged_steps``, kubectl_fluid/spans.py); the bench reads the same lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from csi.fuse import beneath, fusevalidate, mounts
from csi.fuse.clientfuse import ClientFuse
from csi.fuse.fusebinary import fuse_binary_problem
from csi.fuse.fuseconfig import fuse_config, write_fuse_config
from csi.fuse.fusemanager import FuseManager
from csi.fuse.fuserunner import FuseHandle, FuseRunner
from csi.keyedcalls import KeyedCalls, KeyHung
from csi.keyedthreads import DEFAULT_DEADLINE, Stuck
from csi.model.clientvolume import CLIENT_PARAMS, ClientVolume, is_client_volume, parse_client_context
from csi.model.errors import FuseUnavailable
from csi.model.fusecmd import fuse_argv
from csi.model.mountkey import fuse_mount_dir, mount_key, volume_dir, volume_source, volumes_dir
from csi.model.propagation import TargetRef
from csi.model.volumes import ContextVolume, parse_volume_context, reader_only_context
from csi.node import brokenreasons, statefile
from csi.node import state as st
from csi.proto import csi_pb2, csi_pb2_grpc
from csi.rpc.capabilities import reader_only
from csi.rpc.rpcerrors import Context, RpcFailure, required, rpc
from kubectl_fluid import spans
from kubectl_fluid.api import names
from kubectl_fluid.api.fusemount import FuseMountPhase

# The name it logged under before csi/ had sub-packages: log filters and tests match it.
log = logging.getLogger("csi.node_service")

POD_UID_KEY = "csi.storage.k8s.io/pod.uid"
POD_NAME_KEY = "csi.storage.k8s.io/pod.name"
POD_NAMESPACE_KEY = "csi.storage.k8s.io/pod.namespace"
# Inside --state-dir: each embedded FUSE's output, {mount-key}.log.
FUSE_LOG_DIR = "fuse-logs"

# The steps of NodeStage and NodePublish their debug lines name (kubectl_fluid/spans.py).
STEP_BIND = "volume bound"
STEP_STATE = "state written"

_T = TypeVar("_T")
# What a path shows: its (device, inode).
Identity = tuple[int, int]


class NodeService(csi_pb2_grpc.NodeServicer):
    def __init__(
        self,
        node_id: str,
        state_dir: str,
        mount_root: str,
        fuse_command: list[str],
        *,
        mode: names.MountMode = "embedded",
        mirror: Callable[[st.NodeState], None] | None = None,
        fuse: FuseRunner | None = None,
        fuse_settings: Mapping[str, Any] | None = None,
        deadline: float = DEFAULT_DEADLINE,
        propagation: Callable[[Sequence[TargetRef]], Awaitable[Mapping[str, str]]] | None = None,
        clients: ClientFuse | None = None,
    ) -> None:
        self.node_id = node_id
        self.state_path = Path(state_dir) / names.CSI_STATE_FILE
        self.mount_root = mount_root
        self.fuse_command = fuse_command  # argv prefix: the binary, or an interpreter and a module
        self.mode = mode
        # What every FUSE on this node needs in its configuration file (--fuse-config).
        self.fuse_settings: Mapping[str, Any] = fuse_settings or {}
        self.state = statefile.load(self.state_path)
        # Embedded unless told otherwise: a supervised child per mount key, its output kept per key.
        log_dir = str(Path(state_dir) / FUSE_LOG_DIR)
        self.fuse: FuseRunner = fuse if fuse is not None else FuseManager(log_dir=log_dir, deadline=deadline)
        self.fuse.on_restart = self._on_fuse_restart
        # Client mode (SPEC §7): the runtime's client pod is the FUSE; this labels, waits, watches.
        self.clients = clients if clients is not None else ClientFuse(None)
        self.clients.on_restart = self._on_fuse_restart
        # Per mount key: its lock, its host thread, its deadline. Work that outlives its call
        # (a FUSE that answered late) is saved once it ends.
        self.calls = KeyedCalls(deadline, late=self._durable_soon)
        # A volume's source (csi/model/mountkey.py: volume_source) -> (device, inode) of the volume
        # directory it was last seen showing: a publish that finds it still so needs no walk through
        # the FUSE mount (each walk is a round trip per path component to the FUSE server).
        self._sources: dict[str, Identity] = {}
        # Group commit: versions of self.state applied, wanted on disk before calls answer, on disk.
        self._version = self._needed = self._written = 0
        self._writing = asyncio.Lock()
        # The writes' own thread: a write must never wait behind host work, which can wait on a
        # slow FUSE server.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fluid-csi-state")
        self._background: set[asyncio.Task[None]] = set()
        # Asked, after a FUSE was replaced and its targets bound again, which pods do not see it
        # (csi/node/propagation.py); None: nobody asks (no API server, as under csi-sanity).
        self.propagation = propagation
        # Told every saved state (the FuseMount publisher); must return at once.
        self.mirror = mirror
        if mirror is not None:
            mirror(self.state)

    # ------------------------------------------------------------------ helpers

    def _save(self, new: st.NodeState, *, durable: bool = True) -> None:
        """Apply ``new``; it reaches the disk with the next write. Not ``durable``: a change a
        restarted service derives again (a mount's phase, which recovery sets from what it finds),
        which no call waits for: it goes with the next write, at the latest the health check's."""
        if new is not self.state:
            self.state = new
            self._version += 1
            if durable:
                self._needed = self._version
            if self.mirror is not None:
                self.mirror(new)

    async def _durable(self, *, every: bool = False) -> None:
        """Return once the state as it is now is on disk (``every``: its changes that are not
        ``durable`` too)."""
        wanted = self._version if every else self._needed
        if self._written >= wanted:
            return
        async with self._writing:
            if self._written >= wanted:
                return  # a write that started after our change has finished
            version, state = self._version, self.state
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._writer, statefile.save_atomic, self.state_path, state)
            self._written = version

    def _durable_soon(self) -> None:
        """For changes made outside a call (a FUSE restarted by its supervisor)."""
        self._soon(self._durable())

    def _soon(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _argv(self, entry: st.MountEntry) -> list[str]:
        argv = fuse_argv(self.fuse_command[0], entry.params, entry.mnt_path)
        return [*self.fuse_command, *argv[1:]]

    def _source(self, entry: st.MountEntry, volume_id: str) -> str:
        """Where a volume of ``entry`` is bound for its pods' binds: beside the key's mount point, or,
        for a client's mount (not in this service's tree), beside where its mount point would be."""
        if entry.client is not None:
            return volume_source(fuse_mount_dir(self.mount_root, entry.key), volume_id)
        return volume_source(entry.mnt_path, volume_id)

    async def _ensure_fuse(self, key: str) -> None:
        entry = self.state.mounts[key]
        if entry.client is not None:
            if not self.clients.running(key):
                await self._durable()  # recorded before its client is labelled, so a restart finds it
                pod = await self.clients.attach(key, _client_volume(entry))
                self._save(st.set_process(self.state, key, pod_name=pod))
            return
        if self.fuse.running(key) or await self._takeover(entry):
            return
        await self._launch(entry)

    async def _takeover(self, entry: st.MountEntry) -> bool:
        known = FuseHandle(pid=entry.pid, pod_name=entry.pod_name, start_time=entry.pid_start_time)
        return await self.fuse.takeover(entry.key, self._argv(entry), entry.mnt_path, known, entry.params.pod)

    async def _launch(self, entry: st.MountEntry) -> None:
        """Start the FUSE of ``entry`` once the state that names it is on disk (a restarted service
        finds it), ``validate-config`` checking its configuration file and flags beside the FUSE's
        own start: a refusal stops the FUSE (when it mounted first) and fails the call in
        curvine-fuse's words; an acceptance costs nothing beyond the start."""
        argv = self._argv(entry)
        text = fuse_config(entry.params, self.fuse_settings)
        recording = asyncio.ensure_future(self._durable_step("state written before the FUSE"))
        try:
            with spans.step("config file written"):
                await asyncio.to_thread(write_fuse_config, names.fuse_config_path(entry.mnt_path), text)
        except BaseException:
            await _cancelled(recording)
            raise
        validating = None
        if fuse_binary_problem(self.fuse_command[0]) is None:
            validating = asyncio.ensure_future(self._validate(argv[len(self.fuse_command) :]))
        try:
            await recording
        except BaseException:
            await _cancelled(validating)
            raise

        def spawned(handle: FuseHandle) -> None:
            # On disk while the FUSE mounts, not after: the call's last write is then done.
            self._save(_record_process(self.state, entry.key, handle))
            self._soon(self._durable_step("state written while the FUSE mounts"))

        launching = asyncio.ensure_future(
            self.fuse.launch(entry.key, argv, entry.mnt_path, entry.params.pod, spawned)
        )
        try:
            refused = None if validating is None else await validating
        except BaseException:
            await _cancelled(launching)
            raise
        if refused is not None:
            await _cancelled(launching)
            await self.fuse.stop(entry.key)  # it mounted before the refusal came
            raise FuseUnavailable(
                f"{self.fuse_command[-1]} refuses the FUSE of mount key {entry.key} "
                f"({entry.params.master_addrs}, {entry.params.fs_path}): {refused}; fix the "
                "StorageClass's tuning parameters or the node's --fuse-config"
            )
        handle = await launching
        self._save(_record_process(self.state, entry.key, handle))

    async def _durable_step(self, name: str) -> None:
        with spans.step(name):
            await self._durable()

    async def _validate(self, args: list[str]) -> str | None:
        with spans.step("validate-config"):
            return await fusevalidate.refusal(self.fuse_command, args)

    def _on_fuse_restart(self, key: str) -> None:
        """A restarted FUSE is a new mount: binds into the old one are dead, make them again."""
        entry = self.state.mounts.get(key)
        if entry is None:
            return
        handle = self.fuse.handle(key)
        if handle is not None:
            self._save(_record_process(self.state, key, handle))
            self._durable_soon()
        self._soon(self._rebind_key(key))

    async def _rebind_key(self, key: str) -> None:
        async def rebind() -> None:
            entry = self.state.mounts.get(key)
            if entry is None:
                return  # unstaged meanwhile
            try:
                whole = await self.calls.host(key, "re-binding its volumes", self._rebind, entry)
            except Exception:
                log.exception("re-binding after a FUSE restart failed", extra={"mount_key": key})
                whole = False
            self._save(st.set_phase(self.state, key, "Ready" if whole else "Broken", now=st.timestamp()))
            self._soon(self._check_propagation(key, _published(entry)))

        await self._on_key(key, rebind)
        await self._durable()

    async def _check_propagation(self, key: str, targets: list[TargetRef]) -> None:
        """Mark the targets, bound before the FUSE was replaced, whose pods' containers cannot see
        the new mount (the FuseMount's reason, an Event on the pod)."""
        if self.propagation is None or not targets:
            return
        marks = await self.propagation(targets)
        if marks:
            self._save(st.mark_stale(self.state, key, marks))
            await self._durable()

    async def _on_key(self, key: str, work: Callable[[], Awaitable[None]]) -> None:
        """Background work on a key (recovery, health, re-binding after a restart): a key that does
        not answer is marked Broken, saying why, and its work finishes when the FUSE answers."""
        try:
            await self.calls.run(key, work)
        except KeyHung as hung:
            self._broken_by(hung.stuck)

    async def _call(self, key: str, work: Callable[[], Awaitable[_T]]) -> _T:
        """A CSI call's work on ``key`` (csi/keyedcalls.py): a FUSE that does not answer ends the
        call with DEADLINE_EXCEEDED (its work goes on) or, when another call's work is the one
        stuck, ABORTED without trying; either says which mount, what hung and what to do."""
        try:
            return await self.calls.run(key, work)
        except KeyHung as hung:
            if hung.ours:
                self._broken_by(hung.stuck)
            code = grpc.StatusCode.DEADLINE_EXCEEDED if hung.ours else grpc.StatusCode.ABORTED
            raise RpcFailure(code, self._hung_answer(hung)) from None

    def _broken_by(self, stuck: Stuck) -> None:
        self._save(
            st.set_phase(self.state, stuck.key, "Broken", now=st.timestamp(), reason=self._hung_reason(stuck))
        )
        self._durable_soon()

    def _hung_reason(self, stuck: Stuck) -> str:
        entry = self.state.mounts.get(stuck.key)
        if entry is None:
            return f"{stuck.what} has not ended for more than {self.calls.deadline:.0f} s"
        return brokenreasons.hung(entry, stuck.what, self.calls.deadline)

    def _hung_answer(self, hung: KeyHung) -> str:
        stuck = hung.stuck
        reason = self._hung_reason(stuck).replace(
            f"for more than {self.calls.deadline:.0f} s", f"for {stuck.seconds():.0f} s", 1
        )
        if hung.ours:
            then = "this call's work goes on and ends when it answers; kubelet asks again"
        else:
            then = "this call was not tried, as it would only wait behind that; kubelet asks again"
        return f"mount key {stuck.key}: {reason}. {then}"

    def _rebind(self, entry: st.MountEntry) -> bool:
        """Bind every volume's source and target of ``entry`` again where it does not show the volume's
        directory in the key's current FUSE mount (broken, gone, or a bind into an older mount). One
        that fails (its directory gone from the cache, or a symlink now) is logged and does not keep
        the others from their mounts; returns whether all are whole."""
        whole = True
        for volume_id, volume in entry.volumes.items():
            binds: list[tuple[str, str, bool]] = []
            try:
                self._bind_source(entry, volume_id)
                source = self._source(entry, volume_id)
                binds = [(source, t, p.readonly) for t, p in volume.targets.items()]
            except (RpcFailure, mounts.MountError, OSError) as err:
                whole = False
                # Its targets would only show the empty source directory: leave them unbound.
                log.error("re-binding volume %s failed: %s", volume_id, err, extra={"mount_key": entry.key})
            for source, target, readonly in binds:
                try:
                    _bind_from(source, target, readonly=readonly)
                except (mounts.MountError, OSError) as err:
                    whole = False
                    log.error("re-binding %s failed: %s", target, err, extra={"mount_key": entry.key})
        return whole

    def _bind_source(self, entry: st.MountEntry, volume_id: str) -> bool:
        """Make the volume's source (``volume_source``) show its directory in the key's FUSE mount,
        resolved beneath the mount without following symlinks; kept when it already does. Returns
        whether a bind was made. FAILED_PRECONDITION naming the path when the directory cannot be
        used."""
        volume = entry.volumes[volume_id]
        source = self._source(entry, volume_id)
        curvine_path = volume.curvine_path or entry.params.fs_path
        try:
            with spans.step("directory looked up through the FUSE"):
                fd = beneath.open_beneath(entry.mnt_path, volume_dir(entry.params.fs_path, curvine_path))
        except beneath.UnsafePath as err:
            raise _refused(curvine_path, err) from None
        try:
            directory = os.fstat(fd)
            self._sources[source] = (directory.st_dev, directory.st_ino)
            if _shows(source, self._sources[source]):
                return False
            _clear(source)
            Path(source).mkdir(parents=True, exist_ok=True)
            mounts.bind(beneath.fd_path(fd), source)
            # A bind of a private mount onto a shared one (kubelet's dir) starts a peer group of its
            # own, with its copies in other mount namespaces (the host's, a container's). Bound from
            # a source that is a peer of the FUSE mount, every target of the key would be one group:
            # a re-bind after a FUSE restart, made on one pod's target, would travel to every other
            # pod's, and unmounting any of them would take it from all.
            mounts.make_private(source)
            return True
        finally:
            os.close(fd)

    def _still_bound(self, source: str) -> Identity | None:
        """What a volume's source shows while it still shows the directory it was bound to; None
        once it does not (a dead or replaced FUSE answers an error or another device)."""
        seen = self._sources.get(source)
        if seen is None:
            return None
        try:
            now = os.lstat(source)
        except OSError:
            return None
        return seen if (now.st_dev, now.st_ino) == seen else None

    def _publish_on_host(
        self, entry: st.MountEntry, volume_id: str, staging: str, target: str, readonly: bool
    ) -> bool:
        """NodePublish's mounts: mend the volume's source if it points into a dead FUSE (kubelet does
        not stage again for a new pod), then bind it at the target. Returns whether it bound."""
        source = self._source(entry, volume_id)
        shows = self._still_bound(source)
        if shows is None:
            self._bind_source(entry, volume_id)
            shows = self._sources.get(source)
        return _bind_from(source, target, readonly=readonly, source_shows=shows)

    async def recover(self) -> None:
        """After a restart: adopt or restart every FUSE with staged volumes, re-bind what broke,
        and finish stopping keys that were on their way out. The keys side by side: one whose FUSE
        does not answer is Broken after the deadline, saying why, and holds up none of the others."""
        await asyncio.gather(
            *(self._on_key(key, self._recovering(entry)) for key, entry in list(self.state.mounts.items()))
        )
        await self._durable(every=True)

    def _recovering(self, entry: st.MountEntry) -> Callable[[], Awaitable[None]]:
        async def recover() -> None:
            try:
                await self._recover_key(entry)
            except Exception:
                # One key that cannot come back (the API server away in standalone mode...)
                # must not keep the node service from serving every other volume; the next
                # NodeStage of that key tries again.
                log.exception("recovering mount key %s failed", entry.key, extra={"mount_key": entry.key})
                self._save(st.set_phase(self.state, entry.key, "Broken", now=st.timestamp()))

        return recover

    async def _recover_key(self, entry: st.MountEntry) -> None:
        key = entry.key
        if entry.client is not None:
            await self._recover_client(entry)
            return
        if entry.refcount == 0:
            await self._takeover(entry)
            await self._stop_key(key)  # a standalone FUSE pod is deleted even when not adopted
            return
        adopted = await self._takeover(entry)
        if not adopted:
            await self._launch(entry)
        whole = await self.calls.host(key, "re-binding its volumes", self._rebind, self.state.mounts[key])
        phase: FuseMountPhase = "Ready" if whole else "Broken"
        self._save(st.set_phase(self.state, key, phase, now=st.timestamp()))
        if not adopted:  # a new FUSE: the running pods' containers hold the old one's mount
            self._soon(self._check_propagation(key, _published(entry)))

    async def _recover_client(self, entry: st.MountEntry) -> None:
        """A client's mount after a restart: watched again if it is there (else waited for, as at
        NodeStage), and the volumes bound again into it."""
        if entry.refcount == 0:
            await self._stop_key(entry.key)
            return
        if not self.clients.adopt(entry.key, entry.mnt_path):
            await self._ensure_fuse(entry.key)
        whole = await self.calls.host(
            entry.key, "re-binding its volumes", self._rebind, self.state.mounts[entry.key]
        )
        self._save(st.set_phase(self.state, entry.key, "Ready" if whole else "Broken", now=st.timestamp()))

    async def watch_health(self, interval: float = 2.0) -> None:
        """Forever: ``check_health`` every ``interval`` seconds (a task of the server's life)."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check_health()
            except Exception:
                log.exception("checking the FUSE mounts' health failed")

    async def check_health(self) -> None:
        """Mark Broken, saying why, every staged FUSE mount whose root answers ENOENT: its process
        lives and the kernel shows it, but its fs-path is gone from the cache, so every pod's I/O
        fails and a remount would only serve a new, empty directory in its place; or whose root does
        not answer within the deadline. Back to Ready once the root answers again. A dead FUSE is
        the runner's to remount, not this. The keys side by side; one a call is at work on is left
        to the next round."""
        await asyncio.gather(
            *(
                self._on_key(key, self._checking(key))
                for key in list(self.state.mounts)
                if not self.calls.busy(key)
            )
        )
        await self._durable(every=True)  # and what went with no call's write

    def _checking(self, key: str) -> Callable[[], Awaitable[None]]:
        async def check() -> None:
            entry = self.state.mounts.get(key)
            if entry is None or entry.refcount == 0 or entry.phase not in ("Ready", "Broken"):
                return
            if await self.calls.host(key, "a stat of its root", mounts.root_gone, entry.mnt_path):
                reason = brokenreasons.root_gone(entry)
                if entry.reason != reason:
                    log.error("%s", reason, extra={"mount_key": key})
                self._save(st.set_phase(self.state, key, "Broken", now=st.timestamp(), reason=reason))
                return
            entry = self.state.mounts.get(key)  # as it is now: marked Broken meanwhile if that stat hung
            if entry is None or entry.phase != "Broken" or entry.reason is None:
                return
            if await self.calls.host(key, "re-binding its volumes", self._rebind, entry):
                log.info("FUSE mount answers again", extra={"mount_key": key})
                self._save(st.set_phase(self.state, key, "Ready", now=st.timestamp()))

        return check

    # ------------------------------------------------------------------ CSI

    @rpc
    async def NodeGetCapabilities(
        self, request: csi_pb2.NodeGetCapabilitiesRequest, context: Context
    ) -> csi_pb2.NodeGetCapabilitiesResponse:
        stage = csi_pb2.NodeServiceCapability.RPC(type=csi_pb2.NodeServiceCapability.RPC.STAGE_UNSTAGE_VOLUME)
        return csi_pb2.NodeGetCapabilitiesResponse(capabilities=[csi_pb2.NodeServiceCapability(rpc=stage)])

    @rpc
    async def NodeGetVolumeStats(
        self, request: csi_pb2.NodeGetVolumeStatsRequest, context: Context
    ) -> csi_pb2.NodeGetVolumeStatsResponse:
        # Not advertised (no GET_VOLUME_STATS capability): kubelet does not call it.
        raise RpcFailure(grpc.StatusCode.UNIMPLEMENTED, "volume stats are not served by this driver")

    @rpc
    async def NodeGetInfo(
        self, request: csi_pb2.NodeGetInfoRequest, context: Context
    ) -> csi_pb2.NodeGetInfoResponse:
        return csi_pb2.NodeGetInfoResponse(node_id=self.node_id)

    @rpc
    async def NodeStageVolume(
        self, request: csi_pb2.NodeStageVolumeRequest, context: Context
    ) -> csi_pb2.NodeStageVolumeResponse:
        _require(request, "volume_id", "staging_target_path", "volume_capability")
        volume_id, staging = request.volume_id, request.staging_target_path
        t0 = time.monotonic()
        with _logged_steps("NodeStage", volume_id=volume_id) as fields:
            with spans.step("volume context read"):
                volume, key = _staged_volume(request)
            fields["mount_key"] = key
            await self._call(key, lambda: self._stage(key, volume, volume_id, staging))
            with spans.step(STEP_STATE):
                await self._durable()
        # One line per call with its duration: the time-to-first-byte bench (tests/bench/
        # bench_firstbyte.py) reads NodeStage's start and end from it, in ms, as operators can.
        log.info("staged", extra={"volume_id": volume_id, "mount_key": key, "seconds": _since(t0)})
        return csi_pb2.NodeStageVolumeResponse()

    async def _stage(
        self, key: str, volume: ContextVolume | ClientVolume, volume_id: str, staging: str
    ) -> None:
        # A repeated call (kubelet retries) finds the volume recorded: if it fails, it must
        # not take away what an earlier call staged.
        added = self.state.key_of_volume(volume_id) is None
        if isinstance(volume, ClientVolume):
            new, _ = st.stage(
                self.state,
                key,
                CLIENT_PARAMS,
                volume_id,
                staging,
                mnt_path=volume.fluid_path,
                mode=names.CLIENT_MODE,
                curvine_path=volume.sub_path,
                now=st.timestamp(),
                client=st.ClientRef(namespace=volume.namespace, name=volume.name),
            )
        else:
            new, _ = st.stage(
                self.state,
                key,
                volume.params,
                volume_id,
                staging,
                mnt_path=fuse_mount_dir(self.mount_root, key),
                mode=self.mode,
                curvine_path=volume.curvine_path,
                now=st.timestamp(),
            )
        self._save(new)  # on disk before a FUSE starts: _launch and _ensure_fuse wait for it
        bound = binding = False
        source = self._source(self.state.mounts[key], volume_id)
        try:
            await self._ensure_fuse(key)
            binding = True
            what = f"binding volume {volume_id}'s directory"
            with spans.step(STEP_BIND):
                bound = await self.calls.host(
                    key, what, self._stage_on_host, self.state.mounts[key], volume_id, staging
                )
            binding = False
            self._save(st.set_phase(self.state, key, "Ready", now=st.timestamp()), durable=False)
        except BaseException as failure:
            if added:
                # Cancelled while binding: the bind may have been made, unseen.
                if bound or (binding and isinstance(failure, asyncio.CancelledError)):
                    await self.calls.host(key, f"unbinding volume {volume_id}", _take_off_source, source)
                await self._undo_stage(key, volume_id)
                await self._durable()
            raise

    def _stage_on_host(self, entry: st.MountEntry, volume_id: str, staging: str) -> bool:
        """NodeStage's mounts: the volume's source bound; kubelet's staging path a plain directory
        (an earlier version bound the volume there: that bind is taken off)."""
        bound = self._bind_source(entry, volume_id)
        _unbind_staging(staging)
        Path(staging).mkdir(parents=True, exist_ok=True)
        return bound

    async def _undo_stage(self, key: str, volume_id: str) -> None:
        new, _, last = st.unstage(self.state, volume_id, now=st.timestamp())
        self._save(new)
        if last:
            # A client that did not mount in time keeps its label: kubelet asks again, and a label
            # taken off at each failure would delete the client pod before it could ever start.
            await self._stop_key(key, unlabel=False)

    async def _stop_key(self, key: str, *, unlabel: bool = True) -> None:
        entry = self.state.mounts.get(key)
        if entry is not None and entry.client is not None:
            # The mount is the client's: never unmounted here. The label goes as its cleanPolicy says.
            await self.clients.detach(key, entry.client.namespace, entry.client.name, unlabel=unlabel)
            await self.calls.host(
                key, "removing its sources", _remove_empty_sources, fuse_mount_dir(self.mount_root, key)
            )
            self.calls.forget(key)
            self._save(st.remove_mount(self.state, key))
            return
        await self.fuse.stop(key)
        if entry is not None:
            await self.calls.host(key, "unmounting it", _remove_mount_point, entry.mnt_path)
        self.calls.forget(key)
        self._save(st.remove_mount(self.state, key))

    @rpc
    async def NodeUnstageVolume(
        self, request: csi_pb2.NodeUnstageVolumeRequest, context: Context
    ) -> csi_pb2.NodeUnstageVolumeResponse:
        _require(request, "volume_id", "staging_target_path")
        volume_id, staging = request.volume_id, request.staging_target_path
        key = self.state.key_of_volume(volume_id)
        if key is None:
            await self._unkeyed(volume_id, f"unstaging {staging}", _unbind_staging, staging)
            await self._durable()  # a retry after a failed write must not answer before it lands
            return csi_pb2.NodeUnstageVolumeResponse()
        await self._call(key, lambda: self._unstage(key, volume_id, staging))
        await self._durable()
        return csi_pb2.NodeUnstageVolumeResponse()

    async def _unstage(self, key: str, volume_id: str, staging: str) -> None:
        source = self._source(self.state.mounts[key], volume_id)
        self._sources.pop(source, None)
        await self.calls.host(key, f"unstaging volume {volume_id}", _unstage_on_host, source, staging)
        new, key_now, last = st.unstage(self.state, volume_id, now=st.timestamp())
        self._save(new)
        if last and key_now is not None:
            await self._stop_key(key_now)

    async def _unkeyed(self, volume_id: str, what: str, work: Callable[[str], None], path: str) -> None:
        """Host work for a volume this node does not hold (kubelet retrying what is done): under a
        key of its own, with the same deadline, its thread dropped after."""
        key = f"unstaged:{volume_id}"
        try:
            await self._call(key, lambda: self.calls.host(key, what, work, path))
        finally:
            self.calls.forget(key)

    @rpc
    async def NodePublishVolume(
        self, request: csi_pb2.NodePublishVolumeRequest, context: Context
    ) -> csi_pb2.NodePublishVolumeResponse:
        _require(request, "volume_id", "target_path", "staging_target_path", "volume_capability")
        volume_id, target, staging = request.volume_id, request.target_path, request.staging_target_path
        key = self.state.key_of_volume(volume_id)
        if key is None:
            raise RpcFailure(
                grpc.StatusCode.FAILED_PRECONDITION, f"volume {volume_id} is not staged on this node"
            )
        # Read-only when kubelet asks (the pod's readOnly) or the access mode allows no writer (a
        # ReadOnlyMany claim: kubelet sends readonly=false unless the pod says readOnly), as
        # upstream Fluid's node server does for MULTI_NODE_READER_ONLY.
        readonly = request.readonly or reader_only(request.volume_capability)
        pod_uid = request.volume_context.get(POD_UID_KEY) or None
        pod = _pod_of(request.volume_context)
        t0 = time.monotonic()
        with _logged_steps("NodePublish", volume_id=volume_id, mount_key=key):
            await self._call(
                key,
                lambda: self._publish(
                    key, volume_id, staging, target, readonly=readonly, pod_uid=pod_uid, pod=pod
                ),
            )
            with spans.step(STEP_STATE):
                await self._durable()
        log.info(
            "published", extra={"volume_id": volume_id, "mount_key": key, "pod": pod, "seconds": _since(t0)}
        )
        return csi_pb2.NodePublishVolumeResponse()

    async def _publish(
        self,
        key: str,
        volume_id: str,
        staging: str,
        target: str,
        *,
        readonly: bool,
        pod_uid: str | None,
        pod: str | None = None,
    ) -> None:
        added = self.state.volume_of(target) is None
        # Recorded before the bind (a target another volume holds is refused before mounting) and
        # written beside it, not after: a service killed meanwhile finds the target in its state
        # and binds it at recovery, as kubelet's retry would.
        self._save(st.publish(self.state, volume_id, target, readonly, pod_uid, pod=pod))
        writing = asyncio.ensure_future(self._durable_step("state written beside the bind"))
        args = (self.state.mounts[key], volume_id, staging, target, readonly)
        try:
            with spans.step(STEP_BIND):
                await self.calls.host(
                    key, f"publishing volume {volume_id} at {target}", self._publish_on_host, *args
                )
        except Exception:
            # Not bound: a target this call added is forgotten again (a cancelled call keeps it:
            # its bind may have been made, and unpublish takes it off).
            if added:
                self._save(st.unpublish(self.state, target))
            await asyncio.gather(writing, return_exceptions=True)
            with contextlib.suppress(OSError):  # the bind's failure is the answer; the next call writes
                await self._durable()
            raise
        await writing

    @rpc
    async def NodeUnpublishVolume(
        self, request: csi_pb2.NodeUnpublishVolumeRequest, context: Context
    ) -> csi_pb2.NodeUnpublishVolumeResponse:
        _require(request, "volume_id", "target_path")
        volume_id, target = request.volume_id, request.target_path
        key = self.state.key_of_volume(volume_id)
        if key is None:
            await self._unkeyed(volume_id, f"unpublishing {target}", _unpublish_on_host, target)
        else:
            await self._call(key, lambda: self._unpublish(key, target))
        await self._durable()
        return csi_pb2.NodeUnpublishVolumeResponse()

    async def _unpublish(self, key: str, target: str) -> None:
        await self.calls.host(key, f"unpublishing {target}", _unpublish_on_host, target)
        self._save(st.unpublish(self.state, target))


async def _cancelled(task: asyncio.Future[Any] | None) -> None:
    """Cancel ``task`` and wait for it to end (a FUSE it was starting is stopped by its runner);
    whatever it ends with says less than the reason it was cancelled."""
    if task is None:
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _staged_volume(request: csi_pb2.NodeStageVolumeRequest) -> tuple[ContextVolume | ClientVolume, str]:
    """The volume NodeStage is asked for, read from its context, and its mount key."""
    attributes = dict(request.volume_context)
    if is_client_volume(attributes):
        # SPEC §7: the runtime's client is the FUSE (its binds are read-only as asked, at publish).
        client = parse_client_context(attributes)
        return client, client.key
    if reader_only(request.volume_capability):
        attributes = reader_only_context(attributes)  # a read-only FUSE: see there why
    volume = parse_volume_context(attributes)
    return volume, mount_key(volume.params)


@contextlib.contextmanager
def _logged_steps(call: str, **fields: str) -> Iterator[dict[str, str]]:
    """Log, at debug, where a call's time went (kubectl_fluid/spans.py): one line per call that
    succeeded, ``{call} steps`` with ``total_ms`` and ``steps_ms``, and the ``fields`` (the block
    may add to the dict it is given)."""
    with spans.recording(log.isEnabledFor(logging.DEBUG)) as timing:
        yield fields
    if timing is not None:
        log.debug("%s steps", call, extra={**fields, **timing.fields()})


def _since(t0: float) -> float:
    """Seconds since the monotonic ``t0``, to the tenth of a millisecond (a log line's figure)."""
    return round(time.monotonic() - t0, 4)


def _client_volume(entry: st.MountEntry) -> ClientVolume:
    assert entry.client is not None
    return ClientVolume(entry.client.namespace, entry.client.name, entry.mnt_path, names.DEFAULT_FS_PATH)


def _remove_empty_sources(mnt_path: str) -> None:
    """What a client mount's key leaves in this service's tree (beside where a mount point of its
    own would be, ``mnt_path``): its empty sources directory and the key's directory."""
    with contextlib.suppress(OSError):
        os.rmdir(volumes_dir(mnt_path))
    _remove_empty(mnt_path)


def _pod_of(context: Mapping[str, str]) -> str | None:
    """ "namespace/name" of the pod kubelet publishes for (podInfoOnMount), when it says."""
    namespace, name = context.get(POD_NAMESPACE_KEY), context.get(POD_NAME_KEY)
    return f"{namespace}/{name}" if namespace and name else None


def _published(entry: st.MountEntry) -> list[TargetRef]:
    """The entry's targets whose pod is known, as the propagation check takes them."""
    refs = []
    for volume in entry.volumes.values():
        for target, held in sorted(volume.targets.items()):
            if held.pod and held.stale is None:
                namespace, _, pod = held.pod.partition("/")
                refs.append(TargetRef(target, namespace, pod, held.pod_uid))
    return refs


def _record_process(state: st.NodeState, key: str, handle: FuseHandle) -> st.NodeState:
    return st.set_process(
        state, key, pid=handle.pid, pod_name=handle.pod_name, pid_start_time=handle.start_time
    )


def _require(request: Message, *fields: str) -> None:
    """INVALID_ARGUMENT naming the first missing field, as the CSI spec asks of every call."""
    for field in fields:
        missing = not request.HasField(field) if field == "volume_capability" else not getattr(request, field)
        if missing:
            raise required(field)


def _detach(path: str) -> None:
    """Unmount every mount stacked at ``path`` (a broken FUSE bind too), without waiting on a FUSE
    server: the mount table is read, not ``path``, and umount(2) asks no FUSE server. A mount in
    use (a call stuck in it) is detached lazily."""
    while mounts.mounted_at(path):
        try:
            mounts.unmount(path)
        except mounts.MountError:
            mounts.unmount(path, lazy=True)


def _unpublish_on_host(target: str) -> None:
    _detach(target)
    with contextlib.suppress(OSError):
        os.rmdir(target)  # the CSI spec: the plugin removes what it created at the target


def _unstage_on_host(source: str, staging: str) -> None:
    _take_off_source(source)
    _unbind_staging(staging)


def _take_off_source(source: str) -> None:
    _detach(source)
    _remove_source(source)


def _remove_mount_point(mnt_path: str) -> None:
    """What a stopped FUSE leaves: its mount (if its process did not take it off), its
    configuration file, the empty directories."""
    _detach(mnt_path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(names.fuse_config_path(mnt_path))
    with contextlib.suppress(OSError):
        os.rmdir(volumes_dir(mnt_path))
    _remove_empty(mnt_path)


def _unbind_staging(staging: str) -> None:
    """Take off what an earlier version bound at kubelet's staging path (a FUSE directory: another
    device than the directory above it, or a dead bind that fails to stat), without reading the
    mount table for the plain directory it is now."""
    try:
        here = os.lstat(staging)
        above = os.lstat(os.path.dirname(staging))
    except FileNotFoundError:
        return
    except OSError:
        _detach(staging)
        return
    if here.st_dev != above.st_dev:
        _detach(staging)


def _remove_source(source: str) -> None:
    """A volume's source directory, once nothing is mounted there (never anything with content)."""
    with contextlib.suppress(OSError):
        os.rmdir(source)


def _remove_empty(mnt_path: str) -> None:
    """The mount point and its key's directory, which the service created; never anything with
    content (a FUSE that failed to unmount shows its files, and is left to recovery)."""
    for directory in (mnt_path, os.path.dirname(mnt_path)):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _shows(path: str, directory: Identity) -> bool:
    """Whether ``path`` serves ``directory`` (same device and inode): a bind into a dead FUSE fails
    to stat, one into an older FUSE mount has another device number. A directory has one name
    (no hard links), so another path showing its inode is a mount of it: no need to read the mount
    table, which costs more than the whole bind once a node holds hundreds of mounts."""
    try:
        seen = os.lstat(path)
    except OSError:
        return False
    return (seen.st_dev, seen.st_ino) == directory


def _clear(path: str) -> None:
    """Make ``path`` free to mount on: unmount what is stacked there. A path that does not exist
    has nothing mounted on it (the common case, kubelet leaves the target to the driver)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        pass  # a dead FUSE bind (ENOTCONN): _detach takes it off
    _detach(path)


def _bind_from(source: str, target: str, readonly: bool, source_shows: Identity | None = None) -> bool:
    """Bind ``source`` (a volume's source, the driver's own bind) at ``target`` unless it is already there;
    returns whether it bound. ``source_shows``: what ``source`` was just seen showing, which saves a
    lookup through the FUSE mount.

    A mount already at ``target`` (a bind into a FUSE that died) is kept and the new bind stacked on
    it: a running container's volume is a copy of the target in its own mount namespace, which
    follows what is mounted on the target (HostToContainer propagation) but is orphaned, still on the
    dead FUSE, once the target is unmounted. NodeUnpublish unmounts the whole stack."""
    if source_shows is None:
        seen = os.stat(source)
        source_shows = (seen.st_dev, seen.st_ino)
    try:
        seen = os.lstat(target)  # one look: whether it shows the volume already, or exists at all
    except FileNotFoundError:
        # Nothing is mounted on a path that does not exist (kubelet leaves the target to the
        # driver): no need to read the mount table.
        Path(target).mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # a bind into a dead FUSE (ENOTCONN): stacked on, as said above
    else:
        if (seen.st_dev, seen.st_ino) == source_shows:
            return False
    mounts.bind(source, target, readonly=readonly)
    return True


_ADVICE = {
    errno.ENOENT: "create it (path-type DirectoryOrCreate does) or fix the PV",
    errno.ELOOP: "a volume's directory and the directories above it must be directories in the cache "
    "filesystem, not symbolic links: replace the link with a directory",
    errno.EXDEV: "a volume's directory must lie in the cache filesystem itself",
    errno.ENOTDIR: "a volume's directory must be a directory",
}


def _refused(curvine_path: str, err: beneath.UnsafePath) -> RpcFailure:
    advice = _ADVICE.get(err.errno, "check the cache filesystem and its FUSE mount")
    return RpcFailure(
        grpc.StatusCode.FAILED_PRECONDITION,
        f"{names.PARAM_CURVINE_PATH} {curvine_path}: {err.path} {err.reason}; not binding it: {advice}",
    )
