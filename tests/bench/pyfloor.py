"""The floor under fluid-webhook's admissions/s: the server it runs on (uvicorn on uvloop and
httptools, TLS from Python's ssl, one process, the webhook's own settings) answering every POST with
bytes given beforehand, doing no work of its own. With ``--workers N`` it runs as the webhook does
(``webhook/workers.py``: a supervisor and N processes on one port). Whatever the webhook does per admission
(parse, pipeline, patch, metrics) comes on top of what this process reaches, so when it alone is
below a goal set against the Go webhook, the goal is out of reach of that server and not of the
webhook's code.

    python -m tests.bench.pyfloor --port P --cert-dir DIR --answer FILE [--workers N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import uvicorn

from webhook import workers
from webhook.serving import server_config


def app_answering(answer: bytes) -> Any:
    head = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())],
    }
    body = {"type": "http.response.body", "body": answer}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send(head)
        await send(body)

    return app


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="pyfloor")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", type=Path, required=True)
    parser.add_argument("--answer", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--worker", type=int)
    args = parser.parse_args(argv)
    if args.worker is None and args.workers > 1:
        command = [sys.executable, "-m", "tests.bench.pyfloor", *argv, "--workers=1"]
        sys.exit(workers.Supervisor(command, args.workers).run())
    config = server_config(app_answering(args.answer.read_bytes()), "127.0.0.1", args.port, args.cert_dir)
    sock = workers.listen("127.0.0.1", args.port, shared=args.worker is not None)
    import uvloop

    sys.exit(uvloop.run(uvicorn.Server(config).serve(sockets=[sock])))


if __name__ == "__main__":
    main()
