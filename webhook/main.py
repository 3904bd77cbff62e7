"""``fluid-webhook``: the mutating admission webhook. Every replica serves; none writes to the API
except, with ``--bootstrap-certs``, its certificate Secret and the configuration's ``caBundle``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from kubectl_fluid import logs
from kubectl_fluid.api import names
from kubectl_fluid.kube.client import connect
from webhook import certs
from webhook.admission import Admission
from webhook.cabundle import keep_ca_bundle_patched
from webhook.cache import ClusterLookup
from webhook.certsecret import ensure_secret, keep_secret_fresh
from webhook.collect import MAX_DATASETS_PER_POD
from webhook.loopwatch import LoopWatch
from webhook.plugins import PLUGINS
from webhook.profile import DEFAULT_PROFILE, Profile, ProfileError, load_profile
from webhook.server import App
from webhook.tlsreload import CertReloader

log = logging.getLogger("webhook")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fluid-webhook", description=__doc__)
    p.add_argument(
        "--kubeconfig", help="kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, in-cluster)"
    )
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=9443)
    p.add_argument(
        "--cert-dir", default="/var/run/fluid-webhook/certs", help="tls.crt and tls.key (reloaded on change)"
    )
    p.add_argument(
        "--bootstrap-certs", action="store_true", help="keep a CA and serving certificate in a Secret"
    )
    p.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE", names.FLUID_NAMESPACE))
    p.add_argument("--cert-secret", default=names.WEBHOOK_CERT_SECRET)
    p.add_argument(
        "--service", default=names.WEBHOOK_SERVICE, help="Service whose DNS names the certificate covers"
    )
    p.add_argument(
        "--ip-san", action="append", default=[], help="extra IP SAN (e.g. 127.0.0.1 for a local run)"
    )
    p.add_argument("--dns-san", action="append", default=[], help="extra DNS SAN")
    p.add_argument(
        "--webhook-config",
        default=names.WEBHOOK_NAME,
        help="MutatingWebhookConfiguration to keep caBundle on",
    )
    p.add_argument("--profile", help="plugin profile (YAML); default: the built-in profile")
    p.add_argument(
        "--max-datasets-per-pod",
        type=_positive,
        default=MAX_DATASETS_PER_POD,
        help=f"refuse pods naming or mounting more datasets (default {MAX_DATASETS_PER_POD})",
    )
    p.add_argument(
        "--health-port", type=int, help="accepted for manifest symmetry: health is served on --port"
    )
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", choices=["json", "text"], default="json")
    return p.parse_args(argv)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


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
    api = await connect(args.kubeconfig, args.context)
    cert_dir = Path(args.cert_dir)
    background: list[asyncio.Task[None]] = []
    if args.bootstrap_certs:
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
    server = _Server(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
    log.info("serving", extra={"port": args.port, "path": names.WEBHOOK_MUTATE_PATH})
    try:
        await server.serve()
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


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    import uvloop

    sys.exit(uvloop.run(run(args)))


if __name__ == "__main__":
    main()
