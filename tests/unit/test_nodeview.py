"""A real node's own view of the host's /var/lib (hack/localcluster/nodeview.py, realnodes.node_view): the
paths the product's manifests name are the node's own directories, in a mount namespace where what is mounted
beneath them reaches the node's folder on the host and nothing else of the host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.api import names
from localcluster import nodeview, realnodes

PORTS = {"kubelet": 41001, "healthz": 41002}
MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
NODEVIEW = Path(nodeview.__file__)


def node(tmp_path: Path, index: int = 0) -> realnodes.RealNode:
    return realnodes.plan(tmp_path, index, PORTS, "192.0.2.2")


def manifest_host_paths() -> set[str]:
    paths = set()
    for file in MANIFESTS.rglob("*.yaml"):
        for doc in yaml.safe_load_all(file.read_text()):
            if not doc or doc.get("kind") not in ("DaemonSet", "Deployment"):
                continue
            for volume in doc["spec"]["template"]["spec"].get("volumes", []):
                if "hostPath" in volume:
                    paths.add(volume["hostPath"]["path"])
    return paths


def test_every_var_lib_host_path_of_the_manifests_is_the_nodes_own(tmp_path: Path) -> None:
    a, b = node(tmp_path / "a"), node(tmp_path / "b")
    view = dict((target, source) for source, target in realnodes.node_view(a))
    wanted = {p for p in manifest_host_paths() if p.startswith("/var/lib/")}
    assert wanted, "the manifests name no /var/lib hostPath any more: is this test still needed?"
    for path in wanted:
        assert any(path == t or path.startswith(t + "/") for t in view), f"{path} is the host's, shared"
    assert names.KUBELET_ROOT in view
    # Beneath the node's folder (so `down` unmounts what kubelet mounts there), one per node.
    assert all(s.startswith(a.dir + "/") for s in view.values())
    other = {s for s, _ in realnodes.node_view(b)}
    assert not other & set(view.values())
    assert view[names.KUBELET_ROOT] == str(a.kubelet_root)


def test_containerd_runs_in_the_nodes_view_and_kubelet_joins_it(tmp_path: Path) -> None:
    n = node(tmp_path)
    bins = tmp_path / "bins"
    argv = realnodes.containerd_command(n, bins)
    assert argv[:4] == ["unshare", "--mount", "--propagation", "unchanged"]
    root, binds, command = nodeview.parse(argv[argv.index(str(NODEVIEW)) + 1 :])
    assert root == n.dir
    assert binds == realnodes.node_view(n)
    assert command[0] == str(bins / "containerd")
    kubelet = realnodes.kubelet_command(n, bins, 4242)
    assert kubelet[:2] == ["nsenter", "--mount=/proc/4242/ns/mnt"]
    assert f"--root-dir={names.KUBELET_ROOT}" in kubelet


def test_nodeview_refuses_a_source_outside_the_root_and_says_the_form() -> None:
    with pytest.raises(SystemExit, match="SOURCE beneath /r"):
        nodeview.parse(["/r", "/elsewhere/kubelet=/var/lib/kubelet", "--", "true"])
    with pytest.raises(SystemExit, match="usage"):
        nodeview.parse(["/r", "/r/kubelet=/var/lib/kubelet"])
    with pytest.raises(SystemExit, match="TARGET absolute"):
        nodeview.parse(["/r", "/r/kubelet=var/lib/kubelet", "--", "true"])


def test_every_mount_but_the_root_and_beneath_it_is_enslaved() -> None:
    table = (
        "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
        "40 27 0:40 / /var/lib/kf/ab-0 rw shared:5 - ext4 /dev/vda rw\n"
        "41 40 0:41 / /var/lib/kf/ab-0/containerd/x rw - overlay o rw\n"
        "42 27 0:42 / /var/lib/kf/ab-01 rw - tmpfs t rw\n"
        "43 27 0:43 / /mnt/with\\040space rw - tmpfs t rw\n"
    )
    assert nodeview.points_to_enslave(table, "/var/lib/kf/ab-0/") == [
        "/",
        "/mnt/with space",
        "/var/lib/kf/ab-01",
    ]


@given(st.text(st.characters(codec="utf-8", exclude_characters="\x00/"), min_size=1, max_size=20))
def test_mountinfo_escapes_round_trip(name: str) -> None:
    escaped = "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in name)
    assert nodeview.unescape(escaped) == name


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces and bind mounts need root")
def test_mounts_in_the_nodes_view_reach_its_folder_on_the_host_and_nothing_else(tmp_path: Path) -> None:
    root, target = tmp_path / "node", tmp_path / "host" / "var-lib-kubelet"
    root.mkdir()
    subprocess.run(["mount", "--bind", str(root), str(root)], check=True)
    try:
        subprocess.run(["mount", "--make-shared", str(root)], check=True)
        # In the node's view: bound at the target, and a tmpfs mounted beneath it, as kubelet's volumes.
        volume = f"{target}/pods/v"
        script = (
            f"mkdir -p {volume} && mount -t tmpfs vol {volume} && grep -c ' {target} ' /proc/self/mountinfo"
        )
        run = subprocess.run(
            ["unshare", "--mount", "--propagation", "unchanged", "--", sys.executable, str(NODEVIEW),
             str(root), f"{root}/kubelet={target}", "--", "sh", "-c", script],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "1"
        with open("/proc/self/mountinfo") as table:
            points = [nodeview.unescape(line.split()[4]) for line in table]
        # The volume reached the node's folder on the host; the host's target stayed a plain directory.
        assert f"{root}/kubelet/pods/v" in points
        assert not any(p.startswith(str(target)) for p in points)
        assert target.is_dir()
        assert not any(target.iterdir())
    finally:
        subprocess.run(["umount", "-R", "-l", str(root)], check=False)


def test_a_mount_gone_between_reading_the_table_and_enslaving_it_is_skipped(tmp_path: Path) -> None:
    """Another cluster's node on this host unmounts its containers' mounts at any time: a point read
    from the table and gone by the time it is enslaved must not fail the node's start (seen twice in
    eight starts beside another cluster: "mount --make-slave ...: mount point does not exist")."""
    gone, kept, peer = tmp_path / "gone", tmp_path / "kept", tmp_path / "peer"
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from localcluster import nodeview; import subprocess\n"
        "subprocess.run(['mount', '--make-shared', sys.argv[2]], check=True)\n"
        "subprocess.run(['umount', sys.argv[2]], check=True)\n"
        "nodeview.enslave([sys.argv[2], sys.argv[3]])\n"
        "print([l.split()[6] for l in open('/proc/self/mountinfo') if l.split()[4] == sys.argv[3]][0])\n"
    )
    for point in (gone, kept, peer):
        point.mkdir()
    # In a mount namespace of its own: "gone" is unmounted after the table was read (the race);
    # "kept", shared with a peer, must still be enslaved to that peer group.
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "unchanged", "sh", "-c",
         f"mount -t tmpfs g {gone} && mount -t tmpfs k {kept} && mount --make-shared {kept} && "
         f"mount --bind {kept} {peer} && "
         f'exec "$0" -c "$1" {NODEVIEW.parents[1]} {gone} {kept}', sys.executable, script],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().startswith("master:"), run.stdout
