"""``kubectl fluid datasets``: each Dataset with what an operator asks first: which runtime class,
clientless or FUSE, bound or not, is its runtime config ready, how many pods carry it.

Four lists (Datasets, CacheRuntimes, the controller's ConfigMaps, injected Pods), joined here by name.
Only the Datasets are required; a list RBAC forbids becomes ``<unknown>`` cells and a warning.

Decisions: MODE comes from the rendered runtime.json (a client component present → FUSE, absent →
Clientless), else from the CacheRuntime (``client.disabled: true`` → Clientless), else ``<unknown>``
(whether the class defines a client decides, and the config is not rendered yet). INJECTED-PODS
counts pods that carry the dataset's runtime-config volume, i.e. what the webhook did, not what pods
asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

CLIENTLESS = "Clientless"
FUSE = "FUSE"
Key = tuple[str, str]
T = TypeVar("T")


@dataclass(frozen=True)
class Summary:
    namespace: str
    name: str
    runtime_class: str | None
    mode: str | None
    phase: str | None
    config_ready: bool | None  # None: could not read ConfigMaps
    config_problem: str | None
    injected_pods: list[str] | None  # None: could not read pods
    mount_points: list[str]
    created: str | None

    def to_json(self) -> dict[str, Any]:
        """A DatasetSummary (``names.KIND_DATASET_SUMMARY``): the Dataset's name, namespace and
        creation time in ``metadata`` as in the Dataset, the columns beside it."""
        from kubectl_fluid.api import names

        metadata = {"name": self.name, "namespace": self.namespace, "creationTimestamp": self.created}
        return {
            "apiVersion": names.CLI_API_VERSION,
            "kind": names.KIND_DATASET_SUMMARY,
            "metadata": metadata,
            "runtimeClass": self.runtime_class,
            "mode": self.mode,
            "phase": self.phase,
            "configReady": self.config_ready,
            "configProblem": self.config_problem,
            "injectedPods": self.injected_pods,
            "mountPoints": self.mount_points,
        }


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def mode_of(runtime: Mapping[str, Any] | None, configmap: Mapping[str, Any] | None) -> str | None:
    import json

    from kubectl_fluid.api import names

    rendered = ((configmap or {}).get("data") or {}).get(names.RUNTIME_JSON_KEY)
    if rendered:
        try:
            client = json.loads(rendered).get("client")
        except (ValueError, AttributeError):
            client = None
        else:
            return FUSE if isinstance(client, dict) and client.get("enabled") else CLIENTLESS
    client_spec = ((runtime or {}).get("spec") or {}).get("client")
    if isinstance(client_spec, dict) and client_spec.get("disabled"):
        return CLIENTLESS
    return None


def injected_by_dataset(pods: Iterable[Mapping[str, Any]]) -> dict[Key, list[str]]:
    """The names of the pods that carry each (namespace, dataset)'s runtime config. Only these
    names are kept of each pod: thousands of pods need not be held in memory at once."""
    from kubectl_fluid.cli.podview import injected_datasets

    injected: dict[Key, list[str]] = {}
    for pod in pods:
        ns, pod_name = _key(pod)
        for dataset in injected_datasets(pod):
            injected.setdefault((ns, dataset), []).append(pod_name)
    return injected


def summarize(
    datasets: Sequence[Mapping[str, Any]],
    runtimes: Sequence[Mapping[str, Any]] | None,
    configmaps: Sequence[Mapping[str, Any]] | None,
    injected: Mapping[Key, Sequence[str]] | None,
) -> list[Summary]:
    """One summary per Dataset, sorted by namespace and name. ``None`` were unreadable; ``injected``
    is ``injected_by_dataset``'s."""
    from kubectl_fluid.api import names
    from kubectl_fluid.api.datasetrefs import configmap_problem, deepest_problem, not_ready_cause

    by_runtime = {_key(r): r for r in runtimes or ()}
    by_configmap = {_key(c): c for c in configmaps or ()}
    out = []
    for ds in datasets:
        ns, name = _key(ds)
        runtime = by_runtime.get((ns, name))
        configmap = by_configmap.get((ns, names.runtime_config_configmap(name)))
        problem = (
            None
            if configmaps is None
            else deepest_problem(name, configmap_problem(name, configmap), not_ready_cause(ds))
        )
        out.append(
            Summary(
                namespace=ns,
                name=name,
                runtime_class=((runtime or {}).get("spec") or {}).get("runtimeClassName"),
                mode=mode_of(runtime, configmap),
                # kubectl's word for an object whose deletion waits (on its finalizer: pods still use it).
                phase="Terminating"
                if (ds.get("metadata") or {}).get("deletionTimestamp")
                else (ds.get("status") or {}).get("phase"),
                config_ready=None if configmaps is None else problem is None,
                config_problem=problem,
                injected_pods=None if injected is None else sorted(injected.get((ns, name), ())),
                mount_points=[
                    str(m.get("mountPoint", "")) for m in (ds.get("spec") or {}).get("mounts") or ()
                ],
                created=(ds.get("metadata") or {}).get("creationTimestamp"),
            )
        )
    return sorted(out, key=lambda s: (s.namespace, s.name))


def headers(all_namespaces: bool, wide: bool) -> list[str]:
    cols = ["NAME", "RUNTIMECLASS", "MODE", "PHASE", "CONFIG-READY", "INJECTED-PODS", "AGE"]
    if wide:
        cols += ["MOUNTPOINTS", "CONFIG-PROBLEM"]
    return (["NAMESPACE"] if all_namespaces else []) + cols


def row(s: Summary, now: datetime, all_namespaces: bool, wide: bool) -> list[str]:
    from kubectl_fluid.cli.table import UNKNOWN, age, cell

    cells = [
        s.name,
        cell(s.runtime_class),
        s.mode or UNKNOWN,
        cell(s.phase),
        UNKNOWN if s.config_ready is None else str(s.config_ready),
        UNKNOWN if s.injected_pods is None else str(len(s.injected_pods)),
        age(s.created, now),
    ]
    if wide:
        cells += [cell(",".join(s.mount_points)), cell(s.config_problem)]
    return ([s.namespace] if all_namespaces else []) + cells


@click.command(epilog="\b\nExamples:\n  kubectl fluid datasets\n  kubectl fluid datasets -A -o wide")
@kube_command(outputs=("json", "yaml", "wide", "name"), lists=True)
def datasets(settings: Settings) -> None:
    """List datasets and whether pods can use them.

    Runtime class, clientless or FUSE, phase, runtime config readiness, and the number of pods
    that carry its runtime config.

    \b
    RUNTIMECLASS   spec.runtimeClassName of the dataset's CacheRuntime
    MODE           Clientless (no FUSE client: inject the runtime config) or FUSE
    PHASE          the Dataset's status.phase (Bound once its runtime is set up), Terminating
                   while its deletion waits (pods still use it)
    CONFIG-READY   whether ConfigMap fluid-runtime-config-NAME holds runtime.sh (never for a
                   NotBound Dataset: its config is not to be trusted)
    INJECTED-PODS  pods that carry the dataset's runtime config (what the webhook did)
    -o wide adds MOUNTPOINTS and CONFIG-PROBLEM (why CONFIG-READY is false: the controller's own
    cause when it knows one, a CacheRuntimeClass not found say, else what is wrong with the ConfigMap).

    -o json|yaml prints a v1 List of DatasetSummary objects (apiVersion cli.fluid.io/v1alpha1,
    the plugin's own: no API server serves it): metadata {name, namespace, creationTimestamp} as
    the Dataset's, then runtimeClass, mode, phase, configReady, configProblem, injectedPods (names),
    mountPoints; null where the table shows <unknown>.

    Only the Datasets are required: a list RBAC forbids (CacheRuntimes, ConfigMaps, Pods) turns
    its columns into <unknown>, with a warning naming it.
    """
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.output import as_list, dump, nothing_found, write
    from kubectl_fluid.cli.table import render
    from kubectl_fluid.kube import resources
    from kubectl_fluid.kube.transport import POD_NAMES_AND_VOLUMES

    session = settings.open()
    ns = None if settings.all_namespaces else session.namespace
    api = session.api
    with api:
        items = api.list(resources.DATASETS.collection_path(ns))
        if not items and settings.output not in ("json", "yaml"):
            nothing_found(ns)
            return
        runtimes_path = resources.CACHERUNTIMES.collection_path(ns)
        runtimes = _optional(lambda: api.list(runtimes_path), runtimes_path, "CacheRuntimes")
        configmaps_path = resources.CONFIGMAPS.collection_path(ns)
        managed = {"labelSelector": f"{names.LABEL_APP_MANAGED_BY}={names.MANAGED_BY}"}
        configmaps = _optional(
            lambda: api.list(configmaps_path, managed), configmaps_path, "runtime config ConfigMaps"
        )
        # Injected pods can be thousands (the rest of the command reads hundreds of small objects):
        # read in pages, each decoded while the server prepares the next, in protobuf reduced to
        # names and volumes (a tenth of the JSON's cost), keeping only names.
        pods_path = resources.PODS.collection_path(ns)
        done = {"labelSelector": f"{names.LABEL_INJECT_DONE}={names.TRUE}"}
        pod_pages = api.pages(pods_path, done, codec=POD_NAMES_AND_VOLUMES)
        injected = _optional(
            lambda: injected_by_dataset(pod for page in pod_pages for pod in page),
            pods_path,
            "injected pods",
        )
    summaries = summarize(items, runtimes, configmaps, injected)
    output = settings.output
    if output in ("json", "yaml"):
        write(dump(as_list([s.to_json() for s in summaries]), output))
    elif output == "name":
        write("".join(f"dataset.{names.GROUP}/{s.name}\n" for s in summaries))
    else:
        wide = output == "wide"
        now = datetime.now(UTC)
        table = [row(s, now, settings.all_namespaces, wide) for s in summaries]
        write(render(headers(settings.all_namespaces, wide), table, settings.no_headers))


def _optional(read: Callable[[], T], path: str, what: str) -> T | None:
    from kubectl_fluid.cli.errors import request_scope
    from kubectl_fluid.cli.output import warn
    from kubectl_fluid.kube.errors import ApiError

    try:
        return read()
    except ApiError as e:
        if e.code not in (403, 404):
            raise
        verb, resource, _ = request_scope("GET", path)
        warn(f"cannot {verb} {resource} ({e.reason or e.code}): columns from {what} show <unknown>")
        return None
