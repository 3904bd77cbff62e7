"""``kubectl fluid config show DS`` (SPEC §6): a dataset's runtime config as the controller rendered it.

One GET of the ConfigMap on the happy path (the command must stay close to ``kubectl get cm``); only
when it is missing are the Dataset and the namespace read, to say which of them is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kubectl_fluid.cli import completers
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.flags import connection_options, kube_command
from kubectl_fluid.cli.settings import Settings

if TYPE_CHECKING:
    from kubectl_fluid.cli.settings import Session


@click.group()
@connection_options
def config(**_: object) -> None:
    """Show datasets' runtime config.

    The runtime config of a dataset is what fluid-controller renders into its ConfigMap
    (fluid-runtime-config-DATASET): runtime.sh and runtime.json.
    """


def env_entries(dataset: str) -> list[dict[str, str]]:
    """The env vars the webhook gives every app container of a pod using ``dataset`` (SPEC §4)."""
    from kubectl_fluid.api import names

    path = names.pod_runtime_sh_path(dataset)
    return [{"name": name, "value": path} for name in names.runtime_config_env_names(dataset)]


def pretty_json(text: str) -> str:
    import json

    return json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"


def config_text(configmap: dict[str, Any], key: str) -> str | None:
    """A key of the ConfigMap, from ``data`` or (base64) ``binaryData``."""
    value = (configmap.get("data") or {}).get(key)
    if value is None and key in (configmap.get("binaryData") or {}):
        import base64

        value = base64.b64decode(configmap["binaryData"][key]).decode()
    return value if isinstance(value, str) else None


SHOW_EPILOG = """\b
Examples:
  kubectl fluid config show ds1
  kubectl fluid config show ds1 --format json
  kubectl fluid config show ds1 --env
"""


@config.command(epilog=SHOW_EPILOG)
@click.argument("dataset", shell_complete=completers.datasets)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["sh", "json"]),
    help="sh: runtime.sh exactly as stored (default); json: runtime.json, pretty-printed.",
)
@click.option("--env", is_flag=True, help="Print the env vars a pod using the dataset gets instead.")
@kube_command(outputs=("json", "yaml", "name"))
def show(dataset: str, fmt: str | None, env: bool, settings: Settings) -> None:
    """Print the runtime config of DATASET (runtime.sh by default).

    -o json is --format json; -o yaml prints runtime.json as YAML. With --env, -o json|yaml
    prints the env entries as they appear in a container spec.

    runtime.sh is printed byte for byte as the controller stored it in ConfigMap
    fluid-runtime-config-DATASET, which pods labelled fluid.io/inject=true see at
    /etc/fluid/config/DATASET/runtime.sh. A dataset that does not exist, or whose config is not
    rendered yet, is an error saying which.

    Needs: get on the Dataset and on ConfigMaps in the namespace (-n, else the context's).
    """
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.output import dump, write

    output = settings.output
    if fmt and output in ("json", "yaml") and fmt != output:
        raise click.UsageError(f"--format {fmt} and -o {output} disagree; pass one of them")
    if "/" in dataset:
        raise CliError(f'"{dataset}" is not a dataset name; pick the namespace with -n')
    session = settings.open()
    with session.api:
        configmap = _read(session, dataset)
    cm_name = names.runtime_config_configmap(dataset)
    if output == "name":
        write(f"configmap/{cm_name}\n")
        return
    if env:
        entries = env_entries(dataset)
        write(dump(entries, output) if output else "".join(f"{e['name']}={e['value']}\n" for e in entries))
        return
    if fmt == "json" or output in ("json", "yaml"):
        text = config_text(configmap, names.RUNTIME_JSON_KEY)
        if text is None:
            raise CliError(
                f"ConfigMap {cm_name} has no key {names.RUNTIME_JSON_KEY}; is fluid-controller running?"
            )
        try:
            if output == "yaml":
                import json

                write(dump(json.loads(text), "yaml"))
            else:
                write(pretty_json(text))
        except ValueError as e:
            raise CliError(f"{names.RUNTIME_JSON_KEY} of ConfigMap {cm_name} is not JSON: {e}") from None
        return
    text = config_text(configmap, names.RUNTIME_SH_KEY)
    if text is None:
        raise CliError(f"ConfigMap {cm_name} has no key {names.RUNTIME_SH_KEY}; is fluid-controller running?")
    write(text)


def _read(session: Session, dataset: str) -> dict[str, Any]:
    from kubectl_fluid.api import names
    from kubectl_fluid.kube import resources

    api, ns = session.api, session.namespace
    configmap = api.get(resources.CONFIGMAPS.object_path(ns, names.runtime_config_configmap(dataset)))
    if configmap is not None:
        return configmap
    from kubectl_fluid.api.datasetrefs import configmap_problem
    from kubectl_fluid.cli.checks import not_found, what_to_do

    if api.get(resources.DATASETS.object_path(ns, dataset)) is None:
        hint = "check the name, or find its namespace with kubectl fluid datasets -A"
        raise CliError(not_found(api, f'dataset "{dataset}"', ns, hint))
    problem = configmap_problem(dataset, None) or ""
    raise CliError(f"{problem}: {what_to_do(problem, ns)}")
