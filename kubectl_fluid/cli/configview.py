"""What ``kubectl fluid config show DS`` prints (SPEC §6), without click: the click verb
(``kubectl_fluid.cli.config``) and the executable's fast path (``kubectl_fluid.cli.fastpath``) both
call ``show``.

One GET of the ConfigMap on the happy path (the command must stay close to ``kubectl get cm``); only
when it is missing are the Dataset and the namespace read, to say which of them is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubectl_fluid.cli.errors import CliError

if TYPE_CHECKING:
    from kubectl_fluid.cli.settings import Session, Settings


def show(settings: Settings, dataset: str, fmt: str | None, env: bool) -> str:
    """The text to print: runtime.sh as stored, runtime.json (``fmt`` json, ``-o json|yaml``), the
    env entries (``env``) or the ConfigMap's name (``-o name``)."""
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.datasetnames import checked_dataset

    output = settings.output
    checked_dataset(dataset)
    session = settings.open()
    with session.api:
        configmap = read_configmap(session, dataset)
    cm_name = names.runtime_config_configmap(dataset)
    if output == "name":
        return f"configmap/{cm_name}\n"
    if env:
        from kubectl_fluid.cli.output import dump

        entries = env_entries(dataset, configmap)
        as_data = output or ("json" if fmt == "json" else None)
        return dump(entries, as_data) if as_data else "".join(f"{e['name']}={e['value']}\n" for e in entries)
    if fmt == "json" or output in ("json", "yaml"):
        text = config_text(configmap, names.RUNTIME_JSON_KEY)
        if text is None:
            raise CliError(
                f"ConfigMap {cm_name} has no key {names.RUNTIME_JSON_KEY}; is fluid-controller running?"
            )
        try:
            if output == "yaml":
                import json

                from kubectl_fluid.cli.output import dump

                return dump(json.loads(text), "yaml")
            return pretty_json(text)
        except ValueError as e:
            raise CliError(f"{names.RUNTIME_JSON_KEY} of ConfigMap {cm_name} is not JSON: {e}") from None
    if fmt == "scoped":
        text = config_text(configmap, names.RUNTIME_SCOPED_SH_KEY)
        if text is None:
            raise CliError(
                f"ConfigMap {cm_name} has no key {names.RUNTIME_SCOPED_SH_KEY}: the controller leaves it out "
                "when its longer names would break runtime.sh's size limits (source runtime.sh alone), or "
                "a fluid-controller older than this plugin wrote the ConfigMap"
            )
        return text
    text = config_text(configmap, names.RUNTIME_SH_KEY)
    if text is None:
        raise CliError(f"ConfigMap {cm_name} has no key {names.RUNTIME_SH_KEY}; is fluid-controller running?")
    return text


def read_configmap(session: Session, dataset: str) -> dict[str, Any]:
    """The dataset's ConfigMap; missing, an error saying whether the dataset or its config is."""
    from kubectl_fluid.api import names
    from kubectl_fluid.kube import resources

    api, ns = session.api, session.namespace
    configmap = api.get(resources.CONFIGMAPS.object_path(ns, names.runtime_config_configmap(dataset)))
    if configmap is not None:
        return configmap
    from kubectl_fluid.api.datasetrefs import configmap_problem, deepest_problem, not_ready_cause
    from kubectl_fluid.cli.checks import not_found, what_to_do

    found = api.get(resources.DATASETS.object_path(ns, dataset))
    if found is None:
        hint = "check the name, or find its namespace with kubectl fluid datasets -A"
        raise CliError(not_found(api, f'dataset "{dataset}"', ns, hint))
    problem = deepest_problem(dataset, configmap_problem(dataset, None), not_ready_cause(found)) or ""
    raise CliError(f"{problem}: {what_to_do(problem, ns)}")


def env_entries(dataset: str, configmap: dict[str, Any] | None) -> list[dict[str, str]]:
    """The env vars the webhook gives every app container of a pod using ``dataset`` (SPEC §4), with
    ``configmap`` its runtime config (which says whether runtime-scoped.sh is there to point at)."""
    from kubectl_fluid.api.datasetrefs import config_env

    return [{"name": name, "value": path} for name, path in config_env(dataset, configmap)]


def pretty_json(text: str) -> str:
    import json

    # kubectl's indent, as every verb's JSON (output.py), in the stored order (the controller's).
    return json.dumps(json.loads(text), indent=4, ensure_ascii=False) + "\n"


def config_text(configmap: dict[str, Any], key: str) -> str | None:
    """A key of the ConfigMap, from ``data`` or (base64) ``binaryData``."""
    value = (configmap.get("data") or {}).get(key)
    if value is None and key in (configmap.get("binaryData") or {}):
        import base64

        value = base64.b64decode(configmap["binaryData"][key]).decode()
    return value if isinstance(value, str) else None
