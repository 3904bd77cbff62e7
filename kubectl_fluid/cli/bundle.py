"""``kubectl fluid bundle``: a support archive (``.tar.gz``) of what a maintainer asks for first: the
product's and the runtimes' pod logs (current and previous), events, the objects ``inspect`` shows,
FuseMounts, CSINodes, Nodes, the webhook configuration and versions.

This module is the edge: one read of the scope (``snapshot.read``, each kind listed once), one of the
product's namespace, the versions (``version.read_versions``), then the logs one by one, streamed into
the archive as they come. What goes where, and the redaction every file passes through, is the pure
``bundleplan.py``. Progress goes to stderr, one line per step (an updating line on a terminal).
"""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.bundleplan import LAYOUT, LOG_BYTES, LOG_LINES
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

if TYPE_CHECKING:
    import tarfile
    from collections.abc import Callable

    from kubectl_fluid.cli.bundleplan import Plan
    from kubectl_fluid.kube.transport import Api

SUMMARY = "Write a support archive: logs, events, objects and versions, secrets left out."
HELP = f"""{SUMMARY}

The archive (default fluid-bundle-YYYYmmdd-HHMMSS.tar.gz in the current directory, -o names
another) holds, for the datasets of the namespace (-n, -A for all, --dataset for one):

\b
{LAYOUT}

Logs are the last {LOG_LINES:,} lines, at most {LOG_BYTES // 2**20} MiB, of each container of the
product's pods (namespace fluid-system) and of the datasets' runtime pods (master, worker, client).

Never in it: Secrets (none is read), the kubeconfig's credentials. Values that look like
credentials (password=, secret=, token=, access keys, bearer tokens, JWTs, PEM private keys) are
masked as ****** in logs and objects alike; a secret printed bare cannot be recognised, so look
before sending.

Needs: list on the kinds above and get on pods/log; a kind it may not list is named in README.txt.
"""
EPILOG = """\b
Examples:
  kubectl fluid bundle
  kubectl fluid bundle --dataset ds1 -n team-a
  kubectl fluid bundle -A -o /tmp/fluid.tar.gz
"""


class Progress:
    """Steps on stderr: one line each when stderr is not a terminal (logs, CI), else one line that
    updates in place."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._open = False

    def step(self, text: str) -> None:
        if self.tty:
            self.stream.write(f"\r\033[K{text}")
            self._open = True
        else:
            self.stream.write(f"{text}\n")
        self.stream.flush()

    def done(self) -> None:
        if self._open:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._open = False


def default_name(now: object = None) -> str:
    from datetime import datetime

    when = now if isinstance(now, datetime) else datetime.now()
    return f"fluid-bundle-{when:%Y%m%d-%H%M%S}.tar.gz"


def size_text(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{max(1, round(size / 1024))} KiB"


def folder_of(path: str) -> str:
    """The archive's top folder: its file name without .tar.gz (or .tgz)."""
    import os

    base = os.path.basename(path)
    for suffix in (".tar.gz", ".tgz"):
        if base.endswith(suffix):
            return base[: -len(suffix)] or "fluid-bundle"
    return base or "fluid-bundle"


@click.command(help=HELP, epilog=EPILOG)
@click.option(
    "--dataset",
    metavar="DATASET",
    shell_complete=completers.datasets,
    help="Only this dataset (of the namespace -n names) and the product.",
)
@click.option(
    "-o",
    "--output",
    "archive",
    metavar="FILE.tar.gz",
    type=click.Path(dir_okay=False),
    help="Where to write the archive (default fluid-bundle-YYYYmmdd-HHMMSS.tar.gz here).",
)
@kube_command(outputs=(), lists=True)
def bundle(dataset: str | None, archive: str | None, settings: Settings) -> None:
    import os
    from datetime import UTC, datetime

    from kubectl_fluid import __version__
    from kubectl_fluid.api import names
    from kubectl_fluid.cli import bundleplan, snapshot
    from kubectl_fluid.cli.checks import not_found
    from kubectl_fluid.cli.datasetnames import checked_dataset
    from kubectl_fluid.cli.errors import CliError
    from kubectl_fluid.cli.output import warn
    from kubectl_fluid.cli.version import document, read_versions
    from kubectl_fluid.kube.errors import ApiError

    if dataset is not None:
        checked_dataset(dataset)
        if settings.all_namespaces:
            raise CliError("--dataset names a dataset of one namespace: pass -n NAMESPACE, not -A")
    path = archive or default_name()
    progress = Progress(sys.stderr)
    session = settings.open()
    api = session.api
    namespace = None if settings.all_namespaces else session.namespace
    with api:

        def collected(kind: str, count: int, where: str = "") -> None:
            progress.step(f"collecting {where}{kind} ({count:,})…")

        snap = snapshot.read(api, namespace, progress=collected)
        if dataset is not None and snap.dataset(session.namespace, dataset) is None:
            raise CliError(not_found(api, f'dataset "{dataset}"', session.namespace))
        system = snapshot.read(
            api,
            names.FLUID_NAMESPACE,
            ("pods", "events"),
            progress=lambda kind, count: collected(kind, count, f"{names.FLUID_NAMESPACE} "),
        )
        progress.step("collecting versions…")
        unreadable = {**snap.unreadable, **system.unreadable}
        try:
            server, components = read_versions(api, names.FLUID_NAMESPACE)
        except ApiError as e:
            # RBAC may forbid the product's Deployments/DaemonSets: the rest of the archive still helps.
            server, components = {}, []
            unreadable["versions"] = f"{e.code} {e.reason or ''}".strip()
        scope = bundleplan.in_scope(snap, (session.namespace, dataset) if dataset else None)
        described = "all namespaces" if namespace is None else f"namespace {namespace}"
        if not scope:
            progress.done()
            warn(f"no datasets in {described}: the archive holds the product's part only")
        plan = bundleplan.plan(snap, system, scope, document(server, components), bundleplan.EXTRAS)

        def readme(failed: list[str]) -> str:
            return bundleplan.readme(
                created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                plugin=__version__,
                context=session.access.context,
                scope=f"dataset {session.namespace}/{dataset}" if dataset else described,
                unreadable=unreadable,
                missing=plan.missing,
                failed_logs=failed,
            )

        count = _write(path, plan, api, progress, readme)
    progress.done()
    click.echo(f"wrote {path} ({count} files, {size_text(os.path.getsize(path))})")


def _write(path: str, plan: Plan, api: Api, progress: Progress, readme: Callable[[list[str]], str]) -> int:
    """Write the archive beside ``path`` and rename it there once whole; the number of files."""
    import os
    import tarfile
    import tempfile

    from kubectl_fluid.cli import bundleplan

    folder = folder_of(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        with tarfile.open(temp, "w:gz") as tar:
            for entry in plan.entries:
                _add(tar, folder, entry.path, bundleplan.content(entry))
            failed = _logs(api, plan, progress, lambda p, data: _add(tar, folder, p, data))
            _add(
                tar, folder, "README.txt", bundleplan.content(bundleplan.Entry("README.txt", readme(failed)))
            )
            count = len(tar.getmembers())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    return count


def _add(tar: tarfile.TarFile, folder: str, path: str, data: bytes) -> None:
    import io
    import tarfile
    import time

    info = tarfile.TarInfo(f"{folder}/{path}")
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def _logs(api: Api, plan: Plan, progress: Progress, add: Callable[[str, bytes], None]) -> list[str]:
    """Fetch each log of the plan into the archive; the ones the server would not give, with why."""
    from kubectl_fluid.cli import bundleplan
    from kubectl_fluid.kube import resources
    from kubectl_fluid.kube.errors import ApiError, Unreachable

    failed = []
    total = len(plan.logs)
    for i, request in enumerate(plan.logs, 1):
        progress.step(f"logs {i}/{total}…")
        params = {
            "container": request.container,
            "tailLines": str(bundleplan.LOG_LINES),
            "limitBytes": str(bundleplan.LOG_BYTES),
        }
        if request.previous:
            params["previous"] = "true"
        try:
            raw = api.raw(resources.pod_log_path(request.namespace, request.pod), params)
        except ApiError as e:
            failed.append(f"{request.path}: {e.message or e.reason or e.code}")
            continue
        except Unreachable as e:
            # One kubelet that does not answer (its node lost) costs its log, not the archive.
            failed.append(f"{request.path}: {e}")
            continue
        add(request.path, bundleplan.log_content(raw))
    return failed
