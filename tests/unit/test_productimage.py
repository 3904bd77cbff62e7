"""The product's image built without Docker (hack/images/product.py) agrees with the Dockerfile users
build: the same default user, command, PATH, Python environment and Debian packages."""

from __future__ import annotations

import json
import re
from pathlib import Path

from images import product

DOCKERFILE = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()


def runtime_stage() -> str:
    return DOCKERFILE.split("# --- runtime", 1)[1]


def test_user_command_and_environment_agree_with_the_dockerfile() -> None:
    config = product.image_config()
    stage = runtime_stage()
    user = re.search(r"^USER (\S+)", stage, re.M)
    assert user
    assert config["User"] == user.group(1)
    cmd = re.search(r"^CMD (\[.*\])", stage, re.M)
    assert cmd
    assert config["Cmd"] == json.loads(cmd.group(1))
    env = dict(e.split("=", 1) for e in config["Env"])  # type: ignore[attr-defined]
    for key in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"):
        assert f"{key}=1" in stage
        assert env[key] == "1"
    assert env["PATH"].startswith("/opt/fluid/bin:")
    assert "/opt/fluid" in stage


def test_packages_and_entry_points_agree_with_the_dockerfile() -> None:
    stage = runtime_stage()
    installed = re.search(r"apt-get install --yes --no-install-recommends ([^\\&\n]+)", stage)
    assert installed
    assert set(installed.group(1).split()) <= set(product.PACKAGES)
    checked = re.search(r"for c in ([^;]+); do", stage)
    assert checked
    assert set(checked.group(1).split()) <= set(product.CONSOLE_SCRIPTS)
    assert f"--uid {product.UID}" in stage
    hooks = " ".join(product.customize_hooks(Path("/w")))
    assert f"useradd --system --uid {product.UID}" in hooks
    # The chroot has no network: the venv is installed from the wheels collected on the host alone.
    assert "--no-index" in hooks
