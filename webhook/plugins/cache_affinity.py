"""NodeAffinityWithCache, PreferNodesWithoutCache and RequireNodeWithFuse (SPEC §7 "Cache placement"):
upstream's plugins that steer a pod using a Dataset's PVC toward the nodes caching it, one without
toward the others, and a pod with datasets away from nodes where their FUSE may not run.

The nodes come from the controller's cache-node labels (``controller/cachelabels.py``). The plugin's
args are upstream's ``TieredLocality``, given in the profile's ``pluginConfig``::

    preferred: [{name: fluid.io/node, weight: 100}]   # prefer the nodes of the dataset's workers
    required: [fluid.io/node]                          # what a pod that asks to require gets

Two localities are built in: ``fluid.io/node`` (the node label ``fluid.io/s-{ns}-{name}``) and
``fluid.io/fuse`` (``fluid.io/f-{ns}-{name}``, where the dataset's FUSE runs). Any other name is a
node label key (upstream's ``topology.kubernetes.io/zone``…) matched against the workers' required
node affinity, as upstream matches it against the runtime's ``status.cacheAffinity``; here that is the
Dataset's ``nodeAffinity.required``, which the controller puts on the workers (``worker_terms``).
A pod asks to *require* a dataset's nodes with the label
``fluid.io/dataset.{name}.sched: required``; every other dataset is preferred. A pod whose own
affinity or nodeSelector already names one of the localities is left as it is (upstream's
hasRepeatedLocality).

Never a pod admitted without what it asked for: one that asks to require the nodes of a dataset it
does not use, or that asks while the profile requires nothing, is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from kubectl_fluid.api import names
from webhook.errors import Denied, ProfileError
from webhook.nodeaffinity import (
    add_preferred,
    add_required,
    add_required_any,
    label_absent,
    label_in,
    mentions,
    preferred_term,
)
from webhook.plugins.base import Context

# Upstream's weight of a preferred term toward nodes without cache (PreferNodesWithoutCache).
WITHOUT_CACHE_WEIGHT: Final = 100


def _node_label(namespace: str, dataset: str) -> str:
    return names.cache_node_label(namespace, dataset)


def _fuse_label(namespace: str, dataset: str) -> str:
    return names.fuse_node_label(namespace, dataset)


# Upstream's fluidBuiltInAffinities, in its order: each locality's node label of a dataset.
BUILT_IN = {names.LOCALITY_NODE: _node_label, names.LOCALITY_FUSE: _fuse_label}


@dataclass(frozen=True, slots=True)
class TieredLocality:
    """Upstream's args: preferred localities with their weights, the required localities."""

    preferred: tuple[tuple[str, int], ...] = ((names.LOCALITY_NODE, 100),)
    required: tuple[str, ...] = (names.LOCALITY_NODE,)

    def names(self) -> set[str]:
        return {name for name, _ in self.preferred} | set(self.required)

    def topology(self) -> list[str]:
        """The localities given that are not built in: node label keys of the workers' affinity."""
        return sorted(self.names() - set(BUILT_IN))


def _weight(value: Any, where: str) -> int:
    # A preferred term's weight must be 1..100 (the API server refuses the pod otherwise).
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise ProfileError(f"plugin profile: {where} weight must be an integer from 1 to 100, not {value!r}")
    return value


def parse_locality(args: str, where: str = "NodeAffinityWithCache args") -> TieredLocality:
    """Upstream's TieredLocality YAML; raises ProfileError on anything else."""
    try:
        document = yaml.safe_load(args) if args else None
    except yaml.YAMLError as error:
        raise ProfileError(f"plugin profile: {where} is not valid YAML: {error}") from error
    document = document or {}
    if not isinstance(document, dict) or set(document) - {"preferred", "required"}:
        raise ProfileError(f"plugin profile: {where} takes only 'preferred' and 'required'")
    preferred = []
    for item in document.get("preferred") or ():
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or set(item) - {"name", "weight"}
        ):
            raise ProfileError(f"plugin profile: {where}: each preferred locality is {{name, weight}}")
        preferred.append((item["name"], _weight(item.get("weight"), f"{where}: {item['name']}")))
    required = document.get("required") or []
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise ProfileError(f"plugin profile: {where}: required is a list of locality names")
    return TieredLocality(tuple(preferred), tuple(required))


def required_datasets(pod: Mapping[str, Any]) -> list[str]:
    """The datasets whose cache nodes the pod requires (``fluid.io/dataset.{name}.sched: required``)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    found = []
    for key, value in labels.items():
        dataset = names.sched_label_dataset(key)
        if dataset is not None and value == names.SCHED_REQUIRED:
            found.append(dataset)
    return sorted(found)


def _refuse_unused(asked: Iterable[str], used: list[str], namespace: str) -> None:
    unused = [ds for ds in asked if ds not in used]
    if not unused:
        return
    ds = unused[0]
    uses = f"it uses {', '.join(used)}" if used else "it uses no Dataset's PVC"
    raise Denied(
        f'pod asks to run only where dataset "{ds}" is cached ({names.pod_sched_label(ds)}: '
        f'{names.SCHED_REQUIRED}) but mounts no PVC of dataset "{ds}" in namespace "{namespace}" '
        f"({uses}): mount its PVC or remove the label"
    )


class NodeAffinityWithCache:
    name: Final = "NodeAffinityWithCache"

    def __init__(self, locality: TieredLocality | None = None) -> None:
        self.locality = locality or TieredLocality()

    @classmethod
    def from_args(cls, args: str) -> NodeAffinityWithCache:
        return cls(parse_locality(args))

    def mutate(self, pod: dict[str, Any], ctx: Context) -> None:
        asked = required_datasets(pod)
        _refuse_unused(asked, ctx.datasets, ctx.namespace)
        if mentions(pod, self.locality.names()):
            return  # the pod chose its own locality
        required = [name for name in self.locality.required if name in BUILT_IN]
        if asked and not required:
            label = names.pod_sched_label(asked[0])
            raise Denied(
                f'pod asks to run only where dataset "{asked[0]}" is cached ({label}: '
                f"{names.SCHED_REQUIRED}), but the webhook's plugin profile requires no locality "
                f"(NodeAffinityWithCache args.required lists none of {', '.join(BUILT_IN)}): ask the "
                "cluster's operator, or remove the label"
            )
        expressions = [
            label_in(BUILT_IN[locality](ctx.namespace, ds), names.TRUE)
            for ds in asked
            for locality in required
        ]
        add_required(pod, expressions)
        topology = set(self.locality.required) - set(BUILT_IN)
        for ds in asked:
            add_required_any(pod, required_topology(worker_terms(ctx, ds), topology))
        weights = dict(self.locality.preferred)
        terms = []
        for ds in ctx.datasets:
            if ds in asked:
                continue
            terms += [
                preferred_term(weight, [label_in(BUILT_IN[locality](ctx.namespace, ds), names.TRUE)])
                for locality, weight in self.locality.preferred
                if locality in BUILT_IN
            ]
            terms += preferred_topology(worker_terms(ctx, ds), weights)
        add_preferred(pod, terms)


def worker_terms(ctx: Context, dataset: str) -> list[dict[str, Any]]:
    """The required node selector terms of the dataset's workers, as far as the webhook can see them:
    the Dataset's ``nodeAffinity.required`` (the controller puts them on the worker; upstream reads the
    worker's affinity from the runtime's ``status.cacheAffinity``, which stays empty here)."""
    found = ctx.lookup.dataset(ctx.namespace, dataset) or {}
    required = ((found.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    return [t for t in required.get("nodeSelectorTerms") or () if isinstance(t, dict)]


def preferred_topology(terms: list[dict[str, Any]], weights: Mapping[str, int]) -> list[dict[str, Any]]:
    """Upstream's getPreferredSchedulingTermsFromRequired: each worker expression on a locality key of
    the preferred list (``topology.kubernetes.io/zone``…) becomes a preferred term of its weight."""
    return [
        preferred_term(weights[e["key"]], [dict(e)])
        for term in terms
        for e in term.get("matchExpressions") or ()
        if e.get("key") in weights and e.get("key") not in BUILT_IN
    ]


def required_topology(terms: list[dict[str, Any]], keys: set[str]) -> list[list[dict[str, Any]]]:
    """The workers' terms narrowed to the locality keys of the required list, as alternatives (the
    terms are ORed); none when a term has no such key, since the workers may then run anywhere."""
    alternatives = [[dict(e) for e in t.get("matchExpressions") or () if e.get("key") in keys] for t in terms]
    if not alternatives or not all(alternatives):
        return []
    return alternatives


class PreferNodesWithoutCache:
    """For a pod without datasets: prefer nodes where no dataset is cached (no
    ``fluid.io/dataset-num``), weight 100, as upstream."""

    name: Final = "PreferNodesWithoutCache"

    def mutate(self, pod: dict[str, Any], ctx: Context) -> None:
        _refuse_unused(required_datasets(pod), ctx.datasets, ctx.namespace)
        if ctx.datasets:
            return
        add_preferred(pod, [preferred_term(WITHOUT_CACHE_WEIGHT, [label_absent(names.LABEL_DATASET_NUM)])])


def fuse_node_selector(runtime: Mapping[str, Any] | None) -> dict[str, str]:
    """Where the runtime's client (the dataset's FUSE) may run: its ``spec.client.nodeSelector``
    (upstream's GetFuseNodeSelector); nothing for a runtime not known or whose client is disabled."""
    client = ((runtime or {}).get("spec") or {}).get("client") or {}
    if client.get("disabled"):
        return {}
    selector = client.get("nodeSelector") or {}
    return {str(k): str(v) for k, v in selector.items()}


class RequireNodeWithFuse:
    """For a pod with datasets: require the nodes where each dataset's FUSE may run, so that a pod
    never lands where its client cannot start and waits there in ContainerCreating (upstream's plugin:
    the runtime's ``client.nodeSelector`` as required terms). Nothing when no runtime restricts its
    client. Read from the webhook's watch cache of CacheRuntimes."""

    name: Final = "RequireNodeWithFuse"

    def mutate(self, pod: dict[str, Any], ctx: Context) -> None:
        expressions = [
            label_in(key, value)
            for ds in ctx.datasets
            for key, value in sorted(fuse_node_selector(ctx.lookup.runtime(ctx.namespace, ds)).items())
        ]
        add_required(pod, expressions)
