"""The manifests against a real API server: the whole install set (``kubectl apply -k manifests/``) and
every sample pass a server-side dry run (admission, schema and defaulting included), and the CSI
driver's CSIDriver and RBAC, applied for real, grant its two identities what they need and no more
(read back through SubjectAccessReviews, the API server's own answer)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import MANIFESTS, kubectl

CSI = MANIFESTS / "csi"
CONTROLLER_ACCOUNT = "fluid-csi-controller"
NODE_ACCOUNT = "fluid-csi-node"
# csi-provisioner's leader-election Lease: the driver name with the dots replaced.
PROVISIONER_LEASE = names.CSI_DRIVER.replace(".", "-")
SAMPLES = sorted((MANIFESTS / "samples").glob("*.yaml"))


def dry_run(kubeconfig: Path, *source: str) -> list[str]:
    """``kubectl apply --dry-run=server`` of ``source``: the objects the API server accepted."""
    return kubectl(kubeconfig, "apply", "--dry-run=server", "-o", "name", *source).split()


def documents(rendered: str) -> list[dict[str, object]]:
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def test_install_set_passes_a_server_side_dry_run(fluid: Path) -> None:
    accepted = dry_run(fluid, "-k", str(MANIFESTS))
    built = documents(kubectl(fluid, "kustomize", str(MANIFESTS)))
    assert len(accepted) == len(built), accepted
    for name in (
        f"csidriver.storage.k8s.io/{names.CSI_DRIVER}",
        f"serviceaccount/{CONTROLLER_ACCOUNT}",
        f"serviceaccount/{NODE_ACCOUNT}",
        "clusterrole.rbac.authorization.k8s.io/fluid-csi-provisioner",
        "clusterrole.rbac.authorization.k8s.io/fluid-csi-node",
        "deployment.apps/fluid-csi-controller",
        "daemonset.apps/fluid-csi-node",
    ):
        assert name in accepted


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_passes_a_server_side_dry_run(fluid: Path, sample: Path) -> None:
    accepted = dry_run(fluid, "-f", str(sample))
    assert len(accepted) == len(documents(sample.read_text()))


def test_csi_driver_object_applies(fluid: Path, k8s: client.ApiClient) -> None:
    kubectl(fluid, "apply", "-f", str(CSI / "csidriver.yaml"))
    spec = client.StorageV1Api(k8s).read_csi_driver(names.CSI_DRIVER).spec
    assert spec.attach_required is False
    assert spec.pod_info_on_mount is True
    assert spec.volume_lifecycle_modes == ["Persistent"]
    assert spec.fs_group_policy == "None"


def allowed(
    authz: client.AuthorizationV1Api,
    account: str,
    verb: str,
    resource: str,
    *,
    group: str = "",
    namespace: str | None = None,
    subresource: str | None = None,
    name: str | None = None,
) -> bool:
    user = f"system:serviceaccount:{names.FLUID_NAMESPACE}:{account}"
    groups = [
        "system:serviceaccounts",
        f"system:serviceaccounts:{names.FLUID_NAMESPACE}",
        "system:authenticated",
    ]
    attributes = {"verb": verb, "resource": resource, "group": group}
    for key, value in (("namespace", namespace), ("subresource", subresource), ("name", name)):
        if value is not None:
            attributes[key] = value
    review = authz.create_subject_access_review(
        {"spec": {"user": user, "groups": groups, "resourceAttributes": attributes}}
    )
    return bool(review.status.allowed)


def test_csi_rbac_applies_and_grants_exactly_the_drivers_needs(fluid: Path, k8s: client.ApiClient) -> None:
    kubectl(fluid, "apply", "-f", str(CSI / "rbac.yaml"))
    authz = client.AuthorizationV1Api(k8s)
    fluid_ns, user_ns = names.FLUID_NAMESPACE, "default"

    def can(account: str, verb: str, resource: str, group: str = "", **where: str) -> bool:
        return allowed(authz, account, verb, resource, group=group, **where)

    # The node service: its FuseMount mirror, its Node, FUSE pods in fluid-system only.
    node = NODE_ACCOUNT
    for verb in ("create", "get", "list", "watch", "update", "patch", "delete"):
        assert can(node, verb, "fusemounts", names.GROUP), verb
    assert can(node, "patch", "fusemounts", names.GROUP, subresource="status")
    for verb in ("get", "list", "watch"):  # its Node's readiness, watched by name
        assert can(node, verb, "nodes"), verb
    assert not can(node, "update", "nodes")
    for verb in ("create", "delete", "get", "list", "watch"):
        assert can(node, verb, "pods", namespace=fluid_ns), verb
    assert not can(node, "create", "pods", namespace=user_ns)
    assert not can(node, "get", "secrets", namespace=fluid_ns)
    assert not can(node, "create", "persistentvolumes")
    # The provisioner: PVs, claims, classes, events; its own Lease only.
    ctrl = CONTROLLER_ACCOUNT
    for verb in ("create", "delete", "patch", "watch"):
        assert can(ctrl, verb, "persistentvolumes"), verb
    assert can(ctrl, "update", "persistentvolumeclaims", namespace=user_ns)
    assert not can(ctrl, "delete", "persistentvolumeclaims", namespace=user_ns)
    assert can(ctrl, "watch", "storageclasses", "storage.k8s.io")
    assert not can(ctrl, "create", "storageclasses", "storage.k8s.io")
    assert can(ctrl, "create", "events", namespace=user_ns)
    lease = {"group": "coordination.k8s.io", "namespace": fluid_ns}
    assert can(ctrl, "create", "leases", **lease)
    assert can(ctrl, "update", "leases", **lease, name=PROVISIONER_LEASE)
    assert not can(ctrl, "update", "leases", **lease, name=names.CONTROLLER_LEASE)
    assert not can(ctrl, "create", "pods", namespace=fluid_ns)
    assert not can(ctrl, "get", "secrets", namespace=fluid_ns)
    assert not can(ctrl, "create", "fusemounts", names.GROUP)
