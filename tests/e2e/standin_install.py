"""The development FUSE stand-in in place of Curvine's curvine-fuse on a cluster installed with
``kubectl apply -k manifests/``: for the tests of the CSI node's own mechanics that need no cache
behind the FUSE (shared mounts and refcounts, a FUSE replaced under running pods, refusals). The node
DaemonSet runs ``curvine-fuse-standin`` from the product's image in its FUSE pods, serving the node's
``/var/lib/curvine-standin`` (one directory per cluster-id), and the FUSE pod policy allows exactly
that pod. A test tool: the default install never runs the stand-in (tests/e2e/test_real_node_curvine.py
runs the real one), and nothing of this is in manifests/ or the chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.fluid import MANIFESTS, kubectl

STANDIN = "curvine-fuse-standin"
STANDIN_DATA = "/var/lib/curvine-standin"
PRODUCT_IMAGE = "kubectl-fluid:latest"


def manifest(path: str, kind: str) -> dict[str, Any]:
    [doc] = [d for d in yaml.safe_load_all((MANIFESTS / path).read_text()) if d and d["kind"] == kind]
    return doc  # type: ignore[no-any-return]


def node_daemonset() -> dict[str, Any]:
    daemonset = manifest("csi/node-daemonset.yaml", "DaemonSet")
    [driver] = daemonset["spec"]["template"]["spec"]["containers"]
    args = [
        a for a in driver["args"] if not a.startswith(("--fuse-image=", "--fuse-binary=", "--fuse-config="))
    ]
    driver["args"] = [
        *args,
        f"--fuse-image={PRODUCT_IMAGE}",
        f"--fuse-binary={STANDIN}",
        f"--fuse-env=CURVINE_STANDIN_DATA={STANDIN_DATA}",
        f"--fuse-host-path={STANDIN_DATA}",
    ]
    # Embedded mode's FUSE would be this container's child, serving the same directory.
    driver["env"].append({"name": "CURVINE_STANDIN_DATA", "value": STANDIN_DATA})
    driver["volumeMounts"].append({"name": "standin-data", "mountPath": STANDIN_DATA})
    daemonset["spec"]["template"]["spec"]["volumes"].append(
        {"name": "standin-data", "hostPath": {"path": STANDIN_DATA, "type": "DirectoryOrCreate"}}
    )
    return daemonset


def fuse_pod_policy() -> dict[str, Any]:
    policy = manifest("csi/fuse-pod-policy.yaml", "ValidatingAdmissionPolicy")
    pinned = {
        "image": repr(PRODUCT_IMAGE),
        "program": repr(STANDIN),
        "hostPaths": repr(["/dev/fuse", STANDIN_DATA]),
    }
    for variable in policy["spec"]["variables"]:
        variable["expression"] = pinned.get(variable["name"], variable["expression"])
    return policy


def use_standin(kubeconfig: Path) -> None:
    """The installed node DaemonSet and FUSE pod policy changed to the stand-in, and rolled out."""
    body = {"apiVersion": "v1", "kind": "List", "items": [fuse_pod_policy(), node_daemonset()]}
    kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(body))
    kubectl(
        kubeconfig, "-n", "fluid-system", "rollout", "status", "daemonset/fluid-csi-node", "--timeout=300s"
    )
