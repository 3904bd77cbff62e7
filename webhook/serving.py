"""Serving admissions in one process: the event loop, the watch caches, the certificate and the HTTPS
server. ``webhook.main`` parses the arguments and runs this, in itself (``--workers 1``) or in each
worker of ``webhook.workers``; kept apart so that the supervisor imports none of it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from kubectl_fluid.api import names
from kubectl_fluid.kube.client import connect
from webhook import certs, workers
from webhook.admission import Admission
from webhook.cabundle import keep_ca_bundle_patched
from webhook.cache import ClusterLookup
from webhook.certsecret import ensure_secret, keep_secret_fresh
from webhook.loopwatch import LoopWatch
from webhook.plugins import PLUGINS
from webhook.profile import DEFAULT_PROFILE, Profile, ProfileError, load_profile
from webhook.server import App
from webhook.tlsreload import CertReloader

log = logging.getLogger("webhook")


def read_profile(path: str | None) -> Profile:
    text = Path(path).read_text() if path else DEFAULT_PROFILE
    profile, warnings = load_profile(text, PLUGINS)
    for warning in warnings:
        log.warning("plugin profile: %s", warning)
    return profile


async def run(args: argparse.Namespace) -> int:
    try:
        profile = read_profile(args.profile)
    except (OSError, ProfileError) as e:
        log.error("cannot load the plugin profile: %s", e)
        return 2
    background: list[asyncio.Task[None]] = []
    if beats := os.environ.get(names.WEBHOOK_HEARTBEAT_ENV):
        # A worker's: the supervisor replaces it when its loop stops beating (webhook/workers.py).
        background.append(asyncio.create_task(workers.heartbeat(Path(beats))))
    api = await connect(args.kubeconfig, args.context)
    cert_dir = Path(args.cert_dir)
    # Of N workers, worker 0 alone keeps the Secret, the files and the caBundle; the others serve the
    # files it writes (and the rotations their own reloader sees).
    leader = args.worker is None or args.worker == 0
    if args.bootstrap_certs and not leader:
        await workers.wait_for_files([cert_dir / names.TLS_CERT_FILE, cert_dir / names.TLS_KEY_FILE])
    elif args.bootstrap_certs:
        dns = [*certs.service_dns_names(args.service, args.namespace), *args.dns_san]
        bundle = await ensure_secret(api, args.namespace, args.cert_secret, dns, args.ip_san)
        certs.write_files(bundle, cert_dir)
        current = [bundle]  # renewed below; the caBundle loop always patches the latest CA

        def renewed(new: certs.CertBundle) -> None:
            current[0] = new

        background += [
            asyncio.create_task(
                keep_secret_fresh(
                    api,
                    args.namespace,
                    args.cert_secret,
                    dns,
                    args.ip_san,
                    cert_dir=cert_dir,
                    on_change=renewed,
                )
            ),
            asyncio.create_task(keep_ca_bundle_patched(api, args.webhook_config, lambda: current[0].ca_cert)),
        ]
    lookup = ClusterLookup(api)
    background += [asyncio.create_task(c.run()) for c in lookup.caches()]
    watch = LoopWatch(asyncio.get_running_loop())
    watch.start()
    admission = Admission(lookup, profile, max_datasets=args.max_datasets_per_pod)
    app = App(admission.review, ready=lookup.synced, live=watch.problem)
    config = server_config(app, args.host, args.port, cert_dir)
    config.load()
    assert config.ssl is not None
    reloader = CertReloader(config.ssl, cert_dir / "tls.crt", cert_dir / "tls.key")
    background.append(asyncio.create_task(reloader.watch()))
    sock = workers.listen(args.host, args.port, shared=args.worker is not None)
    server = _Server(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
    log.info(
        "serving",
        extra={
            "port": args.port,
            "path": names.WEBHOOK_MUTATE_PATH,
            "worker": args.worker,
            "pid": os.getpid(),
        },
    )
    try:
        await server.serve(sockets=[sock])
    finally:
        watch.stop()
        for task in background:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*background, return_exceptions=True)
    log.info("stopped")
    return 0


def server_config(app: Any, host: str, port: int, cert_dir: Path) -> uvicorn.Config:
    """The HTTPS server's settings (the bench's floor, tests/bench/pyfloor.py, serves on them too)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ssl_certfile=str(cert_dir / "tls.crt"),
        ssl_keyfile=str(cert_dir / "tls.key"),
        loop="none",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_keep_alive=30,
    )


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM after serving, which would end the process before our cleanup;
    our own loop handlers ask it to stop instead."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
