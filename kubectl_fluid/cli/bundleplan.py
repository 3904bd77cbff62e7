"""What ``kubectl fluid bundle`` puts in its archive, and where (pure): a plan of files from a
``Snapshot`` of the datasets' scope and one of the product's namespace, and the bytes of each file,
redacted (``kubectl_fluid/redact.py``) on the one way out, ``content()``, so nothing reaches the
archive unredacted.

The tree, under one folder named like the archive (``LAYOUT`` is the --help's and the README's text):

    README.txt                     when, what scope, what could not be read, what was redacted
    versions.yaml                  plugin, API server, the product's components
    diagnose.json                  diagnose's DiagnoseReport of the datasets (its webhook probe not made)
    cluster/                       nodes.yaml (labels, taints, status without images), csinodes.yaml,
                                   fusemounts.yaml, mutatingwebhookconfigurations.yaml (the product's)
    fluid-system/                  pods.yaml, events.yaml (the product's namespace)
    namespaces/NS/events.yaml      the events of each namespace with datasets in scope
    namespaces/NS/datasets/DS/     dataset, cacheruntime, cacheruntimeclass, configmap,
                                   persistentvolume, persistentvolumeclaim (.yaml each), workloads.yaml
                                   (StatefulSets, DaemonSet), pods.yaml (the runtime's), app-pods.yaml,
                                   fusemounts.yaml, dataloads.yaml, events.yaml (of all of these)
    logs/NS/POD/CONTAINER.log      current log (last 10,000 lines, at most 5 MiB)
    logs/NS/POD/CONTAINER.previous.log   the one before, when the container restarted

Never read, so never written: Secrets (an env value from a Secret shows as its secretKeyRef), the
kubeconfig. Objects lose ``managedFields`` as ``kubectl get -o yaml`` shows them; Nodes keep their
labels, taints and status but not their image lists.

``EXTRAS`` are files computed from the same snapshot by other verbs (``diagnose.json``): each
function gets the snapshot and the datasets and returns entries.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.output import as_list
from kubectl_fluid.cli.snapshot import Obj, Snapshot, event_time, key, name_of

LAYOUT = __doc__.split("\n\n")[2] if __doc__ else ""

LOG_LINES = 10_000
LOG_BYTES = 5 * 1024 * 1024
PREVIOUS_SUFFIX = ".previous.log"


@dataclass(frozen=True)
class Entry:
    """One file of the archive: ``path`` under its folder, and what it holds (an object or list for a
    ``.yaml``/``.json`` path, text otherwise)."""

    path: str
    data: Any


@dataclass(frozen=True)
class LogRequest:
    """A container's log to fetch into ``path``."""

    path: str
    namespace: str
    pod: str
    container: str
    previous: bool


@dataclass
class Plan:
    entries: list[Entry] = field(default_factory=list)
    logs: list[LogRequest] = field(default_factory=list)
    # What the README says was not there (a dataset without its runtime, …).
    missing: list[str] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [e.path for e in self.entries] + [r.path for r in self.logs]


Extra = Callable[[Snapshot, Sequence[tuple[str, str]]], Iterable[Entry]]


def diagnosis(snap: Snapshot, datasets: Sequence[tuple[str, str]]) -> Iterable[Entry]:
    """``diagnose.json``: diagnose's report over the bundled datasets, from the same snapshot (the
    webhook probe, a dry-run create, is not made: bundle only reads, so that rule is listed skipped)."""
    import dataclasses

    from kubectl_fluid.cli import rules
    from kubectl_fluid.cli.rules.finding import Scope
    from kubectl_fluid.cli.rules.report import run, to_json
    from kubectl_fluid.cli.snapshot import NOT_PROBED, PROBE

    unprobed = dataclasses.replace(snap, unreadable={PROBE: NOT_PROBED, **snap.unreadable})
    report = run(unprobed, Scope(datasets=tuple(datasets)), rules.all_rules())
    yield Entry("diagnose.json", to_json(report))


# Files computed from the same snapshot by other verbs.
EXTRAS: list[Extra] = [diagnosis]


def trimmed(obj: Mapping[str, Any]) -> Obj:
    """The object as ``kubectl get -o yaml`` shows it: no managedFields."""
    out = copy.deepcopy(dict(obj))
    (out.get("metadata") or {}).pop("managedFields", None)
    return out


def trimmed_node(node: Mapping[str, Any]) -> Obj:
    """A Node's identity, labels, taints and status; its image list (often the bulk of it) left out."""
    out = trimmed(node)
    (out.get("status") or {}).pop("images", None)
    return out


def in_scope(snap: Snapshot, dataset: tuple[str, str] | None) -> list[tuple[str, str]]:
    """(namespace, name) of the datasets to bundle: the one named, else every one the snapshot has."""
    if dataset is not None:
        return [dataset]
    return sorted(key(d) for d in snap.items("datasets"))


def product_webhooks(configs: Iterable[Obj]) -> list[Obj]:
    """The product's MutatingWebhookConfigurations (others' say nothing about Fluid)."""
    return [c for c in configs if name_of(c) == names.WEBHOOK_NAME]


def container_logs(pod: Mapping[str, Any], folder: str) -> list[LogRequest]:
    """Each container's current log, and its previous one when it restarted (init containers too:
    a failing init container is often the story)."""
    meta = pod.get("metadata") or {}
    namespace, pod_name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = {
        str(s.get("name")): s
        for s in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    }
    requests = []
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        name = str(container.get("name") or "")
        base = f"{folder}/{namespace}/{pod_name}/{name}"
        requests.append(LogRequest(f"{base}.log", namespace, pod_name, name, previous=False))
        s = statuses.get(name) or {}
        if int(s.get("restartCount") or 0) > 0 or (s.get("lastState") or {}).get("terminated"):
            requests.append(LogRequest(f"{base}{PREVIOUS_SUFFIX}", namespace, pod_name, name, previous=True))
    return requests


def plan(
    snap: Snapshot,
    system: Snapshot,
    datasets: Sequence[tuple[str, str]],
    versions: Mapping[str, Any],
    extras: Sequence[Extra] = (),
) -> Plan:
    """The files of a bundle of ``datasets`` (from ``snap``), the product's namespace (``system``:
    its pods and events) and the cluster-scoped kinds (from ``snap``)."""
    out = Plan()
    add = out.entries.append
    add(Entry("versions.yaml", dict(versions)))
    add(Entry("cluster/nodes.yaml", as_list([trimmed_node(n) for n in snap.items("nodes")])))
    add(Entry("cluster/csinodes.yaml", as_list([trimmed(n) for n in snap.items("csinodes")])))
    add(Entry("cluster/fusemounts.yaml", as_list([trimmed(m) for m in snap.items("fusemounts")])))
    webhooks = product_webhooks(snap.items("mutatingwebhookconfigurations"))
    add(Entry("cluster/mutatingwebhookconfigurations.yaml", as_list([trimmed(w) for w in webhooks])))

    system_pods = sorted(system.items("pods"), key=name_of)
    add(Entry(f"{names.FLUID_NAMESPACE}/pods.yaml", as_list([trimmed(p) for p in system_pods])))
    add(Entry(f"{names.FLUID_NAMESPACE}/events.yaml", as_list(_events(system.items("events")))))
    for pod in system_pods:
        out.logs += container_logs(pod, "logs")

    for namespace in sorted({ns for ns, _ in datasets}):
        events = [e for e in snap.items("events") if key(e)[0] == namespace]
        add(Entry(f"namespaces/{namespace}/events.yaml", as_list(_events(events))))
    for namespace, name in datasets:
        _dataset(snap, namespace, name, out)

    for extra in extras:
        out.entries += list(extra(snap, datasets))
    return out


def _dataset(snap: Snapshot, namespace: str, name: str, out: Plan) -> None:
    folder = f"namespaces/{namespace}/datasets/{name}"
    dataset = snap.dataset(namespace, name)
    runtime = snap.runtime(namespace, name)
    configmap, pv = names.runtime_config_configmap(name), names.dataset_pv(namespace, name)
    singles: list[tuple[str, Obj | None, str]] = [
        ("dataset", dataset, f"Dataset {namespace}/{name}"),
        ("cacheruntime", runtime, f"CacheRuntime {namespace}/{name}"),
        ("cacheruntimeclass", snap.runtime_class(runtime), f"the CacheRuntimeClass of {namespace}/{name}"),
        (
            "configmap",
            snap.configmap(namespace, name),
            f"ConfigMap {namespace}/{configmap}",
        ),
        (
            "persistentvolume",
            snap.pv(namespace, name),
            f"PersistentVolume {pv}",
        ),
        ("persistentvolumeclaim", snap.pvc(namespace, name), f"PersistentVolumeClaim {namespace}/{name}"),
    ]
    involved: list[Obj] = []
    for file, obj, what in singles:
        if obj is None:
            out.missing.append(what)
            continue
        involved.append(obj)
        out.entries.append(Entry(f"{folder}/{file}.yaml", trimmed(obj)))
    workloads = sorted(snap.component_workloads(namespace, name), key=name_of)
    pods = sorted(snap.component_pods(namespace, name), key=name_of)
    app_pods = sorted(snap.app_pods(namespace, name), key=name_of)
    fusemounts = snap.fusemounts(namespace, name)
    dataloads = sorted(snap.dataloads(namespace, name), key=name_of)
    for file, items in (
        ("workloads", workloads),
        ("pods", pods),
        ("app-pods", app_pods),
        ("fusemounts", fusemounts),
        ("dataloads", dataloads),
    ):
        out.entries.append(Entry(f"{folder}/{file}.yaml", as_list([trimmed(o) for o in items])))
        involved += items
    out.entries.append(Entry(f"{folder}/events.yaml", as_list(_events(snap.events_for(involved)))))
    for pod in pods:
        out.logs += container_logs(pod, "logs")


def _events(events: Iterable[Obj]) -> list[Obj]:
    return [trimmed(e) for e in sorted(events, key=event_time)]


def content(entry: Entry) -> bytes:
    """The file's bytes, redacted: the only way an entry becomes bytes."""
    from kubectl_fluid.redact import redact, redact_object

    if entry.path.endswith(".yaml"):
        from kubectl_fluid.cli.output import dump_yaml

        return dump_yaml(redact_object(entry.data)).encode()
    if entry.path.endswith(".json"):
        from kubectl_fluid.cli.output import dump_json

        return dump_json(redact_object(entry.data)).encode()
    return redact(str(entry.data)).encode()


def log_content(raw: bytes) -> bytes:
    """A container's log, redacted (as text: a log's bytes that are not UTF-8 are replaced)."""
    from kubectl_fluid.redact import redact

    return redact(raw.decode("utf-8", "replace")).encode()


def readme(
    *,
    created: str,
    plugin: str,
    context: str,
    scope: str,
    unreadable: Mapping[str, str],
    missing: Sequence[str],
    failed_logs: Sequence[str],
) -> str:
    lines = [
        "A support bundle of Fluid (kubectl fluid bundle).",
        "",
        f"created   {created}",
        f"plugin    kubectl-fluid {plugin}",
        f"context   {context}",
        f"scope     {scope}",
        "",
        "Layout:",
        LAYOUT,
        "",
        "Redacted: values of keys that name a credential (password, secret, token, access key, …),",
        "bearer tokens, JWTs, AWS access key ids and PEM private keys, in logs and objects alike,",
        "show as ******. Secrets and the kubeconfig are never read.",
    ]
    if unreadable:
        lines += ["", "Could not be read (listed as empty):"]
        lines += [f"  {kind}: {why}" for kind, why in sorted(unreadable.items())]
    if missing:
        lines += ["", "Not found:"] + [f"  {m}" for m in missing]
    if failed_logs:
        lines += ["", "Logs not fetched:"] + [f"  {f}" for f in failed_logs]
    return "\n".join(lines) + "\n"
