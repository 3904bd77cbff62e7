"""The local control plane as a product of its own: a second cluster runs beside the session's, ``up``
is idempotent, the e2e suite runs against a cluster given through KUBECONFIG, and ``down`` leaves no
process, listener or data behind."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import localcluster
from localcluster.controlplane import CONTROL_PLANE
from localcluster.state import STATE_FILE

REPO = Path(__file__).resolve().parents[2]


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(shutil.which("go") is None, reason="building the local control plane needs Go >= 1.26")
def test_second_cluster_side_by_side_up_twice_then_down(tmp_path: Path, kubeconfig: Path) -> None:
    state = tmp_path / "second"
    first = localcluster.up(state, 1, None)
    try:
        assert str(first.kubeconfig) != str(kubeconfig)
        again = localcluster.up(state, 1, None)
        assert [(p.name, p.pid) for p in again.procs] == [(p.name, p.pid) for p in first.procs]
        assert {p.name for p in first.procs} == set(CONTROL_PLANE)

        # The same e2e suite, unchanged, against a cluster named only by KUBECONFIG.
        env = {**os.environ, "KUBECONFIG": str(first.kubeconfig)}
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/e2e/test_smoke.py"],
            check=False,
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "1 passed" in run.stdout
    finally:
        localcluster.down(state)

    assert not any(p.alive() for p in first.procs)
    assert not [name for name, port in first.ports.items() if listening(port)]
    assert not Path(first.etcd_data_dir).exists()
    assert not first.kubeconfig.exists()
    assert not (state / STATE_FILE).exists()
