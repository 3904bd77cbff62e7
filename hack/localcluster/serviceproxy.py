"""The process that answers a cluster's ClusterIP Services from every one of its real nodes, in place of
kube-proxy (servicerules.py says why): it lists and watches Services and EndpointSlices through the
cluster's kubeconfig and, at every change, writes servicerules' chains with one
``iptables-restore --noflush`` of its own chains and jumps only; nothing of another cluster's, or of
the host's, is read back or written.

    PYTHONPATH=hack python -m localcluster.serviceproxy --kubeconfig STATE/kubeconfig --tag TAG

One per cluster, started with its real nodes (``ensure``, from realnodes.ensure) and recorded with
``state.start`` as ``serviceproxy``, so ``make down`` stops it (``stop``, from realnodes.stop_all),
and a second ``make up`` starts it again when it died. SIGTERM removes its chains and jumps before it
exits; ``stop`` removes them again whatever the process did (killed -9, say), and a new process's
first write replaces a set left behind. SIGHUP writes everything again at once (``ensure`` sends it:
a node started again since has put its FORWARD chain ahead of ours).

Standard library only: ``make down`` runs on the system python3.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localcluster import servicerules, state
from localcluster.state import Cluster, cluster_tag, log

PROC = "serviceproxy"
RESOURCES = {
    "services": "/api/v1/services",
    "endpointslices": "/apis/discovery.k8s.io/v1/endpointslices",
}
# Everything is written again this often even without an event: a jump someone else's rule now
# precedes, or chains flushed by hand, are put right within it.
RESYNC = 30.0
# The API server closes a watch after this; a read that waits longer means a dead connection
# (bookmarks come about every minute).
WATCH_SECONDS = 240
READ_TIMEOUT = 120.0
BACKOFF = 1.0
START_TIMEOUT = 30.0


# ---------------------------------------------------------------- names (shared with realnodes.plan)


# ---------------------------------------------------------------- the API server, through a kubeconfig


class Api:
    """GET and watch with the kubeconfig's first cluster and user (the local cluster's: JSON, files)."""

    def __init__(self, kubeconfig: Path) -> None:
        config = json.loads(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        self.server = cluster["server"]
        self.context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self.context.load_cert_chain(user["client-certificate"], user["client-key"])

    def _open(self, path: str, timeout: float) -> Any:
        request = urllib.request.Request(self.server + path, headers={"Accept": "application/json"})
        return urllib.request.urlopen(request, context=self.context, timeout=timeout)

    def get(self, path: str) -> dict[str, Any]:
        with self._open(path, 30) as answer:
            body: dict[str, Any] = json.load(answer)
            return body

    def watch(self, path: str, version: str) -> Iterator[dict[str, Any]]:
        query = f"?watch=1&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}&resourceVersion={version}"
        with self._open(path + query, READ_TIMEOUT) as stream:
            for line in stream:
                if line.strip():
                    yield json.loads(line)


class Store:
    """The cluster's Services and EndpointSlices as the watches last saw them; ``changed`` is set at
    every change, and at SIGHUP."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.objects: dict[str, dict[str, dict[str, Any]]] = {r: {} for r in RESOURCES}
        self.listed: set[str] = set()
        self.changed = threading.Event()
        self.forced = False  # write even what was written last (SIGHUP)

    def force(self) -> None:
        self.forced = True
        self.changed.set()

    def snapshot(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(services, slices), or None until both have been listed once: before that, an empty view
        would take every Service away."""
        with self.lock:
            if self.listed != set(RESOURCES):
                return None
            return list(self.objects["services"].values()), list(self.objects["endpointslices"].values())

    def follow(self, api: Api, resource: str) -> None:
        """List, then watch from the list's version; list again after 410 Gone or a broken stream."""
        while True:
            try:
                listed = api.get(RESOURCES[resource])
                with self.lock:
                    self.objects[resource] = {_key(o): o for o in listed.get("items", [])}
                    self.listed.add(resource)
                self.changed.set()
                version = listed["metadata"]["resourceVersion"]
                while True:
                    version = self._apply(api.watch(RESOURCES[resource], version), resource) or version
            except Exception as failed:  # the API server away, a timeout, 410: list again shortly
                _event("watch ended", resource=resource, error=str(failed)[:200])
                time.sleep(BACKOFF)

    def _apply(self, events: Iterator[dict[str, Any]], resource: str) -> str | None:
        """The stream's events into the store; the last version seen, to watch on from."""
        version = None
        for event in events:
            kind, obj = event.get("type"), event.get("object", {})
            if kind == "ERROR":
                raise RuntimeError(f"watch error: {obj.get('message', obj)}")
            version = obj.get("metadata", {}).get("resourceVersion", version)
            if kind == "BOOKMARK":
                continue
            with self.lock:
                if kind == "DELETED":
                    self.objects[resource].pop(_key(obj), None)
                else:
                    self.objects[resource][_key(obj)] = obj
            self.changed.set()
        return version


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


# ---------------------------------------------------------------- iptables


def _saved(table: str, tag: str, hook: str) -> servicerules.Saved:
    out = subprocess.run(
        ["iptables-save", "-t", table], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return servicerules.from_save(out, tag, hook)


def _current(tag: str) -> tuple[servicerules.Saved, servicerules.Saved]:
    return _saved("nat", tag, servicerules.NAT[1]), _saved("filter", tag, servicerules.FILTER[1])


def _restore(text: str) -> None:
    run = subprocess.run(
        ["iptables-restore", "--noflush", "-w", "5"],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(f"iptables-restore: {run.stderr.strip()}")


def remove_rules(tag: str) -> None:
    """Every chain and jump of the cluster's, whoever left them."""
    text = servicerules.removal(tag, *_current(tag))
    if text:
        _restore(text)


def _event(msg: str, **fields: Any) -> None:
    print(json.dumps({"time": time.time(), "msg": msg, **fields}), file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the process


# Set (br_netfilter) on this host: bridged frames pass iptables, so an endpoint's answer to a client on
# its own bridge, which never reaches the host's routing, still meets conntrack and leaves the Service's
# address. Without it that answer comes from the endpoint's own address and the client drops it.
BRIDGED_THROUGH_IPTABLES = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")


def _bridged_through_iptables() -> bool:
    try:
        return BRIDGED_THROUGH_IPTABLES.read_text().strip() == "1"
    except OSError:
        return False


def run(kubeconfig: Path, tag: str) -> int:
    servicerules.entry_chain(tag)  # a bad tag fails here, not at the first write
    if not _bridged_through_iptables():
        _event(f"warning: {BRIDGED_THROUGH_IPTABLES} is not 1: no answer reaches a client from its own node")
    api, store, stopping = Api(kubeconfig), Store(), threading.Event()

    def stop_now(*_: object) -> None:
        stopping.set()
        store.changed.set()

    signal.signal(signal.SIGTERM, stop_now)
    signal.signal(signal.SIGHUP, lambda *_: store.force())
    for resource in RESOURCES:
        threading.Thread(target=store.follow, args=(api, resource), name=resource, daemon=True).start()
    last, written = "", 0.0
    while not stopping.is_set():
        store.changed.wait(RESYNC)
        store.changed.clear()
        if stopping.is_set():
            break
        view = store.snapshot()
        if view is None:
            continue
        t0 = time.monotonic()
        try:
            text = servicerules.rules(*view, tag, *_current(tag))
            why = "changed" if text != last else "asked" if store.forced else "resync"
            if why == "resync" and time.monotonic() - written < RESYNC:
                continue
            store.forced = False
            _restore(text)
        except (RuntimeError, OSError, subprocess.SubprocessError) as failed:
            _event("sync failed", error=str(failed)[:500])
            time.sleep(BACKOFF)
            store.changed.set()
            continue
        last, written = text, time.monotonic()
        ports = servicerules.service_ports(*view)
        _event(
            "synced",
            why=why,
            ports=len(ports),
            endpoints=sum(len(p.endpoints) for p in ports),
            ms=round((time.monotonic() - t0) * 1000, 1),
        )
    remove_rules(tag)
    _event("stopped; rules removed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster.serviceproxy", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--tag", required=True, help="the cluster's tag: its bridges are kf{tag}{index}")
    args = parser.parse_args(argv)
    return run(args.kubeconfig, args.tag)


# ---------------------------------------------------------------- started and stopped with the real nodes


def ensure(cluster: Cluster) -> state.Proc:
    """The cluster's proxy, running and written once: the live one is kept (and told to write
    everything again), a dead one's record replaced by a new process."""
    tag = cluster_tag(cluster.state_dir)
    live = [p for p in cluster.procs if p.name == PROC and p.alive()]
    if live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(live[0].pid, signal.SIGHUP)
        return live[0]
    cluster.procs = [p for p in cluster.procs if p.name != PROC]
    argv = [sys.executable, "-m", "localcluster.serviceproxy", "--kubeconfig", str(cluster.kubeconfig)]
    argv += ["--tag", tag]
    log(f"starting the service proxy for the cluster's bridges kf{tag}*")
    proc = state.start(cluster, PROC, argv, env={"PYTHONPATH": state.pythonpath_with_hack()})
    log_file = cluster.logs / f"{PROC}.log"
    # Its own word, not the chains: a set left by a proxy killed -9 is there before the first write.

    def written() -> bool:
        return '"synced"' in log_file.read_text()

    state.wait_for("the service proxy's first write", written, cluster, START_TIMEOUT, [PROC])
    return proc


def stop(cluster: Cluster) -> None:
    """The proxy stopped and the cluster's chains gone, even those of a proxy that could not clean up."""
    procs = [p for p in cluster.procs if p.name == PROC]
    state.stop(procs)
    if os.geteuid() == 0 and shutil.which("iptables-save"):  # a cluster that never had a real node: none
        remove_rules(cluster_tag(cluster.state_dir))
    if procs:
        cluster.procs = [p for p in cluster.procs if p.name != PROC]
        cluster.save()


if __name__ == "__main__":
    sys.exit(main())
