"""The standalone FUSE pod: pinned to its node, FUSE mounted where the node service looks for it."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from csi.fuse.fusebudget import fuse_pod_budget
from csi.fuse.fusepod import fuse_pod
from kubectl_fluid.api import names

NODE = "node-a.example.internal"
KEY = "0123456789abcdef0123456789abcdef"
MNT = f"/var/lib/kubelet/plugins/kubernetes.io/csi/curvine/{KEY}/fuse-mount"
ARGV = ["/opt/curvine/curvine-fuse", "--master-addrs", "m:8995", "--fs-path", "/", "--mnt-path", MNT]


def test_the_pod_runs_the_fuse_command_on_its_node_with_the_mount_propagated_back() -> None:
    pod = fuse_pod(NODE, KEY, ARGV, MNT, "img:1")
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == names.fuse_pod_name(NODE, KEY)
    assert len(meta["name"]) <= 63
    assert meta["namespace"] == names.FLUID_NAMESPACE
    assert meta["labels"][names.LABEL_MOUNT_KEY] == KEY
    assert spec["nodeName"] == NODE
    assert spec["restartPolicy"] == "Never"  # the node service replaces it and re-binds
    (container,) = spec["containers"]
    assert container["command"] == ARGV
    assert container["image"] == "img:1"
    assert container["securityContext"]["privileged"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    key_dir = os.path.dirname(MNT)
    assert mounts["mount-key"]["mountPath"] == key_dir
    assert mounts["mount-key"]["mountPropagation"] == "Bidirectional"
    assert volumes["mount-key"]["hostPath"]["path"] == key_dir
    assert volumes["dev-fuse"]["hostPath"] == {"path": "/dev/fuse", "type": "CharDevice"}


def test_names_stay_distinct_and_short_for_long_node_names() -> None:
    long_node = "n" * 80
    a, b = names.fuse_pod_name(long_node, KEY), names.fuse_pod_name(long_node + "x", KEY)
    assert a != b
    assert max(len(a), len(b)) <= 63
    assert names.fuse_pod_name(NODE, KEY) != names.fuse_pod_name(NODE, "f" * 32)


def test_what_the_fuse_program_needs_beside_its_flags_reaches_the_pod() -> None:
    pod = fuse_pod(
        NODE, KEY, ARGV, MNT, "img:1", env=[("CONF", "/etc/c.toml")], host_paths=["/etc/c", "/data"]
    )
    (container,) = pod["spec"]["containers"]
    assert container["env"] == [{"name": "CONF", "value": "/etc/c.toml"}]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    at = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
    for path in ("/etc/c", "/data"):
        assert at[path]["hostPath"] == {"path": path, "type": "Directory"}  # at the same path
    assert len(volumes) == len(container["volumeMounts"]) == 4


def test_fuse_pod_flags_refuse_what_a_pod_cannot_take() -> None:
    from csi.main import parse_args

    base = ["--mode", "node", "--endpoint", "/c.sock", "--node-id", "n"]
    args = parse_args([*base, "--fuse-env", "A_1=x=y", "--fuse-host-path", "/d/./e/"])
    assert (args.fuse_env, args.fuse_host_path) == ([("A_1", "x=y")], ["/d/e"])
    for bad in (["--fuse-env", "no-equals"], ["--fuse-env", "1A=x"], ["--fuse-host-path", "rel"]):
        with pytest.raises(SystemExit):
            parse_args([*base, *bad])


def test_a_latest_tag_is_not_pulled_when_the_node_has_the_image() -> None:
    # The manifests' kubectl-fluid:latest is loaded onto nodes and run IfNotPresent; without a policy,
    # kubelet's default for :latest is Always and a node that has the image but no registry fails the
    # mount with ErrImagePull (seen on the real node).
    (container,) = fuse_pod(NODE, KEY, ARGV, MNT, "kubectl-fluid:latest")["spec"]["containers"]
    assert container["imagePullPolicy"] == "IfNotPresent"


def test_fuse_runs_as_root_whatever_the_images_user() -> None:
    # The product's image runs as 65532 by default; FUSE in it then failed on the real node with
    # "mount point ... cannot be used: Permission denied" (the key's directory is root's 0755).
    (container,) = fuse_pod(NODE, KEY, ARGV, MNT, "kubectl-fluid:latest")["spec"]["containers"]
    context = container["securityContext"]
    assert context["privileged"] is True
    assert (context["runAsUser"], context["runAsGroup"], context["runAsNonRoot"]) == (0, 0, False)


def test_the_pods_node_is_its_controller_so_drain_takes_it_and_it_goes_with_the_node() -> None:
    assert "ownerReferences" not in fuse_pod(NODE, KEY, ARGV, MNT, "img:1")["metadata"]
    [owner] = fuse_pod(NODE, KEY, ARGV, MNT, "img:1", node_uid="u-1")["metadata"]["ownerReferences"]
    assert owner == {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "u-1", "controller": True}
    # blockOwnerDeletion would need the right to set finalizers on Nodes.
    assert "blockOwnerDeletion" not in owner


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=80),
    st.text(min_size=32, max_size=32, alphabet="0123456789abcdef"),
)
def test_a_fuse_pods_budget_selects_that_pod_alone_and_goes_with_it(node: str, key: str) -> None:
    pod = fuse_pod(node, key, ARGV, MNT, "img:1")
    budget = fuse_pod_budget(node, key, "pod-uid")
    assert budget["metadata"]["name"] == pod["metadata"]["name"]
    assert budget["metadata"]["namespace"] == pod["metadata"]["namespace"]
    # Exactly the pod's own labels: the node's other keys' pods and every other pod stay out of it.
    assert budget["spec"]["selector"] == {"matchLabels": pod["metadata"]["labels"]}
    assert budget["spec"]["minAvailable"] == 1
    assert budget["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": "pod-uid"}
    ]
