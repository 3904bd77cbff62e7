"""``kubectl fluid config show DS`` (SPEC §6): a dataset's runtime config as the controller rendered it.

The verb's flags; what it reads and prints is ``kubectl_fluid.cli.configview``, which the executable's
fast path (``kubectl_fluid.cli.fastpath``) also calls for the spellings it knows.
"""

from __future__ import annotations

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.flags import connection_options, kube_command
from kubectl_fluid.cli.settings import Settings


@click.group(epilog="\b\nExamples:\n  kubectl fluid config show ds1\n  kubectl fluid config show ds1 --env")
@connection_options
def config(**_: object) -> None:
    """Show datasets' runtime config.

    The runtime config of a dataset is what fluid-controller renders into its ConfigMap
    (fluid-runtime-config-DATASET): runtime.sh, runtime.json and runtime-scoped.sh.
    """


SHOW_EPILOG = """\b
Examples:
  kubectl fluid config show ds1
  kubectl fluid config show ds1 --format json
  kubectl fluid config show ds1 --env
  kubectl fluid config show ds1 --format scoped   # names carry the dataset: FLUID_DS1_MASTER_NAME
"""


@config.command(epilog=SHOW_EPILOG)
@click.argument("dataset", shell_complete=completers.datasets)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["sh", "json", "scoped"]),
    help="sh: runtime.sh exactly as stored (default); json: runtime.json, pretty-printed; scoped: "
    "runtime-scoped.sh, runtime.sh's values under names that carry the dataset.",
)
@click.option("--env", is_flag=True, help="Print the env vars a pod using the dataset gets instead.")
@kube_command(outputs=("json", "yaml", "name"))
def show(dataset: str, fmt: str | None, env: bool, settings: Settings) -> None:
    """Print the runtime config of DATASET (runtime.sh by default).

    -o json is --format json; -o yaml prints runtime.json as YAML. With --env, -o json|yaml
    prints the env entries as they appear in a container spec.

    runtime.sh is printed byte for byte as the controller stored it in ConfigMap
    fluid-runtime-config-DATASET, which pods labelled fluid.io/inject=true see at
    /etc/fluid/config/DATASET/runtime.sh. Every name of runtime.sh is the same for every dataset,
    so to load several datasets' configs into one shell source their runtime-scoped.sh instead
    ($FLUID_SCOPED_CONFIG_PATH_DS1, then $FLUID_SCOPED_CONFIG_PATH_DS2): the same values, each
    name prefixed FLUID_{DATASET}_. A dataset that does not exist, or whose config is not rendered
    yet, is an error saying which.

    Needs: get on the Dataset and on ConfigMaps in the namespace (-n, else the context's).
    """
    from kubectl_fluid.cli import configview
    from kubectl_fluid.cli.output import write

    if fmt and settings.output in ("json", "yaml") and fmt != settings.output:
        raise click.UsageError(f"--format {fmt} and -o {settings.output} disagree; pass one of them")
    write(configview.show(settings, dataset, fmt, env))
