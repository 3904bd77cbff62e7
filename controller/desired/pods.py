"""The pod template of a cache component: the class's ``topology.<component>.template`` with the
runtime's overrides merged in, in upstream's order (``transform_common.go``,
``transform_{master,worker,client}.go``):

1. labels and annotations: the template's, then ``spec.<component>.podMetadata``'s (the runtime's
   win; the top-level ``spec.podMetadata`` is not used, as upstream does not use it);
2. nodeSelector: the template's, then the runtime's;
3. tolerations: the template's, the Dataset's, then the runtime's, appended;
4. the first container: the image becomes ``runtimeVersion.image:imageTag`` when both are set,
   ``imagePullPolicy`` the runtime's when set, ``resources`` are replaced when the runtime sets
   limits or requests, ``args`` replaced when it sets them (``command`` is never changed), and the env
   is the injected variables, the template's, then the runtime's (``env``);
5. the first init container gets the injected variables before its own;
then per component: worker and client their tiered store; the worker its placement (``scheduling``)
and labels; every component its volumes (``volumes``); the client a nodeSelector on the dataset's
FUSE nodes and the FUSE mount point, a hostPath mounted ``Bidirectional`` in its first container
(the container must be privileged, as the API server requires). The hostPath is the target path's
folder, where upstream's is the target path itself: a client whose FUSE died (killed, OOM-killed)
leaves a dead mount at the target path, which kubelet and the container runtime cannot stat, so a
client container could never start again there; the folder stays a plain directory.

Last, the controller's labels go on the pods (the selectors need them, so they win over the
template's), and every quantity is written in the API server's canonical form.

Decisions where upstream is silent: the template's ``metadata`` is kept (upstream's CRD would prune
it); the client DaemonSet's pods run only on nodes labelled ``fluid.io/f-{ns}-{name}: "true"``, which
nothing labels yet, so its pods wait for that label. No checksum annotation rolls pods when the
runtime config changes: the kubelet refreshes the mounted ConfigMap in place, and restarting a cache
throws its data away.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.desired.env import injected_env, merge_env
from controller.desired.labels import component_labels
from controller.desired.podspec import Json, add_mount, add_volume, first
from controller.desired.scheduling import apply_worker_affinity, worker_labels
from controller.desired.scope import Scope
from controller.desired.tieredstore import apply_tiered_store
from controller.desired.volumes import apply_volumes
from kubectl_fluid.api import names
from kubectl_fluid.api.quantity import QuantityError, canonical_quantity


def pod_template(scope: Scope, component: names.Component) -> dict[str, Any]:
    template = copy.deepcopy(scope.template(component))
    meta: Json = template.setdefault("metadata", {}) or {}
    pod: Json = template["spec"]
    spec = scope.spec(component)
    if spec.pod_metadata is not None:
        for key in ("labels", "annotations"):
            given = getattr(spec.pod_metadata, key)
            if given is not None:
                meta[key] = {**(meta.get(key) or {}), **given}
    pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **(spec.node_selector or {})}
    tolerations = [
        *(pod.get("tolerations") or []),
        *copy.deepcopy(scope.dataset.spec.tolerations or []),
        *copy.deepcopy(spec.tolerations or []),
    ]
    if tolerations:
        pod["tolerations"] = tolerations
    _override_first_container(scope, component, pod)
    main = first(pod, "containers")
    assert main is not None
    if component != "master":
        apply_tiered_store(pod, main, spec.tiered_levels())
    if component == "worker":
        apply_worker_affinity(scope, pod)
        meta["labels"] = {**(meta.get("labels") or {}), **worker_labels(scope)}
    apply_volumes(scope, component, pod)
    if component == "client":
        pod["nodeSelector"][names.fuse_node_label(scope.namespace, scope.name)] = names.TRUE
        shared = names.client_shared_path(scope.namespace, scope.name)
        volume = names.FUSE_SHARED_PATH_VOLUME
        add_volume(
            pod, {"name": volume, "hostPath": {"path": shared, "type": names.PATH_TYPE_DIRECTORY_OR_CREATE}}
        )
        add_mount(main, {"name": volume, "mountPath": shared, "mountPropagation": "Bidirectional"})
    if not pod["nodeSelector"]:
        del pod["nodeSelector"]
    meta["labels"] = {**(meta.get("labels") or {}), **component_labels(scope, component)}
    template["metadata"] = meta
    canonical_quantities(pod)
    return template


def _override_first_container(scope: Scope, component: names.Component, pod: Json) -> None:
    spec = scope.spec(component)
    main = first(pod, "containers")
    assert main is not None
    version = spec.runtime_version
    if version is not None:
        if version.reference():
            main["image"] = version.reference()
        if version.image_pull_policy:
            main["imagePullPolicy"] = version.image_pull_policy
    resources = spec.resources
    if resources is not None and (
        resources.get("limits") is not None or resources.get("requests") is not None
    ):
        main["resources"] = copy.deepcopy(resources)
    if spec.args is not None:
        main["args"] = list(spec.args)
    injected = injected_env(scope, component)
    template_where = f"{scope.class_ref()} topology.{component}.template.spec"
    main["env"] = merge_env(
        ("injected", injected),
        (f"{template_where}.containers[0].env", main.get("env") or []),
        (f"{scope.runtime_ref()} spec.{component}.env", spec.env or []),
    )
    init = first(pod, "initContainers")
    if init is not None:
        init["env"] = merge_env(
            ("injected", injected), (f"{template_where}.initContainers[0].env", init.get("env") or [])
        )


def canonical_quantities(pod: Json) -> None:
    """Quantities as the API server stores them: resources of every container (and of the pod),
    emptyDir size limits, ephemeral volume claims' requests."""
    resources = [
        c.get("resources") for group in ("containers", "initContainers") for c in pod.get(group) or []
    ]
    resources.append(pod.get("resources"))
    for volume in pod.get("volumes") or []:
        empty_dir = volume.get("emptyDir")
        if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
            empty_dir["sizeLimit"] = _canonical(empty_dir["sizeLimit"])
        claim = ((volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}).get("spec") or {}
        resources.append(claim.get("resources"))
    for entry in resources:
        if not isinstance(entry, dict):
            continue
        for kind in ("limits", "requests"):
            amounts = entry.get(kind)
            if isinstance(amounts, dict):
                entry[kind] = {k: _canonical(v) for k, v in amounts.items()}


def _canonical(value: Any) -> Any:
    """A quantity as the API server stores it, or the value unchanged when it is none (the API
    server then refuses the workload with its own message)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return value
    try:
        return canonical_quantity(value)
    except QuantityError:
        return value
