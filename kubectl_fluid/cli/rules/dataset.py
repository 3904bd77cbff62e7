"""Rules about a Dataset and what it is bound to: its phase, its CacheRuntime and class, its DataLoads.

A Dataset without its CacheRuntime, or whose CacheRuntime names a class that does not exist, is
reported by that cause alone; ``dataset-not-bound`` is for a Dataset whose parts are there and which
the controller still did not bind (its Ready condition says why).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.api.datasetrefs import NOT_BOUND
from kubectl_fluid.cli.rules.finding import Finding, ObjectRef, Rule, Scope
from kubectl_fluid.cli.rules.needs import rule
from kubectl_fluid.cli.snapshot import Snapshot, name_of

BOUND = "Bound"


def condition(obj: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    """The status condition of type ``kind``, if any."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return dict(c)
    return None


def condition_line(what: str, c: Mapping[str, Any]) -> str:
    """``Dataset status.conditions[Ready]: False, reason X: message``."""
    message = " ".join(str(c.get("message") or "").split())
    reason = f", reason {c['reason']}" if c.get("reason") else ""
    return f"{what} status.conditions[{c.get('type')}]: {c.get('status')}{reason}" + (
        f": {message}" if message else ""
    )


def _dataset_ref(namespace: str, name: str) -> ObjectRef:
    return ObjectRef("Dataset", name, namespace)


@rule("runtime-missing", "cacheruntimes")
def runtime_missing(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    for ns, name in scope.dataset_keys(snap):
        if snap.dataset(ns, name) is None or snap.runtime(ns, name) is not None:
            continue
        yield Finding(
            "runtime-missing",
            "error",
            _dataset_ref(ns, name),
            f'no CacheRuntime "{name}": a Dataset is bound to the CacheRuntime of its own name',
            (f"CacheRuntime {ns}/{name}: not found (kubectl get cacheruntimes -n {ns})",),
            f'create a CacheRuntime named "{name}" in {ns} (its spec.runtimeClassName naming a '
            "CacheRuntimeClass), or check the Dataset's name",
        )


@rule("runtime-class-missing", "cacheruntimes", "cacheruntimeclasses")
def runtime_class_missing(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    for ns, name in scope.dataset_keys(snap):
        runtime = snap.runtime(ns, name)
        if runtime is None or snap.runtime_class(runtime) is not None:
            continue
        class_name = (runtime.get("spec") or {}).get("runtimeClassName")
        evidence = (
            f"CacheRuntime {ns}/{name} spec.runtimeClassName: {class_name}"
            if class_name
            else f"CacheRuntime {ns}/{name} spec.runtimeClassName: <none>",
            f"CacheRuntimeClass {class_name or '<none>'}: not found (kubectl get cacheruntimeclasses)",
        )
        yield Finding(
            "runtime-class-missing",
            "error",
            ObjectRef("CacheRuntime", name, ns),
            f'its CacheRuntimeClass "{class_name or ""}" does not exist, so no component can be made',
            evidence,
            "create the CacheRuntimeClass (manifests/samples/ has Curvine's), or set "
            "spec.runtimeClassName to one that exists",
        )


@rule("dataset-not-bound", "cacheruntimes", "cacheruntimeclasses")
def dataset_not_bound(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    for ns, name in scope.dataset_keys(snap):
        dataset = snap.dataset(ns, name)
        if dataset is None:
            continue
        phase = str((dataset.get("status") or {}).get("phase") or "")
        runtime = snap.runtime(ns, name)
        if phase == BOUND or runtime is None or snap.runtime_class(runtime) is None:
            continue  # bound, or runtime-missing / runtime-class-missing names the cause
        evidence = [f"Dataset {ns}/{name} status.phase: {phase or '<none>'}"]
        ready = condition(dataset, names.CONDITION_READY)
        if ready is not None:
            evidence.append(condition_line("Dataset", ready))
        advice = (
            "the controller has not reconciled it: check that fluid-controller runs "
            f"(kubectl get pods -n {names.FLUID_NAMESPACE}) and its logs"
            if not phase
            else "fix what the Ready condition names; the controller binds it on its next pass"
        )
        yield Finding(
            "dataset-not-bound",
            "error",
            _dataset_ref(ns, name),
            f"the Dataset is {phase or 'not set up'} (not {BOUND}): pods cannot use it yet"
            if phase == NOT_BOUND or not phase
            else f"the Dataset is {phase}, not {BOUND}: pods cannot use it yet",
            tuple(evidence),
            advice,
        )


@rule("dataload-failed", "dataloads")
def dataload_failed(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    for ns, name in scope.dataset_keys(snap):
        for load in snap.dataloads(ns, name):
            status = load.get("status") or {}
            if status.get("phase") != names.PHASE_FAILED:
                continue
            load_name = name_of(load)
            evidence = [f"DataLoad {ns}/{load_name} status.phase: {names.PHASE_FAILED}"]
            failed = condition(load, names.PHASE_FAILED)
            if failed is not None:
                evidence.append(condition_line("DataLoad", failed))
            job = names.dataload_job(load_name)
            evidence.append(f"its loader Job: {ns}/{job}")
            yield Finding(
                "dataload-failed",
                "error",
                ObjectRef(names.KIND_DATALOAD, load_name, ns),
                f'the DataLoad of dataset "{name}" failed',
                tuple(evidence),
                f"read the loader's log (kubectl logs -n {ns} job/{job}), fix the cause, then delete "
                f"the DataLoad and create it again (kubectl fluid load {name} -n {ns})",
            )


RULES: list[Rule] = [runtime_missing, runtime_class_missing, dataset_not_bound, dataload_failed]
