"""The Curvine image's recipe (hack/images/curvine.py), without building it: both binaries land where
the CSI driver's --fuse-binary defaults to and answer --help in the new root, and the cache key
follows the binaries' bytes."""

from __future__ import annotations

from pathlib import Path

from images import curvine
from kubectl_fluid.api import names
from localcluster.peers import curvinebins


def binaries(folder: Path, text: str) -> Path:
    folder.mkdir()
    for b in curvine.BINARIES:
        (folder / b).write_text(f"{b} {text}")
    return folder


def test_the_fuse_binary_lands_where_the_driver_looks_and_both_are_checked(tmp_path: Path) -> None:
    hooks = curvine.customize_hooks(binaries(tmp_path / "bins", "v1"))
    assert f"{curvine.PREFIX}/curvine-fuse" == names.FUSE_BINARY
    for b in curvine.BINARIES:
        assert any(h.startswith("install -m 0755") and h.endswith(f'"$1{curvine.PREFIX}/{b}"') for h in hooks)
        assert f'chroot "$1" {curvine.PREFIX}/{b} --help >/dev/null' in hooks


def test_the_cache_key_follows_the_binaries(tmp_path: Path) -> None:
    a = binaries(tmp_path / "a", "v1")
    b = binaries(tmp_path / "b", "v1")
    c = binaries(tmp_path / "c", "v2")
    assert curvine.tag(a, "recipe") == curvine.tag(b, "recipe")
    assert curvine.tag(a, "recipe") != curvine.tag(c, "recipe")
    assert curvine.tag(a, "recipe") != curvine.tag(a, "other recipe")


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
