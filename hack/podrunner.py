#!/usr/bin/env python3
"""Run a stored pod's container command as a local process, seeing the paths and names the pod would.

    python hack/podrunner.py [--kubeconfig K] [-n NS] POD [-c CONTAINER] [-e NAME=VALUE]... [--plan]

kwok turns pods Running without running anything. This runs one container's ``command`` + ``args`` of
the pod *as the API server stores it* (so with whatever admission webhooks injected) on this machine,
as root, without touching the host (shared/reference/pod-runner.md):

- its own mount and UTS namespaces (``unshare --mount --propagation private --uts``); the hostname is
  the pod's (``spec.hostname`` or its name), as in a pod;
- an overlay on ``/etc`` (lower ``/etc``, upper and work directories in a temporary folder): the
  runner writes ``/etc/hosts`` there (the host's entries, the pod's own name, and every Service name
  of the Fluid runtimes whose ``runtime.json`` the pod mounts, all as 127.0.0.1) and ``/etc/hostname``.
  The host's ``/etc`` never changes; the overlay goes away with the namespace;
- volumes (configMap with ``items``/modes, secret, downwardAPI, projected, emptyDir, and hostPath
  when the host path exists) are written to the temporary folder and bind-mounted at their
  ``mountPath`` (``subPath`` and ``readOnly`` honoured; configMap, secret, downwardAPI and projected
  are read-only as in a pod). A mount point that does not exist on the host is created in an overlay
  of its nearest existing ancestor directory, never on the host itself (one whose nearest existing
  ancestor is ``/`` is refused: ``/`` cannot be overlaid). The ServiceAccount volume (a projected
  token) is not mounted: no token is issued to a local process;
- env as kubelet builds it: ``value`` (with ``$(VAR)`` references), ``valueFrom`` (``fieldRef`` of
  the pod's metadata, node and IP fields, ``configMapKeyRef``, ``secretKeyRef``) and ``envFrom``,
  over a base of ``PATH``, ``HOME`` and ``HOSTNAME`` from this machine plus what the caller passes
  (``env=``/``-e``; it stands in for the image's env, so the pod's own env wins);
- ``command``/``args`` with kubelet's ``$(VAR)`` expansion, run in ``workingDir``.

Not emulated: the image (the command must exist on the host), the network (the process shares the
host's; every pod address is 127.0.0.1), users and security contexts (it runs as root), resources,
probes, init containers (run one by naming it), Service-link env. Pods are read with kubectl
(``$KUBECTL``, else the one the local control plane built, else ``kubectl`` on PATH).

The process gets its own process group; stopping it (or its normal exit) kills the whole group, so
nothing it started outlives it, and the temporary folder is removed. Python API: ``run_pod`` (wait for
the exit code) and ``start_pod`` (a handle for long-running processes such as a Mooncake master).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from kubectl_fluid.api import names

LOOPBACK = "127.0.0.1"
# Parents of the mount points the runner may create; /etc is always overlaid (hosts, hostname).
ETC = "/etc"
# Components that run as StatefulSets, whose pods have stable DNS names (SPEC §2).
STATEFUL_COMPONENTS: tuple[names.Component, ...] = ("master", "worker")
# ConfigMap, Secret and projected volumes are read-only in a pod whatever the mount says.
ALWAYS_READ_ONLY = ("configMap", "secret", "downwardAPI", "projected")
DEFAULT_FILE_MODE = 0o644

Json = dict[str, Any]


class PodRunnerError(Exception):
    """The pod cannot be run here; the message says why."""


# ------------------------------------------------------------------ reading the cluster


class PodSource(Protocol):
    """Where the stored pod and the objects its env and volumes name come from."""

    namespace: str

    def pod(self, name: str) -> Json: ...

    def config_map(self, name: str) -> Json | None: ...

    def secret(self, name: str) -> Json | None: ...


def find_kubectl() -> str:
    """$KUBECTL, else the kubectl the local control plane built (hack/build-bins.sh), else PATH."""
    if os.environ.get("KUBECTL"):
        return os.environ["KUBECTL"]
    cache = Path(os.environ.get("KUBECTL_FLUID_CACHE", Path.home() / ".cache" / "kubectl-fluid"))
    built = sorted(cache.glob("bin/*/kubectl")) + sorted(cache.glob("kubernetes-*/kubectl"))
    if built:
        return str(built[-1])
    found = shutil.which("kubectl")
    if not found:
        raise PodRunnerError("no kubectl: set KUBECTL or build the local control plane (make bins)")
    return found


class KubectlSource:
    """Objects read with kubectl, cached per name for the one pod being planned."""

    def __init__(self, kubeconfig: str | Path, namespace: str, kubectl: str | None = None) -> None:
        self.kubeconfig = str(kubeconfig)
        self.namespace = namespace
        self.kubectl = kubectl or find_kubectl()
        self._cache: dict[tuple[str, str], Json | None] = {}

    def _get(self, kind: str, name: str) -> Json | None:
        key = (kind, name)
        if key not in self._cache:
            argv = [self.kubectl, f"--kubeconfig={self.kubeconfig}", "-n", self.namespace]
            argv += ["get", kind, name, "-o", "json", "--ignore-not-found"]
            run = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
            if run.returncode != 0:
                raise PodRunnerError(f"kubectl get {kind} {name}: {run.stderr.strip()}")
            self._cache[key] = json.loads(run.stdout) if run.stdout.strip() else None
        return self._cache[key]

    def pod(self, name: str) -> Json:
        found = self._get("pod", name)
        if found is None:
            raise PodRunnerError(f'pod "{name}" not found in namespace "{self.namespace}"')
        return found

    def config_map(self, name: str) -> Json | None:
        return self._get("configmap", name)

    def secret(self, name: str) -> Json | None:
        return self._get("secret", name)


# ------------------------------------------------------------------ env and command (pure)


def expand(text: str, env: Mapping[str, str]) -> str:
    """kubelet's expansion of command, args and env values: ``$(NAME)`` becomes the value of a
    defined variable and stays as written otherwise; ``$$`` is a literal ``$``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            end = text.find(")", i + 2)
            if end == -1:
                out.append(text[i:])
                break
            name = text[i + 2 : end]
            out.append(env[name] if name in env else text[i : end + 1])
            i = end + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def field_value(pod: Json, path: str) -> str:
    """A ``fieldRef`` of the downward API, for a pod whose every address is loopback."""
    meta, spec = pod.get("metadata", {}), pod.get("spec", {})
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": LOOPBACK,
        "status.podIPs": LOOPBACK,
        "status.hostIP": LOOPBACK,
        "status.hostIPs": LOOPBACK,
    }
    if path in simple:
        return str(simple[path])
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        values: dict[str, str] = meta.get(key) or {}
        if path == prefix:
            return "".join(f"{k}={json.dumps(v)}\n" for k, v in sorted(values.items()))
        if path.startswith(f"{prefix}['") and path.endswith("']"):
            return values.get(path[len(prefix) + 2 : -2], "")
    raise PodRunnerError(f"fieldRef {path} is not supported by the pod runner")


def _object_data(obj: Json | None, kind: str) -> dict[str, bytes] | None:
    """The data of a ConfigMap or Secret as bytes (Secrets and binaryData are base64)."""
    if obj is None:
        return None
    out: dict[str, bytes] = {}
    if kind == "secret":
        out.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
        out.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
    else:
        out.update({k: v.encode() for k, v in (obj.get("data") or {}).items()})
        out.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return out


def _source_data(source: PodSource, kind: str, name: str) -> dict[str, bytes] | None:
    if kind == "secret":
        return _object_data(source.secret(name), kind)
    return _object_data(source.config_map(name), kind)


def _key_ref(source: PodSource, kind: str, ref: Json, env_name: str) -> str | None:
    data = _source_data(source, kind, ref["name"])
    what = "ConfigMap" if kind == "configmap" else "Secret"
    if data is None or ref["key"] not in data:
        if ref.get("optional"):
            return None
        missing = f'key "{ref["key"]}" of {what} "{ref["name"]}"'
        raise PodRunnerError(f"env {env_name}: {missing} not found in namespace {source.namespace}")
    return data[ref["key"]].decode()


def _value_from(pod: Json, entry: Json, source: PodSource) -> str | None:
    ref = entry["valueFrom"]
    if "fieldRef" in ref:
        return field_value(pod, ref["fieldRef"]["fieldPath"])
    if "configMapKeyRef" in ref:
        return _key_ref(source, "configmap", ref["configMapKeyRef"], entry["name"])
    if "secretKeyRef" in ref:
        return _key_ref(source, "secret", ref["secretKeyRef"], entry["name"])
    raise PodRunnerError(f"env {entry['name']}: valueFrom {sorted(ref)} is not supported by the pod runner")


def container_env(pod: Json, container: Json, source: PodSource, base: Mapping[str, str]) -> dict[str, str]:
    """The container's environment: ``base`` (stands in for the image's), then envFrom, then env,
    each ``value`` expanded against what is defined before it, as kubelet does."""
    env = dict(base)
    for entry in container.get("envFrom") or []:
        kind, ref = (
            ("secret", entry["secretRef"]) if "secretRef" in entry else ("configmap", entry["configMapRef"])
        )
        data = _source_data(source, kind, ref["name"])
        if data is None:
            if ref.get("optional"):
                continue
            raise PodRunnerError(f'envFrom: {kind} "{ref["name"]}" not found in namespace {source.namespace}')
        env.update({entry.get("prefix", "") + k: v.decode() for k, v in data.items()})
    for entry in container.get("env") or []:
        if "valueFrom" in entry:
            value = _value_from(pod, entry, source)
            if value is not None:
                env[entry["name"]] = value
        else:
            env[entry["name"]] = expand(entry.get("value", ""), env)
    return env


def find_container(pod: Json, name: str | None) -> Json:
    spec = pod["spec"]
    containers: list[Json] = [*spec.get("containers", []), *spec.get("initContainers", [])]
    if name is None:
        return containers[0]
    for container in containers:
        if container["name"] == name:
            return container
    raise PodRunnerError(
        f'pod {pod["metadata"]["name"]} has no container "{name}"; it has '
        + ", ".join(c["name"] for c in containers)
    )


def container_argv(container: Json, env: Mapping[str, str]) -> list[str]:
    argv = [expand(a, env) for a in [*container.get("command", []), *container.get("args", [])]]
    if not container.get("command"):
        raise PodRunnerError(
            f"container {container['name']} has no command: the runner ignores the image, so it cannot "
            "know the image's entrypoint"
        )
    return argv


# ------------------------------------------------------------------ names (pure)


def dns_forms(name: str, namespace: str) -> list[str]:
    """How a pod may spell a Service-relative name: bare, with the namespace, and fully qualified."""
    svc = names.service_host(name, namespace)
    return [name, f"{name}.{namespace}", svc, f"{svc}.{names.CLUSTER_DOMAIN}"]


def runtime_hostnames(runtime_json: str, namespace: str) -> list[str]:
    """Every Service name a runtime config mentions, and the stable names of its StatefulSet pods
    (``{name}-{i}.{service}``), in every spelling a pod of ``namespace`` may use."""
    config = json.loads(runtime_json)
    out: list[str] = []
    for component in names.COMPONENTS:
        spec = config.get(component)
        if not spec:
            continue
        service = spec["service"]["name"]
        out += dns_forms(service, namespace)
        if component in STATEFUL_COMPONENTS:
            for i in range(int(spec.get("replicas", 0))):
                out += dns_forms(f"{spec['name']}-{i}.{service}", namespace)
    return out


def pod_hostname(pod: Json) -> tuple[str, list[str]]:
    """The pod's hostname and the names kubelet maps to its IP in its /etc/hosts."""
    spec, meta = pod["spec"], pod["metadata"]
    host = (spec.get("hostname") or meta["name"])[: names.DNS_LABEL_MAX]
    aliases = [host]
    if spec.get("subdomain"):
        service_relative = f"{host}.{spec['subdomain']}"
        aliases.insert(0, f"{names.service_host(service_relative, meta['namespace'])}.{names.CLUSTER_DOMAIN}")
    return host, aliases


def hosts_file(current: str, entries: Sequence[Sequence[str]]) -> str:
    """The host's hosts file with ``entries`` (lists of names) appended as loopback addresses."""
    lines = [current if current.endswith("\n") or not current else current + "\n"]
    lines.append("# Added by hack/podrunner.py: the pod and its runtimes' Services on loopback.\n")
    lines += [f"{LOOPBACK}\t{' '.join(entry)}\n" for entry in entries if entry]
    return "".join(lines)


# ------------------------------------------------------------------ volumes


@dataclass(frozen=True)
class Bind:
    source: str
    target: str
    read_only: bool


@dataclass
class Plan:
    """Everything the namespace needs, prepared in ``root`` (a temporary folder)."""

    pod: str
    namespace: str
    container: str
    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    hostname: str
    root: Path
    hosts: list[list[str]]
    overlays: list[str] = field(default_factory=list)
    binds: list[Bind] = field(default_factory=list)
    # Mounts under an overlaid directory, put back on top of the overlay (else it would hide them).
    restores: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> Json:
        return {
            "pod": f"{self.namespace}/{self.pod}",
            "container": self.container,
            "argv": self.argv,
            "cwd": self.cwd,
            "hostname": self.hostname,
            "env": self.env,
            "overlays": self.overlays,
            "binds": [b.__dict__ for b in self.binds],
            "hosts": self.hosts,
        }


def _write_file(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def _relative(item_path: str, volume: str) -> Path:
    rel = Path(item_path)
    if rel.is_absolute() or ".." in rel.parts:
        raise PodRunnerError(f"volume {volume}: item path {item_path!r} must be relative, without '..'")
    return rel


def _write_keys(out: Path, volume: str, src: Json, data: dict[str, bytes] | None, what: str) -> None:
    """A configMap or secret source: every key, or just ``items``, with their modes."""
    default_mode = int(src.get("defaultMode", DEFAULT_FILE_MODE))
    if data is None:
        if src.get("optional"):
            return
        raise PodRunnerError(f"volume {volume}: {what} not found")
    items = src.get("items") or [{"key": k, "path": k} for k in sorted(data)]
    for item in items:
        if item["key"] not in data:
            if src.get("optional"):
                continue
            raise PodRunnerError(f'volume {volume}: {what} has no key "{item["key"]}"')
        mode = int(item.get("mode", default_mode))
        _write_file(out / _relative(item["path"], volume), data[item["key"]], mode)


def _write_downward(out: Path, volume: str, src: Json, pod: Json) -> None:
    default_mode = int(src.get("defaultMode", DEFAULT_FILE_MODE))
    for item in src.get("items") or []:
        if "fieldRef" not in item:
            raise PodRunnerError(f"volume {volume}: only fieldRef items of downwardAPI are supported")
        value = field_value(pod, item["fieldRef"]["fieldPath"]).encode()
        _write_file(out / _relative(item["path"], volume), value, int(item.get("mode", default_mode)))


def _write_projected(out: Path, volume: Json, pod: Json, source: PodSource) -> None:
    src = volume["projected"]
    mode = src.get("defaultMode", DEFAULT_FILE_MODE)
    for part in src.get("sources") or []:
        if "configMap" in part:
            cm = part["configMap"]
            data = _source_data(source, "configmap", cm["name"])
            _write_keys(out, volume["name"], {"defaultMode": mode, **cm}, data, f'ConfigMap "{cm["name"]}"')
        elif "secret" in part:
            sec = part["secret"]
            data = _source_data(source, "secret", sec["name"])
            _write_keys(out, volume["name"], {"defaultMode": mode, **sec}, data, f'Secret "{sec["name"]}"')
        elif "downwardAPI" in part:
            _write_downward(out, volume["name"], {"defaultMode": mode, **part["downwardAPI"]}, pod)
        # clusterTrustBundle is left out (no API access is emulated); a volume with a
        # serviceAccountToken source is skipped whole (is_service_account_volume).


def is_service_account_volume(volume: Json) -> bool:
    """The projected volume the ServiceAccount admission plugin adds (a token, the cluster CA, the
    namespace). Left out: no token is issued to a local process, and without one the rest is of no
    use, while its mount point (/var/run/secrets/...) would need an overlay of /run."""
    sources = (volume.get("projected") or {}).get("sources") or []
    return any("serviceAccountToken" in s for s in sources)


def materialize_volume(volume: Json, pod: Json, source: PodSource, root: Path) -> tuple[str, bool]:
    """Write a volume's content under ``root``; return the path to bind and whether it is forced
    read-only. hostPath binds the host path itself when it exists (else a stand-in directory)."""
    name = volume["name"]
    out = root / "volumes" / name
    kind = next((k for k in volume if k != "name"), "")
    if kind == "hostPath":
        path = volume["hostPath"]["path"]
        if os.path.exists(path):
            return path, False
        if volume["hostPath"].get("type") not in ("DirectoryOrCreate", "FileOrCreate"):
            raise PodRunnerError(f"volume {name}: hostPath {path} does not exist on this host")
        # Never create it on the host: a private stand-in has the same effect for the process.
        if volume["hostPath"]["type"] == "FileOrCreate":
            _write_file(out, b"", DEFAULT_FILE_MODE)
            return str(out), False
    out.mkdir(parents=True, exist_ok=True)
    if kind == "emptyDir":
        out.chmod(0o777)
    elif kind == "configMap":
        cm = volume["configMap"]
        data = _source_data(source, "configmap", cm["name"])
        _write_keys(out, name, cm, data, f'ConfigMap "{cm["name"]}" in namespace {source.namespace}')
    elif kind == "secret":
        sec = volume["secret"]
        data = _source_data(source, "secret", sec["secretName"])
        _write_keys(out, name, sec, data, f'Secret "{sec["secretName"]}" in namespace {source.namespace}')
    elif kind == "downwardAPI":
        _write_downward(out, name, volume["downwardAPI"], pod)
    elif kind == "projected":
        _write_projected(out, volume, pod, source)
    elif kind != "hostPath":
        raise PodRunnerError(f"volume {name}: {kind or 'its'} volumes are not supported by the pod runner")
    return str(out), kind in ALWAYS_READ_ONLY


def runtime_configs(pod: Json, source: PodSource) -> list[str]:
    """runtime.json of every Fluid runtime-config ConfigMap among the pod's volumes."""
    found: list[str] = []
    for volume in pod["spec"].get("volumes") or []:
        refs = [volume["configMap"]] if "configMap" in volume else []
        refs += [
            s["configMap"] for s in (volume.get("projected") or {}).get("sources", []) if "configMap" in s
        ]
        for ref in refs:
            if ref["name"].startswith(names.RUNTIME_CONFIG_PREFIX):
                data = _source_data(source, "configmap", ref["name"]) or {}
                if names.RUNTIME_JSON_KEY in data:
                    found.append(data[names.RUNTIME_JSON_KEY].decode())
    return found


# ------------------------------------------------------------------ mount points


def mount_points() -> list[str]:
    """Mount points of this mount namespace, from /proc/self/mountinfo (octal escapes decoded)."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split(" ")[4]
        out.append(point.encode().decode("unicode_escape").encode("latin-1").decode())
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _nearest_existing(path: str) -> str:
    while not os.path.lexists(path):
        path = os.path.dirname(path)
    return path


def overlay_roots(targets: Sequence[tuple[str, bool]], keep_out: str) -> list[str]:
    """Directories to overlay so that every mount point in ``targets`` ((real path, is a directory))
    can be created without touching the host: /etc, and the nearest existing ancestor of each
    missing (or wrongly typed) mount point. Nested roots collapse into the outermost. ``keep_out``
    (the runner's temporary folder, which holds the overlays' upper directories) must not be in one."""
    roots = {ETC}
    for target, is_dir in targets:
        if os.path.exists(target) and os.path.isdir(target) == is_dir:
            continue
        parent = _nearest_existing(os.path.dirname(target) if os.path.exists(target) else target)
        if parent == "/" or _under(keep_out, parent):
            raise PodRunnerError(
                f"mount point {target} does not exist on this host; the runner creates mount points only in "
                f"an overlay of an existing directory, and {parent} cannot be one"
                + (" (it holds the runner's temporary folder: set TMPDIR elsewhere)" if parent != "/" else "")
            )
        roots.add(parent)
    kept: list[str] = []
    for root in sorted(roots, key=len):
        if not any(_under(root, k) for k in kept):
            kept.append(root)
    return sorted(kept)


def _upper(plan: Plan, index: int) -> Path:
    return plan.root / f"overlay-{index}" / "upper"


def _inside_other_bind(plan: Plan, bind: Bind) -> Bind | None:
    """The bind whose target holds ``bind``'s target (the innermost), if any: its mount point must
    then be made inside that volume, as kubelet does, not on the host."""
    parents = [
        b for b in plan.binds if b is not bind and _under(bind.target, b.target) and b.target != bind.target
    ]
    return max(parents, key=lambda b: len(b.target)) if parents else None


def _make_mount_point(path: Path, is_dir: bool) -> None:
    if is_dir:
        path.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        _write_file(path, b"", DEFAULT_FILE_MODE)


def _prepare_mount_points(plan: Plan) -> None:
    """Overlays for /etc and for the parents of missing mount points; those mount points made in
    the overlays' upper directories (or inside the volume that holds them)."""
    on_host: list[tuple[str, bool]] = []
    for bind in plan.binds:
        is_dir = os.path.isdir(bind.source)
        holder = _inside_other_bind(plan, bind)
        if holder is None:
            on_host.append((bind.target, is_dir))
        elif _under(holder.source, str(plan.root)):
            _make_mount_point(Path(holder.source) / os.path.relpath(bind.target, holder.target), is_dir)
        elif not os.path.exists(bind.target):
            raise PodRunnerError(
                f"mount point {bind.target} would have to be created in host path {holder.source}"
            )
    plan.overlays = overlay_roots(on_host, str(plan.root))
    for index, lower in enumerate(plan.overlays):
        if "," in lower or ":" in lower:
            raise PodRunnerError(f"cannot overlay {lower}: overlayfs options cannot carry ',' or ':'")
        _upper(plan, index).mkdir(parents=True)
        (plan.root / f"overlay-{index}" / "work").mkdir()
    for target, is_dir in on_host:
        if os.path.exists(target) and os.path.isdir(target) == is_dir:
            continue
        index = next(i for i, lower in enumerate(plan.overlays) if _under(target, lower))
        _make_mount_point(_upper(plan, index) / os.path.relpath(target, plan.overlays[index]), is_dir)
    _stage_submounts(plan)


def _stage_submounts(plan: Plan) -> None:
    """What is mounted under an overlaid directory would be hidden by the overlay: it is bound to a
    stage before the overlay is mounted and bound back after (except /etc/hosts and /etc/hostname,
    which the runner's own files replace)."""
    replaced = {f"{ETC}/hosts", f"{ETC}/hostname"}
    points = [p for p in mount_points() if p not in replaced]
    for lower in plan.overlays:
        subs = [p for p in points if _under(p, lower) and p != lower]
        for sub in subs:
            if any(_under(sub, other) and other != sub for other in subs):
                continue  # carried along by its parent's recursive bind
            try:
                is_dir = stat.S_ISDIR(os.stat(sub).st_mode)
            except OSError:
                continue  # a broken mount (e.g. a dead FUSE): nothing to carry over
            stage = plan.root / "stage" / str(len(plan.restores))
            _make_mount_point(stage, is_dir)
            plan.restores.append((sub, str(stage)))


def _etc_file(plan: Plan, name: str, content: str) -> None:
    index = plan.overlays.index(ETC)
    _write_file(_upper(plan, index) / name, content.encode(), DEFAULT_FILE_MODE)


def build_plan(
    pod: Json,
    source: PodSource,
    root: Path,
    container_name: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Plan:
    """Read what the pod needs and write it under ``root``; nothing outside ``root`` changes."""
    container = find_container(pod, container_name)
    hostname, aliases = pod_hostname(pod)
    base = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/root", "HOSTNAME": hostname, **(env or {})}
    full_env = container_env(pod, container, source, base)
    meta = pod["metadata"]
    # The pod's own line as kubelet writes it, then one line per runtime name (some resolvers cap
    # the aliases of one line).
    runtime_names = [
        n for cfg in runtime_configs(pod, source) for n in runtime_hostnames(cfg, meta["namespace"])
    ]
    hosts = [aliases] + [[n] for n in dict.fromkeys(runtime_names) if n not in aliases]
    plan = Plan(
        pod=meta["name"],
        namespace=meta["namespace"],
        container=container["name"],
        argv=container_argv(container, full_env),
        env=full_env,
        cwd=container.get("workingDir"),
        hostname=hostname,
        root=root,
        hosts=hosts,
    )
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    made: dict[str, tuple[str, bool]] = {}
    for mount in sorted(container.get("volumeMounts") or [], key=lambda m: str(m["mountPath"])):
        name = mount["name"]
        if name not in volumes:
            raise PodRunnerError(f"volumeMount {name} of container {container['name']} names no volume")
        if is_service_account_volume(volumes[name]):
            continue
        if name not in made:
            made[name] = materialize_volume(volumes[name], pod, source, root)
        path, forced_ro = made[name]
        sub = mount.get("subPath") or expand(mount.get("subPathExpr", ""), full_env)
        if sub:
            path = str(Path(path) / _relative(sub, name))
        target = os.path.realpath(mount["mountPath"])
        plan.binds.append(Bind(path, target, forced_ro or bool(mount.get("readOnly"))))
    _prepare_mount_points(plan)
    _etc_file(plan, "hosts", hosts_file(Path(f"{ETC}/hosts").read_text(), plan.hosts))
    _etc_file(plan, "hostname", f"{hostname}\n")
    _check_command(plan)
    return plan


def _check_command(plan: Plan) -> None:
    """Fail with the reason before starting when the command is not on this host (the image is
    ignored). A command inside one of the pod's volumes is found only once they are mounted."""
    command = plan.argv[0]
    if "/" in command and not os.path.isabs(command):
        return  # relative to the pod's workingDir: the shell in the namespace reports it if missing
    if os.path.isabs(command):
        if any(_under(os.path.realpath(command), b.target) for b in plan.binds):
            return
        found = os.access(command, os.X_OK)
    else:
        found = shutil.which(command, path=plan.env.get("PATH")) is not None
    if not found:
        raise PodRunnerError(
            f"command {command!r} of container {plan.container} is not on this host (PATH="
            f"{plan.env.get('PATH', '')}); the runner ignores the image, so the command must exist here"
        )


def namespace_script(plan: Plan, mount: str = "mount", hostname: str = "hostname") -> str:
    """The shell run inside the new namespaces before ``exec``-ing the command (``"$@"``)."""
    q = shlex.quote
    lines = ["set -e"]
    for target, stage in plan.restores:
        lines.append(f"{mount} --rbind {q(target)} {q(stage)}")
    for index, lower in enumerate(plan.overlays):
        upper, work = _upper(plan, index), plan.root / f"overlay-{index}" / "work"
        options = f"lowerdir={lower},upperdir={upper},workdir={work}"
        lines.append(f"{mount} -t overlay podrunner -o {q(options)} {q(lower)}")
    for target, stage in plan.restores:
        lines.append(f"{mount} --rbind {q(stage)} {q(target)}")
    for bind in plan.binds:
        lines.append(f"{mount} --bind {q(bind.source)} {q(bind.target)}")
        if bind.read_only:
            lines.append(f"{mount} -o remount,bind,ro {q(bind.target)}")
    lines.append(f"{hostname} {q(plan.hostname)}")
    if plan.cwd:
        lines.append(f"cd {q(plan.cwd)}")
    lines.append('exec "$@"')
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ processes


@dataclass(frozen=True)
class PodResult:
    returncode: int
    stdout: str
    stderr: str


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise PodRunnerError(f"{name} is not installed (util-linux and hostname are needed)")
    return found


class PodProcess:
    """A pod's command running in its own namespaces and process group. Its output is streamed
    (to this process's stdout/stderr, each line prefixed, when ``echo``) and kept."""

    def __init__(self, plan: Plan, echo: bool = True, prefix: str = "") -> None:
        self.plan = plan
        self.prefix = prefix
        self.echo = echo
        self._out: list[bytes] = []
        self._err: list[bytes] = []
        self._cond = threading.Condition()
        self._done = False
        self._returncode: int | None = None
        self._killer: threading.Timer | None = None
        # Reaping happens once, whichever thread gets there first (wait, stop, wait_for_output).
        self._finish_lock = threading.Lock()
        script = namespace_script(plan, _tool("mount"), _tool("hostname"))
        unshare = [_tool("unshare"), "--mount", "--propagation", "private", "--uts", "--"]
        self._popen = subprocess.Popen(
            [*unshare, "/bin/sh", "-c", script, "podrunner", *plan.argv],
            env=plan.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Its own process group: stop() and exit reach everything it started, and a terminal's
            # Ctrl-C reaches the runner, which stops it cleanly, rather than the pod directly.
            start_new_session=True,
        )
        self.pid = self._popen.pid
        assert self._popen.stdout is not None
        assert self._popen.stderr is not None
        self._pumps = [
            threading.Thread(target=self._pump, args=(self._popen.stdout, self._out, "stdout"), daemon=True),
            threading.Thread(target=self._pump, args=(self._popen.stderr, self._err, "stderr"), daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump(self, pipe: IO[bytes], buffer: list[bytes], stream: str) -> None:
        with pipe:
            for line in iter(pipe.readline, b""):
                with self._cond:
                    buffer.append(line)
                    self._cond.notify_all()
                if self.echo:
                    sink = sys.stdout if stream == "stdout" else sys.stderr
                    sink.write(self.prefix + line.decode(errors="replace"))
                    sink.flush()

    @property
    def stdout(self) -> str:
        with self._cond:
            return b"".join(self._out).decode(errors="replace")

    @property
    def stderr(self) -> str:
        with self._cond:
            return b"".join(self._err).decode(errors="replace")

    @property
    def returncode(self) -> int | None:
        return self._returncode

    def group_members(self) -> list[int]:
        """Live processes of the pod's process group (empty once it has been stopped). Zombies
        do not count: they have exited, and only wait for init to reap them."""
        members = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
                    state, _, pgrp = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
                    if int(pgrp) == self.pid and state not in ("Z", "X"):
                        members.append(int(entry.name))
        return members

    def _exited(self, block: bool) -> bool:
        """Whether the leader has exited, leaving it unreaped so its process group id stays ours."""
        if self._done:
            return True
        flags = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
        try:
            return os.waitid(os.P_PID, self.pid, flags) is not None
        except ChildProcessError:  # another thread reaped it meanwhile
            return True

    def poll(self) -> int | None:
        if not self._exited(block=False):
            return None
        return self._finish()

    def wait(self, timeout: float | None = None) -> int:
        """The exit code (negative: killed by that signal). Raises subprocess.TimeoutExpired."""
        if timeout is None:
            self._exited(block=True)
        else:
            deadline = time.monotonic() + timeout
            while not self._exited(block=False):
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(self.plan.argv, timeout)
                time.sleep(0.02)
        return self._finish()

    def _finish(self) -> int:
        with self._finish_lock:
            if not self._done:
                # The leader is a zombie still holding the group id: whatever it left behind dies
                # with it, as a container's processes do when its main process exits.
                self._signal(signal.SIGKILL)
                if self._killer is not None:
                    self._killer.cancel()
                self._returncode = self._popen.wait()
                # SIGKILL takes effect asynchronously: wait, so that "stopped" means gone.
                deadline = time.monotonic() + 10
                while self.group_members() and time.monotonic() < deadline:
                    time.sleep(0.02)
                for pump in self._pumps:
                    pump.join(timeout=10)
                shutil.rmtree(self.plan.root, ignore_errors=True)
                self._done = True
        assert self._returncode is not None
        return self._returncode

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def terminate(self, grace: float = 10.0) -> None:
        """SIGTERM to the whole group now, SIGKILL after ``grace`` seconds unless it has exited;
        returns at once (safe in a signal handler). ``wait()`` collects it."""
        if self._done:
            return
        self._signal(signal.SIGTERM)
        if self._killer is None:
            self._killer = threading.Timer(grace, self._signal, (signal.SIGKILL,))
            self._killer.daemon = True
            self._killer.start()

    def stop(self, grace: float = 10.0) -> int:
        """SIGTERM to the whole group, SIGKILL after ``grace`` seconds; waits and cleans up.
        Idempotent; returns the exit code (negative: the signal that ended it)."""
        self.terminate(grace)
        return self.wait()

    def _found(self, text: bytes) -> bool:
        return any(text in b"".join(buf) for buf in (self._out, self._err))

    def wait_for_output(self, text: str, timeout: float) -> None:
        """Until ``text`` appears in stdout or stderr; fails when the process exits first."""
        needle = text.encode()
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                if self._found(needle):
                    return
                running = any(p.is_alive() for p in self._pumps) and not self._exited(block=False)
                left = deadline - time.monotonic()
                if running and left > 0:
                    self._cond.wait(min(left, 0.2))
                    continue
            if running:
                raise PodRunnerError(f"{self.plan.pod} did not print {text!r} within {timeout:.0f}s")
            self._finish()  # collects the last lines (outside the lock: the pumps need it)
            if self._found(needle):
                return
            raise PodRunnerError(f"{self.plan.pod} exited ({self._returncode}) before printing {text!r}")

    def __enter__(self) -> PodProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_plan(plan: Plan, echo: bool = True, prefix: str = "") -> PodProcess:
    try:
        return PodProcess(plan, echo=echo, prefix=prefix)
    except BaseException:
        shutil.rmtree(plan.root, ignore_errors=True)
        raise


def start_pod_object(
    pod: Json,
    source: PodSource,
    container: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    echo: bool = True,
    prefix: str = "",
) -> PodProcess:
    """Start a container of ``pod`` (a stored Pod as JSON); objects it names come from ``source``."""
    root = Path(tempfile.mkdtemp(prefix="podrunner-"))
    try:
        plan = build_plan(pod, source, root, container, env)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return start_plan(plan, echo=echo, prefix=prefix)


def start_pod(
    kubeconfig: str | Path,
    namespace: str,
    pod: str,
    container: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    echo: bool = True,
    prefix: str = "",
    kubectl: str | None = None,
) -> PodProcess:
    """Start the stored pod's container command in the background; ``stop()`` the handle (or use
    it as a context manager) to end it. ``env`` stands in for the image's env (e.g. PATH)."""
    source = KubectlSource(kubeconfig, namespace, kubectl)
    return start_pod_object(source.pod(pod), source, container, env=env, echo=echo, prefix=prefix)


def wait_result(proc: PodProcess, timeout: float | None = None) -> PodResult:
    """Wait for the exit (stopping the process on timeout or interruption) and return its result."""
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.stop()
        raise PodRunnerError(f"{proc.plan.pod}: still running after {timeout:.0f}s; stopped") from None
    finally:
        proc.stop()  # a no-op after a normal exit; Ctrl-C or another exception must not leak it
    return PodResult(code, proc.stdout, proc.stderr)


def run_pod(
    kubeconfig: str | Path,
    namespace: str,
    pod: str,
    container: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    echo: bool = True,
    prefix: str = "",
    kubectl: str | None = None,
    timeout: float | None = None,
) -> PodResult:
    """Run the stored pod's container command to its end: its exit code and output."""
    proc = start_pod(
        kubeconfig, namespace, pod, container, env=env, echo=echo, prefix=prefix, kubectl=kubectl
    )
    return wait_result(proc, timeout)


# ------------------------------------------------------------------ command line


def _env_pairs(values: Sequence[str]) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --env wants NAME=VALUE, got {value!r}")
        out[name] = rest
    return out


@contextlib.contextmanager
def _forward_signals(stop: Callable[[], object]) -> Iterator[None]:
    """SIGINT/SIGTERM to the runner stop the pod (it is in its own process group)."""

    def handler(signum: int, frame: object) -> None:
        stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("pod", help="name of the stored pod")
    parser.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG", str(Path.home() / ".kube/config"))
    )
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("-c", "--container", help="container (or init container) name; default the first")
    parser.add_argument("-e", "--env", action="append", default=[], metavar="NAME=VALUE", help="image env")
    parser.add_argument("--kubectl", help="kubectl binary (default: $KUBECTL, the built one, PATH)")
    parser.add_argument("--plan", action="store_true", help="print what would run, as JSON, and exit")
    args = parser.parse_args(argv)
    try:
        source = KubectlSource(args.kubeconfig, args.namespace, args.kubectl)
        pod = source.pod(args.pod)
        if args.plan:
            root = Path(tempfile.mkdtemp(prefix="podrunner-"))
            try:
                plan = build_plan(pod, source, root, args.container, _env_pairs(args.env))
                print(json.dumps(plan.summary(), indent=2))
            finally:
                shutil.rmtree(root, ignore_errors=True)
            return 0
        proc = start_pod_object(pod, source, args.container, env=_env_pairs(args.env))
    except PodRunnerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    with _forward_signals(proc.terminate):
        code = proc.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
