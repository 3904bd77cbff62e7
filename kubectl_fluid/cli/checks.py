"""Questions several commands ask the cluster before they act or explain: is this dataset ready to be
injected, does this namespace exist, would the webhook see pods created here.

The readiness sentences are the webhook's own (SPEC §4), so an operator reads the same words from
``kubectl fluid inject`` as from a refused pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubectl_fluid.api import names
from kubectl_fluid.api.datasetrefs import (
    configmap_problem,
    dataset_not_found,
    deepest_problem,
    is_dataset_pvc,
    not_ready_cause,
)
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.errors import ApiError

if TYPE_CHECKING:
    from kubectl_fluid.kube.transport import Api

# Every namespace carries it (set by the API server), which is what webhook namespaceSelectors match.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def dataset_problem(api: Api, namespace: str, dataset: str, *, deleting: bool = False) -> str | None:
    """Why ``dataset`` cannot be injected in ``namespace`` now, or None (two GETs). With ``deleting``,
    a Dataset being deleted is a problem too: the webhook still admits its pods, but a new user of a
    dataset that is going away is a mistake worth stopping."""
    found = api.get(resources.DATASETS.object_path(namespace, dataset))
    if found is None:
        return dataset_not_found(dataset, namespace)
    since = (found.get("metadata") or {}).get("deletionTimestamp")
    if deleting and since:
        return f'dataset "{dataset}" is being deleted (since {since})'
    configmap = api.get(resources.CONFIGMAPS.object_path(namespace, names.runtime_config_configmap(dataset)))
    return config_problem(dataset, found, configmap)


def config_problem(dataset: str, found: Mapping[str, Any], configmap: Mapping[str, Any] | None) -> str | None:
    """Why the runtime config of the Dataset ``found`` cannot be injected, given its ConfigMap (pure;
    diagnose asks it of a snapshot)."""
    problem = configmap_problem(dataset, configmap)
    # Told by its cause when the controller knows one; a NotBound Dataset whose ConfigMap is there
    # is injected all the same (the webhook's view, which explain reports).
    return deepest_problem(dataset, problem, not_ready_cause(found)) if problem else None


def driver_claims(api: Api, namespace: str, claims: list[str]) -> list[str]:
    """The claims among ``claims`` that the CSI driver serves (``api.drivervolumes``): a Dataset's
    PVC, or a claim of its StorageClass or PV. One GET for each claim, and one for its class or PV
    when it is not a Dataset's; a missing one is not."""
    from kubectl_fluid.api import drivervolumes

    found = []
    for claim in claims:
        pvc = api.get(resources.PERSISTENT_VOLUME_CLAIMS.object_path(namespace, claim))
        if pvc is None:
            continue
        if is_dataset_pvc(pvc):
            found.append(claim)
            continue
        volume = drivervolumes.claim_volume(pvc)
        class_name = drivervolumes.claim_class(pvc)
        pv = api.get(resources.PERSISTENT_VOLUMES.object_path(None, volume)) if volume else None
        storage_class = (
            api.get(resources.STORAGE_CLASSES.object_path(None, class_name))
            if class_name and not pv
            else None
        )
        if drivervolumes.serves_claim(pvc, storage_class, pv):
            found.append(claim)
    return found


def what_to_do(problem: str, namespace: str) -> str:
    """The next step for a readiness problem."""
    if "not found in namespace" in problem:
        return f"create the Dataset in {namespace} or pick its namespace with -n (kubectl fluid datasets -A)"
    if "is being deleted" in problem:
        return (
            "pick another dataset, or create it again once it is gone (kubectl fluid datasets -n "
            + namespace
            + ")"
        )
    return (
        "check its CacheRuntime and that fluid-controller runs (kubectl fluid datasets -n " + namespace + ")"
    )


def namespace_missing(api: Api, namespace: str) -> bool:
    """True only when the namespace certainly does not exist (unreadable counts as existing)."""
    try:
        return api.get(resources.NAMESPACES.object_path(None, namespace)) is None
    except ApiError:
        return False


def not_found(
    api: Api, what: str, namespace: str, hint: str = "check the name, or the namespace (-n)"
) -> str:
    """``what`` was not found in ``namespace``: say so, or that the namespace itself is missing."""
    if namespace_missing(api, namespace):
        return f'namespace "{namespace}" not found; pass an existing namespace with -n'
    return f'{what} not found in namespace "{namespace}"; {hint}'


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    present = key in labels
    value = labels.get(str(key))
    return {
        "In": present and value in values,
        "NotIn": not present or value not in values,
        "Exists": present,
        "DoesNotExist": not present,
    }.get(str(op), False)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels; an absent or empty selector matches everything, an
    unknown operator nothing (as the API server would refuse it)."""
    if not selector:
        return True
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression_matches(e, labels) for e in selector.get("matchExpressions") or ())


def webhook_problem(api: Api, namespace: str, label: str = names.LABEL_INJECT) -> tuple[str | None, bool]:
    """(why pods labelled ``label: "true"`` created in ``namespace`` would not reach the webhook,
    whether the namespace itself is excluded). What RBAC hides gives (None, False): the plugin cannot
    tell, and says nothing rather than guess."""
    try:
        config = api.get(resources.MUTATING_WEBHOOK_CONFIGURATIONS.object_path(None, names.WEBHOOK_NAME))
    except ApiError:
        return None, False
    if config is None:
        return (
            f"the MutatingWebhookConfiguration {names.WEBHOOK_NAME} is not installed, so pods are created "
            "without their runtime config until fluid-webhook is installed",
            False,
        )
    labels: dict[str, str] = {NAMESPACE_NAME_LABEL: namespace}
    try:
        ns = api.get(resources.NAMESPACES.object_path(None, namespace))
    except ApiError:
        ns = None
    if ns is not None:
        labels.update((ns.get("metadata") or {}).get("labels") or {})
    entries = config.get("webhooks") or []
    hooks = [h for h in entries if selector_matches(h.get("objectSelector"), {label: names.TRUE})]
    if entries and not hooks:
        return (
            f"the MutatingWebhookConfiguration {names.WEBHOOK_NAME} has no entry for pods labelled "
            f"{label}={names.TRUE}, so they are created unchanged; install the current fluid-webhook "
            "manifests",
            False,
        )
    if hooks and not any(selector_matches(h.get("namespaceSelector"), labels) for h in hooks):
        return (
            f'fluid-webhook does not serve namespace "{namespace}" (its namespaceSelector excludes it)',
            True,
        )
    return None, False
