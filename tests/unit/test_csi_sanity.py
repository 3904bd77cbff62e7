"""csi-sanity (built with the local control plane) against ``fluid-csi --mode all`` with the real FUSE
stand-in: the CSI spec's own conformance tests, then nothing left mounted or running."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from csi.fuse import mounts

CACHE = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid"))


def csi_sanity() -> str | None:
    if os.environ.get("CSI_SANITY"):
        return os.environ["CSI_SANITY"]
    built = sorted(CACHE.glob("csi-test-*/csi-sanity"))
    return str(built[-1]) if built else None


pytestmark = [
    pytest.mark.skipif(
        os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="real FUSE mounts need root and /dev/fuse"
    ),
    pytest.mark.skipif(csi_sanity() is None, reason="csi-sanity is built by hack/build-bins.sh (make bins)"),
]


def test_csi_sanity_passes_and_leaves_nothing_behind(tmp_path: Path) -> None:
    sock = tmp_path / "csi.sock"
    params = tmp_path / "params.yaml"
    params.write_text('master-addrs: "m1:8995"\nfs-path: "/"\npath-type: DirectoryOrCreate\n')
    env = {**os.environ, "CURVINE_STANDIN_DATA": str(tmp_path / "data")}
    standin = f"{sys.executable} -m csi.standin.fusestandin"
    argv = [sys.executable, "-m", "csi.main", "--mode", "all", "--endpoint", f"unix://{sock}",
            "--node-id", "n1", "--state-dir", str(tmp_path / "state"),
            "--mount-root", str(tmp_path / "plugins"),
            "--backend-root", str(tmp_path / "data"), "--fuse-binary", standin, "--no-mirror"]  # fmt: skip
    with open(tmp_path / "driver.log", "wb") as log:
        driver = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert driver.poll() is None, (tmp_path / "driver.log").read_text()
            assert time.monotonic() < deadline, "the driver never listened"
            time.sleep(0.05)
        run = subprocess.run(
            [str(csi_sanity()), f"--csi.endpoint=unix://{sock}", f"--csi.testvolumeparameters={params}",
             f"--csi.mountdir={tmp_path / 'mnt'}", f"--csi.stagingdir={tmp_path / 'stage'}",
             "--ginkgo.no-color"],
            capture_output=True, text=True, timeout=300, check=False, env=env,
        )  # fmt: skip
        summary = re.search(r"(\d+) Passed \| (\d+) Failed", run.stdout)
        assert summary, run.stdout[-3000:]
        passed, failed = map(int, summary.groups())
        assert (failed, run.returncode) == (0, 0), run.stdout[-5000:]
        assert passed >= 30  # identity, controller and node specs all ran
    finally:
        driver.terminate()
        driver.wait(15)
    assert not [m for m in mounts.mount_table() if m.mount_point.startswith(str(tmp_path))]
    processes = subprocess.run(
        ["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True
    ).stdout
    assert str(tmp_path) not in processes  # no FUSE of this driver outlived it
