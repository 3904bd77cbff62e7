"""``fluid-webhook``: the mutating admission webhook. Every replica serves; none writes to the API
except, with ``--bootstrap-certs``, its certificate Secret and the configuration's ``caBundle``.
It serves on N worker processes (``--workers``, default from the CPU limit; ``webhook/workers.py``),
or in this process with ``--workers 1`` (``webhook/serving.py``)."""

from __future__ import annotations

import argparse
import os
import sys

from kubectl_fluid import logs
from kubectl_fluid.api import names
from webhook.collect import MAX_DATASETS_PER_POD


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
    p.add_argument(
        "--workers",
        type=_positive,
        help="processes serving --port (SO_REUSEPORT), each with its own caches; "
        "default: the container's CPU limit, else the CPUs available (1: one process, no supervisor)",
    )
    # Set by the supervisor on each worker it starts (webhook/workers.py); not for people.
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", choices=["json", "text"], default="json")
    return p.parse_args(argv)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    if args.worker is None:
        from webhook import workers

        count = args.workers or workers.default_workers()
        if count > 1:
            sys.exit(workers.supervise(argv, count))
    # The server's modules are imported only here: the supervisor above stays small.
    import uvloop

    from webhook.serving import run

    sys.exit(uvloop.run(run(args)))


if __name__ == "__main__":
    main()
