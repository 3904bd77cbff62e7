"""Node affinity edits on a pod's working copy: add preferred terms, add a requirement.

``spec.affinity`` is shared with the original pod (``podedit.working_copy`` does not copy it), so it
is rebuilt along the path that changes: the affinity, its nodeAffinity and the lists or selector
edited are new objects, every term already there is kept as it is.

Both edits keep what is already right, so a second run (reinvocation, or a pod created from our own
output) changes nothing: a preferred term equal to one present is not added again, and a requirement
already part of every required term is not added again.
"""

from __future__ import annotations

from typing import Any

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

Json = dict[str, Any]


def label_in(key: str, value: str) -> Json:
    """A node selector requirement: the node's label ``key`` is ``value``."""
    return {"key": key, "operator": "In", "values": [value]}


def label_absent(key: str) -> Json:
    return {"key": key, "operator": "DoesNotExist"}


def preferred_term(weight: int, expressions: list[Json]) -> Json:
    return {"weight": weight, "preference": {"matchExpressions": expressions}}


def _node_affinity(pod: Json) -> Json:
    """A copy of the pod's nodeAffinity (empty when it has none), to be stored back by ``_store``."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    return dict(affinity.get("nodeAffinity") or {})


def _store(pod: Json, node_affinity: Json) -> None:
    spec = pod.setdefault("spec", {})
    affinity = dict(spec.get("affinity") or {})
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity


def add_preferred(pod: Json, terms: list[Json]) -> None:
    """Append each of ``terms`` the pod does not already prefer (equal weight and preference)."""
    node_affinity = _node_affinity(pod)
    present = list(node_affinity.get(PREFERRED) or ())
    missing = [term for term in terms if term not in present]
    if not missing:
        return
    node_affinity[PREFERRED] = present + missing
    _store(pod, node_affinity)


def _constrains(term: Json) -> bool:
    return bool(term.get("matchExpressions") or term.get("matchFields"))


def add_required(pod: Json, expressions: list[Json]) -> None:
    """Require ``expressions`` (all of them) on top of whatever the pod requires already."""
    add_required_any(pod, [expressions])


def _has(term: Json, expressions: list[Json]) -> bool:
    have = term.get("matchExpressions") or ()
    return all(e in have for e in expressions)


def add_required_any(pod: Json, alternatives: list[list[Json]]) -> None:
    """Require one of ``alternatives`` (each a list of expressions, all of which must hold) on top of
    whatever the pod requires already.

    Required terms are ORed by the scheduler, their expressions ANDed, so each term that constrains
    anything becomes one term per alternative: the term and the alternative's expressions. Terms that
    constrain nothing match no node; when the pod has only such terms (or none) the alternatives
    become its terms (as upstream's InjectNodeSelectorTerms does). A pod each of whose terms already
    holds an alternative whole is left as it is, so a second run changes nothing."""
    alternatives = [list(a) for a in alternatives if a]
    if not alternatives:
        return
    node_affinity = _node_affinity(pod)
    selector = dict(node_affinity.get(REQUIRED) or {})
    terms = [term for term in selector.get("nodeSelectorTerms") or () if _constrains(term)]
    if terms and all(any(_has(term, a) for a in alternatives) for term in terms):
        return
    if not terms:
        combined = [{"matchExpressions": a} for a in alternatives]
    else:
        combined = []
        for term in terms:
            have = list(term.get("matchExpressions") or ())
            narrowed: list[Json] = []
            for a in alternatives:
                missing = [e for e in a if e not in have]
                one = {**term, "matchExpressions": have + missing} if missing else term
                if one not in narrowed:
                    narrowed.append(one)
            combined += narrowed
    selector["nodeSelectorTerms"] = combined
    node_affinity[REQUIRED] = selector
    _store(pod, node_affinity)


def mentions(pod: Json, keys: set[str]) -> bool:
    """Whether the pod's node affinity or nodeSelector already names one of ``keys`` (upstream's
    hasRepeatedLocality: the pod then chose its own locality, and is left to it)."""
    spec = pod.get("spec") or {}
    if keys & set(spec.get("nodeSelector") or {}):
        return True
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    for term in node_affinity.get(PREFERRED) or ():
        if any(e.get("key") in keys for e in (term.get("preference") or {}).get("matchExpressions") or ()):
            return True
    for term in (node_affinity.get(REQUIRED) or {}).get("nodeSelectorTerms") or ():
        if any(e.get("key") in keys for e in term.get("matchExpressions") or ()):
            return True
    return False
