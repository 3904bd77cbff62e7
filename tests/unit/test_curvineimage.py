"""The Curvine image's recipe (hack/images/curvine.py), without building it: the binaries land where
the CSI driver's --fuse-binary defaults to and answer --help in the new root, Curvine's own layout
(/entrypoint.sh, CURVINE_HOME's lib/ linked to them) is laid over them, and the cache key follows the
binaries' and Curvine's files' bytes."""

from __future__ import annotations

from pathlib import Path

from images import curvine
from kubectl_fluid.api import names
from localcluster.peers import curvinebins, curvinelayout


def binaries(folder: Path, text: str) -> Path:
    folder.mkdir()
    for b in curvine.BINARIES:
        (folder / b).write_text(f"{b} {text}")
    return folder


def layout(folder: Path, text: str) -> Path:
    (folder / "app" / "curvine").mkdir(parents=True)
    (folder / "entrypoint.sh").write_text(f"#!/bin/bash {text}")
    return folder


def test_the_fuse_binary_lands_where_the_driver_looks_and_both_are_checked(tmp_path: Path) -> None:
    hooks = curvine.customize_hooks(binaries(tmp_path / "bins", "v1"), layout(tmp_path / "root", "v1"))
    assert f"{curvine.PREFIX}/curvine-fuse" == names.FUSE_BINARY
    for b in curvine.BINARIES:
        assert any(h.startswith("install -m 0755") and h.endswith(f'"$1{curvine.PREFIX}/{b}"') for h in hooks)
        assert f'chroot "$1" {curvine.PREFIX}/{b} --help >/dev/null' in hooks


def test_curvines_layout_is_laid_over_the_binaries_and_its_lib_links_to_them(tmp_path: Path) -> None:
    """Curvine's scripts run lib/curvine-server, lib/curvine-fuse and (through bin/cv) lib/curvine-cli:
    each is the binary the CSI driver runs, and Curvine's cv wrapper answers --help in the new root."""
    root = layout(tmp_path / "root", "v1")
    hooks = curvine.customize_hooks(binaries(tmp_path / "bins", "v1"), root)
    copy = hooks.index(f'cp -R --preserve=mode {root}/. "$1/"')
    assert copy > max(i for i, h in enumerate(hooks) if h.startswith("install -m 0755"))
    linked = (("curvine-server", "curvine-server"), ("curvine-fuse", "curvine-fuse"), ("curvine-cli", "cv"))
    for name, binary in linked:
        assert f'ln -s {curvine.PREFIX}/{binary} "$1/app/curvine/lib/{name}"' in hooks
    assert 'chroot "$1" /app/curvine/bin/cv --help >/dev/null' in hooks
    env = curvine.image_config("v")["Env"]
    assert isinstance(env, list)
    assert "CURVINE_HOME=/app/curvine" in env
    assert {"python3", "fuse3"} <= set(curvine.PACKAGES)


def test_curvines_files_land_where_its_dockerfile_puts_them() -> None:
    """curvine-docker/deploy/Dockerfile_*'s runtime stage and build.sh's dist, file by file."""
    where = curvinelayout.destination
    assert where("curvine-docker/deploy/entrypoint.sh") == "entrypoint.sh"
    assert where("./curvine-docker/fluid/entrypoint.sh") == "fluid-entrypoint.sh"
    assert where("curvine-docker/fluid/mountUfs.sh") == "app/curvine/mountUfs.sh"
    assert where("build/bin/cv") == "app/curvine/bin/cv"
    assert where("etc/curvine-env.sh") == "app/curvine/conf/curvine-env.sh"
    assert where("etc/grafana/dashboard.json") is None
    assert where("curvine-docker/fluid/tests/test_config_parse.py") is None
    assert where("curvine-fuse/src/main.rs") is None


def test_the_cache_key_follows_the_binaries_and_curvines_files(tmp_path: Path) -> None:
    a = binaries(tmp_path / "a", "v1")
    b = binaries(tmp_path / "b", "v1")
    c = binaries(tmp_path / "c", "v2")
    la, lb = layout(tmp_path / "la", "v1"), layout(tmp_path / "lb", "v2")
    assert curvine.tag(a, la, "recipe") == curvine.tag(b, la, "recipe")
    assert curvine.tag(a, la, "recipe") != curvine.tag(c, la, "recipe")
    assert curvine.tag(a, la, "recipe") != curvine.tag(a, lb, "recipe")
    assert curvine.tag(a, la, "recipe") != curvine.tag(a, la, "other recipe")


DOCKERFILE = (Path(__file__).resolve().parents[2] / "images" / "curvine" / "Dockerfile").read_text()


def test_the_dockerfile_builds_the_same_image_from_the_pinned_commit() -> None:
    """images/curvine/Dockerfile (for users with Docker) and the recipe stay in step: the same
    binaries at the same prefix, the same packages, Curvine at the commit the test bed pins."""
    version = curvinebins.version()
    assert f"ARG CURVINE={version}\n" in DOCKERFILE
    assert f'org.opencontainers.image.revision="{version}"' in DOCKERFILE
    assert f"docker build -t {curvine.REPOSITORY}:{version} images/curvine" in DOCKERFILE
    assert f"COPY --from=build /out/ {curvine.PREFIX}/" in DOCKERFILE
    assert f"for b in {' '.join(curvine.BINARIES)}; do" in DOCKERFILE
    [runtime_install] = [line for line in DOCKERFILE.splitlines() if "apt-get install" in line][1:]
    assert runtime_install.split("--no-install-recommends")[1].split()[:-1] == sorted(curvine.PACKAGES)


def test_the_dockerfile_lays_out_curvines_files_as_the_recipe() -> None:
    for source, dest in curvinelayout.FILES.items():
        if dest.startswith("app/curvine/"):
            assert f"/src/{source}" in DOCKERFILE
        else:
            assert f"COPY --from=build /src/{source} /{dest}\n" in DOCKERFILE
    for source, dest in curvinelayout.FOLDERS.items():
        assert f"COPY --from=build /src/{source}/ /{dest}/\n" in DOCKERFILE
    for name, binary in curvine.LIB.items():
        assert f"ln -s {curvine.PREFIX}/{binary} {curvine.CURVINE_HOME}/lib/{name}" in DOCKERFILE
    env = curvine.image_config("v")["Env"]
    assert isinstance(env, list)
    for entry in env:
        assert f"{entry} \\\n" in DOCKERFILE or f"{entry}\n" in DOCKERFILE


def test_curvines_patches_are_applied_by_both_recipes_and_say_why() -> None:
    for patch, source in curvinelayout.PATCHES.items():
        text = (curvinelayout.PATCH_DIR / patch).read_text()
        assert f"--- a/{source}\n" in text
        assert text.index("--- a/") > 200, f"{patch} says no reason before its diff"
        assert f"COPY {patch} /tmp/\nRUN patch --forward -p1 < /tmp/{patch}\n" in DOCKERFILE
