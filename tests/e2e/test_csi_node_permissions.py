"""What the product's ServiceAccounts may NOT do, asked of the real API server: ``kubectl auth can-i``
for each account of the install, and, for the CSI node service's one broad right (creating pods in
fluid-system, for its standalone FUSE pods), the FUSE pod policy (manifests/csi/fuse-pod-policy.yaml)
judging pods that a node's own token sends. A token bound to a pod on one node may create the FUSE
pod the node service builds for that node (csi/fuse/fusepod.py), and nothing else: not a pod that runs
as another ServiceAccount (fluid-controller reads Secrets), not one on another node, not one with
another image, program or host path; a token bound to no pod names no node and creates nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from csi.fuse.fusebudget import fuse_pod_budget
from csi.fuse.fusepod import fuse_pod
from kubectl_fluid.api import names
from tests.e2e.fluid import MANIFESTS, kubectl, kubectl_binary, service_account_kubeconfig
from tests.e2e.wait import eventually

pytestmark = pytest.mark.e2e

SYSTEM = names.FLUID_NAMESPACE
POLICY = MANIFESTS / "csi" / "fuse-pod-policy.yaml"
BUDGET_POLICY = MANIFESTS / "csi" / "fuse-budget-policy.yaml"
LABEL_POLICY = MANIFESTS / "csi" / "node-label-policy.yaml"
CONTROLLER_LABEL_POLICY = MANIFESTS / "controller" / "node-label-policy.yaml"
KEY = "0123456789abcdef" * (names.MOUNT_KEY_LENGTH // 16)

# account -> what it must never be allowed: (verb, resource, namespace or "" for cluster scope).
FORBIDDEN: dict[str, list[tuple[str, str, str]]] = {
    "fluid-csi-node": [
        ("create", "pods", "default"),
        ("update", "pods", SYSTEM),
        ("patch", "pods", SYSTEM),
        ("create", "pods/exec", SYSTEM),
        ("create", "pods/ephemeralcontainers", SYSTEM),
        ("get", "secrets", SYSTEM),
        ("list", "secrets", ""),
        ("create", "serviceaccounts/token", SYSTEM),
        ("impersonate", "serviceaccounts", SYSTEM),
        ("create", "rolebindings.rbac.authorization.k8s.io", SYSTEM),
        ("patch", "nodes/status", ""),
        ("create", "persistentvolumes", ""),
        ("delete", "validatingadmissionpolicies.admissionregistration.k8s.io", ""),
    ],
    "fluid-csi-controller": [
        ("create", "pods", SYSTEM),
        ("get", "secrets", SYSTEM),
        ("create", "pods/exec", "default"),
        ("delete", "persistentvolumeclaims", "default"),
        ("create", "fusemounts.data.fluid.io", ""),
    ],
    "fluid-controller": [
        ("list", "secrets", ""),
        ("watch", "secrets", ""),
        ("create", "pods", "default"),
        # pods/exec it may (a class's execution entries run in the master: controller/entries/), as
        # upstream's controller may; attaching to a pod or forwarding its ports it may not.
        ("create", "pods/attach", "default"),
        ("create", "pods/portforward", "default"),
        ("create", "serviceaccounts/token", SYSTEM),
    ],
    "fluid-webhook": [
        ("create", "pods", "default"),
        ("get", "secrets", "default"),
        ("list", "secrets", SYSTEM),
        ("update", "datasets.data.fluid.io", "default"),
        ("patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io", ""),
    ],
}


def can_i(kubeconfig: Path, account: str, verb: str, resource: str, namespace: str) -> str:
    """kubectl's answer, ``yes`` or ``no``; ``pods/exec`` is the subresource (kubectl would read a
    pod named exec)."""
    resource, _, subresource = resource.partition("/")
    where = ["-n", namespace] if namespace else ["--all-namespaces"] if verb == "list" else []
    if subresource:
        where.append(f"--subresource={subresource}")
    run = subprocess.run(
        [kubectl_binary(), f"--kubeconfig={kubeconfig}", "auth", "can-i", verb, resource, *where,
         f"--as=system:serviceaccount:{SYSTEM}:{account}"],
        capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip
    return run.stdout.strip()


def test_no_product_account_can_do_what_it_must_not(fluid: Path) -> None:
    kubectl(fluid, "apply", "-f", str(MANIFESTS / "webhook" / "rbac.yaml"))
    allowed = [
        f"{account}: {verb} {resource}" + (f" in {ns}" if ns else "")
        for account, forbidden in FORBIDDEN.items()
        for verb, resource, ns in forbidden
        if can_i(fluid, account, verb, resource, ns) != "no"
    ]
    assert allowed == [], "allowed, and must not be"
    # The one right the policy below narrows is there (so the answers above are not a broken setup).
    assert can_i(fluid, "fluid-csi-node", "create", "pods", SYSTEM) == "yes"


@pytest.fixture(scope="module")
def policy(fluid: Path) -> Iterator[None]:
    """The FUSE pod policy, installed for this module's tests only (other modules' CSI node
    processes create FUSE pods with tokens bound to no pod)."""
    for path in (POLICY, BUDGET_POLICY, LABEL_POLICY, CONTROLLER_LABEL_POLICY):
        kubectl(fluid, "apply", "-f", str(path))
    yield
    for path in (POLICY, BUDGET_POLICY, LABEL_POLICY, CONTROLLER_LABEL_POLICY):
        kubectl(fluid, "delete", "-f", str(path), "--ignore-not-found")


@pytest.fixture(scope="module")
def node_tokens(
    fluid: Path, policy: None, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, Path]]:
    """(the node, a kubeconfig of fluid-csi-node bound to a pod on that node, one bound to no pod)."""
    [node, *_] = [str(n.metadata.name) for n in core.list_node().items]
    holder = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "csi-node-token-holder", "namespace": SYSTEM},
        "spec": {
            "nodeName": node,
            "serviceAccountName": "fluid-csi-node",
            "containers": [{"name": "c", "image": "kubectl-fluid:latest", "command": ["sleep", "1"]}],
        },
    }
    pod = eventually(lambda: core.create_namespaced_pod(SYSTEM, holder), "the token holder pod", timeout=30)
    folder = tmp_path_factory.mktemp("csi-node-tokens")
    try:
        bound = service_account_kubeconfig(fluid, core, folder / "bound", "fluid-csi-node", bound_pod=pod)
        unbound = service_account_kubeconfig(fluid, core, folder / "unbound", "fluid-csi-node")

        def enforced() -> bool:
            refused = create(bound, changed(fuse_pod_of(node), "host-root"))
            budget = create(bound, budget_changed(fuse_pod_budget(node, KEY, "0"), "other-node"))
            label = relabel(bound, node, "other=x")
            return (
                refused.returncode != 0
                and "fluid-csi-node-fuse-pods" in refused.stderr
                and "fluid-csi-node-fuse-budgets" in budget.stderr
                and "fluid-csi-node-labels" in label.stderr
            )

        # The API server takes a policy up a moment after it is created (its admission plugin's
        # informer): seen as the first two cases admitted right after the apply.
        eventually(enforced, "the FUSE pod policy in force", timeout=60)
        yield node, bound, unbound
    finally:
        core.delete_namespaced_pod(pod.metadata.name, SYSTEM, grace_period_seconds=0)


def policy_variable(name: str) -> str:
    docs = [d for d in yaml.safe_load_all(POLICY.read_text()) if d]
    [policy] = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    [expression] = [v["expression"] for v in policy["spec"]["variables"] if v["name"] == name]
    return str(yaml.safe_load(expression))


def fuse_pod_of(node: str, node_uid: str | None = "0a1b") -> dict[str, Any]:
    """The pod the node service sends, with the install's image and program, its Node as owner."""
    mnt = names.fuse_mount_path(KEY)
    argv = [policy_variable("program"), "--master-addrs", "m:8995", "--fs-path", "/", "--mnt-path", mnt]
    return fuse_pod(node, KEY, argv, mnt, policy_variable("image"), node_uid=node_uid)


def create(kubeconfig: Path, pod: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """A server-side dry run of creating ``pod``: admission judges it, nothing is stored."""
    return subprocess.run(
        [kubectl_binary(), f"--kubeconfig={kubeconfig}", "create", "--dry-run=server", "-oname", "-f", "-"],
        input=json.dumps(pod), capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip


def test_a_nodes_token_creates_its_fuse_pod(node_tokens: tuple[str, Path, Path]) -> None:
    node, bound, _ = node_tokens
    done = create(bound, fuse_pod_of(node))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("pod/")


def changed(pod: dict[str, Any], how: str) -> dict[str, Any]:
    spec = pod["spec"]
    container = spec["containers"][0]
    if how == "service-account":
        spec["serviceAccountName"] = "fluid-controller"
        spec["automountServiceAccountToken"] = True
    elif how == "other-node":
        spec["nodeName"] = "some-other-node"
    elif how == "image":
        container["image"] = "busybox:latest"
    elif how == "program":
        container["command"] = ["sh", "-c", "cat /var/run/secrets/*"]
    elif how == "host-root":
        spec["volumes"].append({"name": "root", "hostPath": {"path": "/"}})
        container["volumeMounts"].append({"name": "root", "mountPath": "/host"})
    elif how == "host-pid":
        spec["hostPID"] = True
    elif how == "init-container":
        spec["initContainers"] = [dict(container, name="init")]
    elif how == "second-container":
        spec["containers"].append(dict(container, name="second"))
    elif how == "other-owner":
        pod["metadata"]["ownerReferences"][0]["name"] = "some-other-node"
    elif how == "owner-kind":
        pod["metadata"]["ownerReferences"][0].update(
            apiVersion="apps/v1", kind="DaemonSet", name="fluid-csi-node"
        )
    return pod


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("service-account", "default ServiceAccount, without a token"),
        ("other-node", "must run on the node of the CSI node service that creates it"),
        ("image", "a FUSE pod runs"),
        ("program", "a FUSE pod runs"),
        ("host-root", "a FUSE pod mounts only /dev/fuse"),
        ("host-pid", "no host PID or IPC"),
        ("init-container", "no init or ephemeral containers"),
        ("second-container", "one container"),
        ("other-owner", "only owner is its own Node"),
        ("owner-kind", "only owner is its own Node"),
    ],
)
def test_a_nodes_token_creates_nothing_else(node_tokens: tuple[str, Path, Path], how: str, says: str) -> None:
    node, bound, _ = node_tokens
    done = create(bound, changed(fuse_pod_of(node), how))
    assert done.returncode != 0, f"admitted a FUSE pod changed by {how}"
    assert "fluid-csi-node-fuse-pods" in done.stderr, done.stderr
    assert says in done.stderr, done.stderr


def test_a_nodes_token_creates_its_fuse_pods_budget(node_tokens: tuple[str, Path, Path]) -> None:
    node, bound, _ = node_tokens
    done = create(bound, fuse_pod_budget(node, KEY, "0a1b"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("poddisruptionbudget")


def budget_changed(budget: dict[str, Any], how: str) -> dict[str, Any]:
    selector = budget["spec"]["selector"]
    if how == "other-node":
        selector["matchLabels"][names.LABEL_NODE] = "some-other-node"
    elif how == "other-pods":
        selector["matchLabels"] = {"app.kubernetes.io/name": "fluid-controller"}
    elif how == "more-pods":
        del selector["matchLabels"][names.LABEL_MOUNT_KEY]
    elif how == "expressions":
        selector["matchExpressions"] = [{"key": "app", "operator": "Exists"}]
    return budget


@pytest.mark.parametrize("how", ["other-node", "other-pods", "more-pods", "expressions"])
def test_a_nodes_token_shields_no_other_pod_with_a_budget(
    node_tokens: tuple[str, Path, Path], how: str
) -> None:
    node, bound, _ = node_tokens
    done = create(bound, budget_changed(fuse_pod_budget(node, KEY, "0a1b"), how))
    assert done.returncode != 0, f"admitted a FUSE pod budget changed by {how}"
    assert "fluid-csi-node-fuse-budgets" in done.stderr, done.stderr
    assert "selects by its labels the FUSE pods of the creating node" in done.stderr, done.stderr


def test_a_token_bound_to_no_pod_names_no_node_and_creates_nothing(
    node_tokens: tuple[str, Path, Path],
) -> None:
    node, _, unbound = node_tokens
    done = create(unbound, fuse_pod_of(node))
    assert done.returncode != 0
    assert "its token names no node" in done.stderr, done.stderr


def test_the_policy_judges_only_the_node_services_requests(fluid: Path, policy: None) -> None:
    done = create(fluid, changed(fuse_pod_of("some-node"), "host-root"))
    assert done.returncode == 0, done.stderr


def relabel(kubeconfig: Path, node: str, *changes: str) -> subprocess.CompletedProcess[str]:
    """A server-side dry run of ``kubectl label node`` (a patch: admission sees an UPDATE)."""
    return subprocess.run(
        [kubectl_binary(), f"--kubeconfig={kubeconfig}", "label", "node", node, *changes,
         "--overwrite", "--dry-run=server", "-oname"],
        capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip


def test_a_nodes_token_sets_and_removes_a_datasets_fuse_label_on_its_node(
    node_tokens: tuple[str, Path, Path],
) -> None:
    # SPEC §7: NodeStage labels the node for the runtime's client; the last unstage removes it.
    node, bound, _ = node_tokens
    label = names.fuse_node_label("team", "ds")
    assert relabel(bound, node, f"{label}=true").returncode == 0
    assert relabel(bound, node, f"{label}-").returncode == 0


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("kubernetes.io/hostname=elsewhere", "only fluid.io/f-* labels"),
        ("node-role.kubernetes.io/control-plane=", "only fluid.io/f-* labels"),
        ("fluid.io/f-team-ds=false", "only fluid.io/f-* labels"),
    ],
)
def test_a_nodes_token_changes_no_other_label(
    node_tokens: tuple[str, Path, Path], change: str, says: str
) -> None:
    node, bound, _ = node_tokens
    done = relabel(bound, node, change)
    assert done.returncode != 0
    assert says in done.stderr, done.stderr


def test_a_nodes_token_labels_no_other_node(
    node_tokens: tuple[str, Path, Path], core: client.CoreV1Api
) -> None:
    node, bound, unbound = node_tokens
    others = [str(n.metadata.name) for n in core.list_node().items if n.metadata.name != node]
    label = f"{names.fuse_node_label('team', 'ds')}=true"
    if others:
        done = relabel(bound, others[0], label)
        assert done.returncode != 0
        assert f"its own Node only ({node})" in done.stderr, done.stderr
    done = relabel(unbound, node, label)
    assert done.returncode != 0
    assert "its token names no node" in done.stderr, done.stderr


def patch_node(kubeconfig: Path, node: str, patch: dict[str, Any]) -> str | None:
    """A dry run of a patch of the Node's object, sent straight as the controller sends its patches
    (kubectl would GET the Node first, which the controller may not): None when admitted, else the
    server's refusal."""
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    try:
        api.patch_node(node, patch, dry_run="All")
    except client.ApiException as e:
        return f"{e.status}: {e.body}"
    finally:
        api.api_client.close()
    return None


@pytest.fixture(scope="module")
def controller_token(
    fluid: Path, policy: None, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A kubeconfig of fluid-controller, once its node label policy is in force."""
    node = str(core.list_node().items[0].metadata.name)
    token = service_account_kubeconfig(fluid, core, tmp_path_factory.mktemp("controller-token") / "kc")
    eventually(
        lambda: (
            "fluid-controller-node-labels"
            in (patch_node(token, node, {"metadata": {"labels": {"x": "y"}}}) or "")
        ),
        "the controller's node label policy in force",
        timeout=60,
    )
    return token


def test_the_controllers_token_sets_and_removes_fluid_labels_of_any_node(
    controller_token: Path, core: client.CoreV1Api
) -> None:
    # A runtime gone: its client's fluid.io/f-* labels off every node (controller/teardown.py).
    # And the cache-node labels of a runtime's workers' nodes (controller/cachenodes.py).
    label = names.fuse_node_label("team", "ds")
    for node in [str(n.metadata.name) for n in core.list_node().items]:
        for value in ("true", None):
            assert patch_node(controller_token, node, {"metadata": {"labels": {label: value}}}) is None
        for key, value in (("fluid_exclusive", "team_ds"), ("fluid.io/dataset-num", "1")):
            assert patch_node(controller_token, node, {"metadata": {"labels": {key: value}}}) is None
            assert patch_node(controller_token, node, {"metadata": {"labels": {key: None}}}) is None


@pytest.mark.parametrize(
    ("patch", "says"),
    [
        (
            {"metadata": {"labels": {"kubernetes.io/hostname": "elsewhere"}}},
            "only fluid.io/ labels (and fluid_exclusive)",
        ),
        (
            {"metadata": {"labels": {"kubernetes.io/hostname": None}}},
            "only fluid.io/ labels (and fluid_exclusive)",
        ),
        ({"metadata": {"labels": {"team": "x"}}}, "only fluid.io/ labels (and fluid_exclusive)"),
        (
            {"spec": {"unschedulable": True}},
            "changes nothing of a Node but its fluid.io/ labels and fluid_exclusive",
        ),
        (
            {"metadata": {"annotations": {"x": "y"}}},
            "changes nothing of a Node but its fluid.io/ labels and fluid_exclusive",
        ),
    ],
)
def test_the_controllers_token_changes_nothing_else_of_a_node(
    controller_token: Path, core: client.CoreV1Api, patch: dict[str, Any], says: str
) -> None:
    node = str(core.list_node().items[0].metadata.name)
    refused = patch_node(controller_token, node, patch)
    assert refused is not None
    assert says in refused, refused
