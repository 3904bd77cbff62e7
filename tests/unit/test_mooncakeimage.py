"""The Mooncake image built without Docker (hack/images/mooncake.py) agrees with images/mooncake/
Dockerfile, pins the wheel the project's ``mooncake`` extra pins, and is what the mooncake
CacheRuntimeClass sample runs: its name, and every command its containers start."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from images import debian, mooncake

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "images" / "mooncake" / "Dockerfile").read_text()
SAMPLE = REPO / "manifests" / "samples" / "cacheruntimeclass-mooncake.yaml"


def sample_containers() -> list[dict[str, object]]:
    [klass] = [d for d in yaml.safe_load_all(SAMPLE.read_text()) if d]
    return [c for part in klass["topology"].values() for c in part["template"]["spec"]["containers"]]


def instruction(keyword: str) -> str:
    found = re.search(rf"^{keyword} (.+)$", DOCKERFILE, re.M)
    assert found, f"no {keyword} in images/mooncake/Dockerfile"
    return found.group(1)


def test_the_wheel_is_the_mooncake_extras_pin_in_both_recipes() -> None:
    pin = mooncake.requirement()
    assert re.fullmatch(r"mooncake-transfer-engine-non-cuda==[\w.]+", pin), pin
    assert instruction("ARG") == f"MOONCAKE={pin}"
    assert '"$MOONCAKE"' in DOCKERFILE


def test_packages_user_command_and_environment_agree_with_the_dockerfile() -> None:
    installed = re.search(r"apt-get install --yes --no-install-recommends ([^\\&\n]+)", DOCKERFILE)
    assert installed
    assert set(installed.group(1).split()) == set(mooncake.PACKAGES)
    assert "libibverbs1" in mooncake.PACKAGES  # the wheel's binaries do not load without it
    config = mooncake.image_config()
    assert config["User"] == instruction("USER")
    assert config["Cmd"] == json.loads(instruction("CMD"))
    env = dict(e.split("=", 1) for e in config["Env"])  # type: ignore[attr-defined]
    assert env["PATH"].startswith(f"{mooncake.PREFIX}/bin:")
    assert f"PATH={mooncake.PREFIX}/bin:$PATH" in DOCKERFILE
    for key in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"):
        assert env[key] == "1"
        assert f"{key}=1" in DOCKERFILE
    assert f"python3 -m venv {mooncake.PREFIX}" in DOCKERFILE
    assert f"--uid {mooncake.UID} --gid {mooncake.UID}" in DOCKERFILE


def test_both_recipes_check_the_same_commands_and_tools() -> None:
    loops = dict(re.findall(r"for \w in ([^;]+); do (\S+)", DOCKERFILE))
    checked = {word for words in loops for word in words.split()}
    assert checked == {*mooncake.COMMANDS, *mooncake.TOOLS}
    hooks = " ".join(mooncake.customize_hooks(Path("/w")))
    for name in (*mooncake.COMMANDS, *mooncake.TOOLS):
        assert name in hooks
    assert "import mooncake.store" in hooks
    assert "import mooncake.store" in DOCKERFILE
    assert f"useradd --system --uid {mooncake.UID}" in hooks
    # The chroot has no network: the venv is installed from the wheels collected on the host alone.
    assert "--no-index" in hooks


def test_the_sample_class_runs_this_image_and_only_its_commands() -> None:
    containers = sample_containers()
    assert containers
    for c in containers:
        # containerd normalises the class's name to the archive's (docker.io/ ...).
        assert f"docker.io/{c['image']}" == mooncake.NAME
        assert c["imagePullPolicy"] == "IfNotPresent"
        assert c["command"][0] == "/bin/sh"  # type: ignore[index]
        script = " ".join(c["args"])  # type: ignore[arg-type]
        started = re.findall(r"\bexec (\S+)", script)
        assert started
        assert set(started) <= set(mooncake.COMMANDS), started
        for tool in re.findall(r"\$\((\w+) ", script):
            assert tool in (*mooncake.TOOLS, "opt", "dirname", "printf"), tool


@pytest.mark.parametrize("recipe", [(), ("a",), ("a", "b")])
def test_the_cache_key_is_the_wheels_then_the_recipe(tmp_path: Path, recipe: tuple[str, ...]) -> None:
    (tmp_path / "b-1-py3-none-any.whl").write_bytes(b"b")
    (tmp_path / "a-1-py3-none-any.whl").write_bytes(b"a")
    key = debian.tag(tmp_path, *recipe)
    assert re.fullmatch(r"[0-9a-f]{12}", key)
    assert debian.tag(tmp_path, *recipe, "changed") != key
    (tmp_path / "a-1-py3-none-any.whl").write_bytes(b"A")
    assert debian.tag(tmp_path, *recipe) != key
