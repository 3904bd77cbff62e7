"""``kubectl fluid load DATASET [PATH...]``: make a DataLoad of a dataset (SPEC §7) and, with
``--wait``, follow it to its end (the lines are ``loadprogress.py``'s)."""

from __future__ import annotations

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

EPILOG = """\b
Examples:
  kubectl fluid load ds1
  kubectl fluid load ds1 /train /eval --wait
  kubectl fluid load ds1 --load-metadata -o name
"""
POLL_SECONDS = 1.0


@click.command(epilog=EPILOG)
@click.argument("dataset", shell_complete=completers.datasets)
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--wait", is_flag=True, help="Follow it until it completes (exit 0) or fails (exit 1).")
@click.option(
    "--timeout",
    metavar="DURATION",
    default="0",
    help="With --wait, give up after this long (e.g. 10m); 0 waits for ever (default).",
)
@click.option("--load-metadata", is_flag=True, help="Load the paths' metadata too (loadMetadata).")
@kube_command(outputs=("json", "yaml", "name"))
def load(
    dataset: str, paths: tuple[str, ...], *, wait: bool, timeout: str, load_metadata: bool, settings: Settings
) -> None:
    """Load a dataset's data into its cache: create a DataLoad.

    PATH... are paths in the dataset to load (default: all of it, /). The DataLoad runs as a Job
    that fluid-controller builds from the DataLoad spec of the runtime's CacheRuntimeClass; one
    DataLoad runs per dataset at a time, later ones wait their turn. The new DataLoad's name is
    printed as kubectl prints a created object. With --wait the phase, the time since it was made
    and the cached percentage the cache reports are shown until it ends.

    Needs: get on the Dataset, create and get on dataloads.data.fluid.io in the namespace.
    """
    import time

    from kubectl_fluid.api import names
    from kubectl_fluid.cli.checks import not_found
    from kubectl_fluid.cli.datasetnames import checked_dataset
    from kubectl_fluid.cli.errors import CliError
    from kubectl_fluid.cli.output import dump, write
    from kubectl_fluid.cli.settings import parse_duration
    from kubectl_fluid.kube import resources

    checked_dataset(dataset)
    try:
        limit = parse_duration(timeout)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--timeout") from None
    for path in paths:
        if not path.startswith("/"):
            raise CliError(f'path "{path}": paths in a dataset start with /, e.g. /{path}')
    session = settings.open()
    api, ns = session.api, session.namespace
    with api:
        if api.get(resources.DATASETS.object_path(ns, dataset)) is None:
            hint = "check the name, or find its namespace with kubectl fluid datasets -A"
            raise CliError(not_found(api, f'dataset "{dataset}"', ns, hint))
        spec: dict[str, object] = {"dataset": {"name": dataset, "namespace": ns}}
        if paths:
            spec["target"] = [{"path": p} for p in paths]
        if load_metadata:
            spec["loadMetadata"] = True
        body = {
            "apiVersion": names.API_VERSION,
            "kind": names.KIND_DATALOAD,
            "metadata": {"generateName": f"{dataset}-load-", "namespace": ns},
            "spec": spec,
        }
        created = api.request("POST", resources.DATALOADS.collection_path(ns), body=body)
        name = created["metadata"]["name"]
        if settings.output in ("json", "yaml"):
            write(dump(created, settings.output))
        elif settings.output == "name":
            write(f"dataload.{names.GROUP}/{name}\n")
        else:
            write(f"dataload.{names.GROUP}/{name} created\n")
        if wait:
            _follow(api, ns, (dataset, name), limit, time.monotonic())


def _follow(api: object, ns: str, loading: tuple[str, str], limit: float, started: float) -> None:
    """Poll the DataLoad and its Dataset (``loading``: their names) until it ends; progress on stderr
    (one line rewritten on a terminal, a line per change elsewhere), the end on stdout, a failure as
    ``error:``."""
    import sys
    import time

    from kubectl_fluid.cli.errors import CliError
    from kubectl_fluid.cli.loadprogress import cached, outcome, phase, progress
    from kubectl_fluid.cli.output import write
    from kubectl_fluid.kube import resources
    from kubectl_fluid.kube.transport import Api

    assert isinstance(api, Api)
    dataset, name = loading
    terminal = sys.stderr.isatty()
    shown: tuple[str, str] | None = None
    while True:
        dataload = api.get(resources.DATALOADS.object_path(ns, name))
        if dataload is None:
            raise CliError(f"dataload {name} was deleted while waiting for it")
        found = api.get(resources.DATASETS.object_path(ns, dataset))
        seconds = time.monotonic() - started
        line = progress(dataload, found, seconds)
        if terminal:
            sys.stderr.write(f"\r\033[K{line}")
            sys.stderr.flush()
        elif (phase(dataload), cached(found)) != shown:
            sys.stderr.write(line + "\n")  # a new phase or percentage, not each second
        shown = (phase(dataload), cached(found))
        ended = outcome(dataload, found)
        if ended is not None:
            if terminal:
                sys.stderr.write("\n")
            if not ended.ok:
                raise CliError(ended.text)
            write(ended.text + "\n")
            return
        if limit and seconds >= limit:
            if terminal:
                sys.stderr.write("\n")
            raise CliError(
                f"timed out waiting for dataload {name} (still {phase(dataload)}); it goes on running"
            )
        time.sleep(POLL_SECONDS)
