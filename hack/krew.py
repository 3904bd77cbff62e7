#!/usr/bin/env python3
"""The krew release of the plugin: its archive and its manifest (plugins/fluid.yaml).

    python hack/krew.py archive --out dist/        # dist/kubectl-fluid_v0.1.0.tar.gz, prints its sha256
    python hack/krew.py manifest [--write]         # the manifest for that archive (stdout, or the file)

The archive is the plugin alone, runnable by any python3 >= 3.11 with nothing installed::

    kubectl-fluid            the entry point krew links into its bin/ (a Python script)
    kubectl_complete-fluid   kubectl's shell-completion helper for the plugin
    lib/                     kubectl_fluid's plugin modules, and click, PyYAML (pure Python), tabulate
    LICENSE                  the product's (Apache-2.0)
    licenses/                the licenses of the three libraries in lib/

It is the same for every OS and architecture (pure Python), and reproducible: the same tree gives the
same bytes (sorted entries, fixed times and owners, gzip without a timestamp), so the sha256 in the
manifest names exactly one archive. Which plugin modules go in is the import closure of the plugin's
commands; a third-party import outside the three libraries above fails the build, since the plugin
must start fast and the archive must run without pip.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import importlib.metadata
import importlib.util
import io
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "plugins" / "fluid.yaml"
# Pure-Python distributions the plugin imports, and the top-level modules each contributes.
VENDORED = {"click": ("click",), "PyYAML": ("yaml",), "tabulate": ("tabulate",)}
# Imported by those only when present (libyaml's C binding, tabulate's wide-character widths): left out,
# they fall back to pure Python.
OPTIONAL = {"_yaml", "wcwidth"}
ENTRY_MODULES = ("kubectl_fluid.cli.entry", "kubectl_fluid.cli.complete")
MTIME = 315532800  # 1980-01-01, the zip epoch: any fixed time makes the archive reproducible

LAUNCHER = '''#!/usr/bin/env python3
"""{doc}"""
import os
import sys

if sys.version_info < (3, 11):
    sys.exit("error: kubectl fluid needs Python 3.11 or newer; python3 here is " + sys.version.split()[0])
# krew links this file into its bin/: lib/ is beside the real file, not the link.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "lib"))
from {module} import main  # noqa: E402

sys.exit(main())
'''


def version() -> str:
    sys.path.insert(0, str(REPO))
    from kubectl_fluid import __version__

    return __version__


def repository() -> str:
    """The product's repository, pyproject.toml's ``[project.urls] Repository``: its releases hold the
    archives, and it is the plugin's homepage."""
    with (REPO / "pyproject.toml").open("rb") as f:
        url: str = tomllib.load(f)["project"]["urls"]["Repository"]
    return url.rstrip("/")


def release_uri(v: str) -> str:
    """Where the release's archive is downloaded from (upload it there)."""
    return f"{repository()}/releases/download/v{v}/{archive_name(v)}"


def archive_name(v: str) -> str:
    return f"kubectl-fluid_v{v}.tar.gz"


def _imports(tree: ast.AST) -> Iterator[str]:
    """Modules a module imports at run time (anywhere, functions included; not under TYPE_CHECKING)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def plugin_modules() -> dict[str, Path]:
    """The kubectl_fluid modules the plugin's commands import, following kubectl_fluid's own imports
    only; any other import must be the standard library's or a vendored distribution's."""
    sys.path.insert(0, str(REPO))
    from kubectl_fluid.cli.main import VERBS

    allowed = {m for mods in VENDORED.values() for m in mods} | OPTIONAL
    todo = [*ENTRY_MODULES, *(module for module, _ in VERBS.values())]
    seen, foreign = dict[str, Path](), set[str]()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # ``from module import name``: a function or class, not a module
            continue
        if spec is None or not spec.origin:
            continue
        seen[name] = Path(spec.origin)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # the packages above it
        for imported in _imports(ast.parse(seen[name].read_text())):
            top = imported.split(".")[0]
            if top == "kubectl_fluid":
                todo.append(imported)
            elif top not in sys.stdlib_module_names and top != "__future__":
                foreign.add(top)
    if foreign - allowed:
        raise SystemExit(
            f"error: the plugin imports {', '.join(sorted(foreign - allowed))}, which the krew archive does "
            "not carry: import it only in server code, or add a pure-Python distribution to VENDORED"
        )
    return dict(sorted(seen.items()))


def _files() -> Iterator[tuple[str, bytes, int]]:
    """(path in the archive, content, mode), in a fixed order."""
    for script, module, doc in (
        ("kubectl-fluid", "kubectl_fluid.cli.entry", "kubectl fluid, as krew installs it."),
        ("kubectl_complete-fluid", "kubectl_fluid.cli.complete", "Shell completion of kubectl fluid."),
    ):
        yield script, LAUNCHER.format(doc=doc, module=module).encode(), 0o755
    for origin in plugin_modules().values():
        yield f"lib/{origin.relative_to(REPO)}", origin.read_bytes(), 0o644
    for dist, tops in VENDORED.items():
        distribution = importlib.metadata.distribution(dist)
        for file in sorted(distribution.files or (), key=str):
            path = str(file)
            if path.split("/", maxsplit=1)[0] in tops and path.endswith((".py", ".typed")):
                yield f"lib/{path}", Path(str(distribution.locate_file(file))).read_bytes(), 0o644
            elif "licen" in path.lower() and ".dist-info/" in path:
                text = Path(str(distribution.locate_file(file))).read_bytes()
                yield f"licenses/{dist}-{distribution.version}.txt", text, 0o644
    yield "LICENSE", (REPO / "LICENSE").read_bytes(), 0o644


def build_archive(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / archive_name(version())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        seen_dirs: set[str] = set()
        for path, data, mode in sorted(_files()):
            parts = path.split("/")
            for i in range(1, len(parts)):
                directory = "/".join(parts[:i])
                if directory not in seen_dirs:
                    seen_dirs.add(directory)
                    tar.addfile(_info(directory, 0, 0o755, tarfile.DIRTYPE))
            tar.addfile(_info(path, len(data), mode, tarfile.REGTYPE), io.BytesIO(data))
    with open(target, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(buffer.getvalue())
    return target


def _info(name: str, size: int, mode: int, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.type, info.mtime = size, mode, kind, MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(digest: str, uri: str | None = None) -> str:
    v = version()
    uri = uri or release_uri(v)
    return f"""\
# The krew manifest of kubectl-fluid {v}, generated by `python hack/krew.py manifest --write` (the
# sha256 is that of the archive `hack/krew.py archive` builds from this tree). DO NOT EDIT.
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: fluid
spec:
  version: v{v}
  homepage: {repository()}
  shortDescription: Fluid dataset caches, runtime config and FUSE mounts
  description: |
    Operate Fluid-style dataset caches from kubectl: inject datasets' runtime config into
    workloads (kubectl fluid inject deploy/x --dataset ds1), print it (config show), list
    datasets and the CSI driver's shared FUSE mounts per node, explain why a pod was or was
    not injected, and print the versions of the installed components.
  caveats: |
    kubectl fluid runs on python3 (3.11 or newer) from your PATH; it brings its own libraries.
    For shell completion of its arguments, link the helper beside kubectl's:
      ln -s "${{KREW_ROOT:-$HOME/.krew}}/store/fluid/v{v}/kubectl_complete-fluid" \\
        "${{KREW_ROOT:-$HOME/.krew}}/bin/kubectl_complete-fluid"
    The cluster side (CRDs, controller, webhook, CSI driver) installs with Helm or kustomize.
  platforms:
    - selector:
        matchExpressions:
          - key: os
            operator: In
            values: [darwin, linux]
      uri: {uri}
      sha256: {digest}
      files:
        - from: "*"
          to: .
      bin: kubectl-fluid
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    arch = sub.add_parser("archive", help="build the archive; prints its path and sha256")
    arch.add_argument("--out", type=Path, default=REPO / "dist")
    man = sub.add_parser("manifest", help="the manifest of the archive this tree builds")
    man.add_argument("--write", action="store_true", help=f"write {MANIFEST.relative_to(REPO)}")
    man.add_argument("--archive", type=Path, help="an archive already built (default: build one)")
    man.add_argument(
        "--uri", help="the archive's URI (default: the release download URL of pyproject's Repository)"
    )
    args = parser.parse_args(argv)
    if args.command == "archive":
        built = build_archive(args.out)
        print(f"{built} {sha256(built)}")
        return 0
    built = args.archive
    if built is None:
        import tempfile

        built = build_archive(Path(tempfile.mkdtemp(prefix="krew-")))
    text = manifest(sha256(built), args.uri)
    if args.write:
        MANIFEST.parent.mkdir(exist_ok=True)
        MANIFEST.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
