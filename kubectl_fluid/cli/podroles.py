"""Which of the product's own pods a pod is, if it is one: a cache component a CacheRuntime owns, or
one of fluid-system's (the controller, the webhook, the CSI driver, a standalone FUSE pod). Pure.

``explain`` asks this before any rule of the webhook: such a pod is made by the product and never
asks for injection, so advice to ``inject`` its StatefulSet would only break the cache (issue 28).
The owner chain is the authority for a component (its StatefulSet or DaemonSet is the controller's,
and the CacheRuntime controls that); the labels name which component it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubectl_fluid.api import names
from kubectl_fluid.kube import resources

NOT_APPLICABLE = "injection does not apply"

# What each of fluid-system's components is, by the component label the manifests give its pods.
SYSTEM_COMPONENTS: Mapping[str, str] = {
    "controller": "the fluid-controller, which makes each CacheRuntime's components",
    "webhook": "the fluid-webhook, which injects the runtime config into pods as they are created",
    "csi-controller": f"the CSI driver's controller ({names.CSI_DRIVER}), which provisions volumes",
    "csi-node": f"the CSI driver's node service ({names.CSI_DRIVER}), which mounts volumes on its node",
}


def product_role(namespace: str, labels: Mapping[str, str], chain: Sequence[tuple[str, str]]) -> str | None:
    """What the pod is, with ``injection does not apply``, or None for a user's pod. ``chain`` is the
    pod's controllers from its own upwards, as (kind, name): ``[("StatefulSet", "demo-master"),
    ("CacheRuntime", "demo")]``."""
    runtime = next((name for kind, name in chain if kind == resources.CACHERUNTIMES.kind), None)
    if runtime is not None:
        component = labels.get(names.LABEL_APP_COMPONENT) or "component"
        made_by = f"{chain[0][0]} {chain[0][1]}"
        return (
            f'the {component} of CacheRuntime "{runtime}" (dataset "{runtime}"), a pod of its {made_by}: '
            f"a cache component the controller runs, not a user of the cache; {NOT_APPLICABLE}"
        )
    if namespace != names.FLUID_NAMESPACE:
        return None
    if names.LABEL_MOUNT_KEY in labels or labels.get(names.LABEL_APP_COMPONENT) == names.FUSE_POD_COMPONENT:
        where = f" on node {labels[names.LABEL_NODE]}" if names.LABEL_NODE in labels else ""
        key = labels.get(names.LABEL_MOUNT_KEY, "?")
        return (
            f"a FUSE pod of the CSI node service (mount key {key}{where}): it serves the FUSE mount "
            f"that the pods mounting those volumes there share; {NOT_APPLICABLE}"
        )
    if labels.get(names.LABEL_APP_PART_OF) == names.PART_OF:
        component = labels.get(names.LABEL_APP_COMPONENT, "")
        what = SYSTEM_COMPONENTS.get(component, f"fluid's {component or 'own'} component")
        return f"{what}; {NOT_APPLICABLE}"
    return None
