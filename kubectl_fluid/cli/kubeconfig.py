"""Which API server to talk to, and as whom: kubeconfig read the way kubectl reads it.

Files: ``--kubeconfig`` alone if given; else every file of ``KUBECONFIG`` (merged, the first to set a
name wins, as client-go merges); else ``~/.kube/config``; else the in-cluster service account.
Relative paths in a file are relative to that file. The context is ``--context`` or the current one;
its namespace (default ``default``) is the namespace of commands without ``-n``.

Written here rather than borrowed from kr8s so that a command pays for no client library at start-up
(``kubectl fluid config show`` must stay close to ``kubectl get cm``). Decisions where kubectl would do
more: ``auth-provider`` (removed from kubectl itself) is refused with what to use instead; an ``exec``
credential plugin is run on every invocation (no credential cache). ``proxy-url`` and the proxy
environment are served by ``kubectl_fluid.cli.proxy``. A boolean field must be a YAML boolean, as
kubectl's strict decoding demands: ``insecure-skip-tls-verify: "false"`` (a string) is refused, never
read as true.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubectl_fluid.cli.errors import CliError

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Credentials:
    token: str | None = None
    token_file: str | None = None
    username: str | None = None
    password: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    exec_config: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Access:
    """Everything needed to open an authenticated connection, and the default namespace."""

    server: str
    namespace: str
    context: str
    ca_file: str | None = None
    ca_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    credentials: Credentials = field(default_factory=Credentials)


def kubeconfig_files(explicit: str | None, env: Mapping[str, str], home: Path) -> list[Path]:
    """The files to read, in precedence order. An explicit file must exist (kubectl agrees);
    ``KUBECONFIG`` entries that do not exist are skipped."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise CliError(f"kubeconfig {explicit} not found; pass an existing file to --kubeconfig")
        return [path]
    listed = env.get("KUBECONFIG", "")
    if listed:
        return [
            Path(p).expanduser() for p in listed.split(os.pathsep) if p and Path(p).expanduser().is_file()
        ]
    default = home / ".kube" / "config"
    return [default] if default.is_file() else []


def parse(text: str, source: str) -> dict[str, Any]:
    """A kubeconfig's content. JSON (valid YAML, and what many tools write) skips the YAML parser."""
    stripped = text.lstrip()
    if not stripped:
        return {}
    try:
        if stripped.startswith("{"):
            import json

            loaded = json.loads(text)
        else:
            import yaml

            loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except Exception as e:  # json.JSONDecodeError or yaml.YAMLError: yaml's is not a ValueError
        raise CliError(f"kubeconfig {source} cannot be parsed: {str(e).splitlines()[0]}") from None
    if not isinstance(loaded, dict):
        raise CliError(f"kubeconfig {source} is not a mapping")
    return loaded


@dataclass
class Merged:
    """Named entries of every file (first wins), each with the directory its paths are relative to."""

    clusters: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    current_context: str = ""

    def add(self, config: Mapping[str, Any], directory: Path) -> None:
        for key, into in (("clusters", self.clusters), ("users", self.users)):
            for entry in config.get(key) or ():
                if isinstance(entry, dict) and entry.get("name") and entry["name"] not in into:
                    into[str(entry["name"])] = (dict(entry.get(key[:-1]) or {}), directory)
        for entry in config.get("contexts") or ():
            if isinstance(entry, dict) and entry.get("name") and entry["name"] not in self.contexts:
                self.contexts[str(entry["name"])] = dict(entry.get("context") or {})
        if not self.current_context:
            self.current_context = str(config.get("current-context") or "")


def resolve(merged: Merged, context: str | None, source: str) -> Access:
    name = context or merged.current_context
    if not name:
        raise CliError(
            f"no current context in {source}; pass --context or run kubectl config use-context NAME"
        )
    ctx = merged.contexts.get(name)
    if ctx is None:
        known = ", ".join(sorted(merged.contexts)) or "none"
        raise CliError(f'context "{name}" not found in {source} (contexts: {known}); check --context')
    cluster_name = str(ctx.get("cluster") or "")
    if cluster_name not in merged.clusters:
        raise CliError(f'cluster "{cluster_name}" of context "{name}" not found in {source}')
    cluster, cluster_dir = merged.clusters[cluster_name]
    server = str(cluster.get("server") or "")
    if not server:
        raise CliError(f'cluster "{cluster_name}" in {source} has no server')
    user_name = str(ctx.get("user") or "")
    user, user_dir = merged.users.get(user_name, ({}, cluster_dir))
    if user.get("auth-provider"):
        raise CliError(
            f'user "{user_name}" uses an auth-provider, which kubectl no longer supports either; '
            "switch it to an exec credential plugin"
        )
    credentials = Credentials(
        token=_str(user.get("token")),
        token_file=_path(user.get("tokenFile"), user_dir),
        username=_str(user.get("username")),
        password=_str(user.get("password")),
        cert_file=_path(user.get("client-certificate"), user_dir),
        key_file=_path(user.get("client-key"), user_dir),
        cert_data=_b64(user.get("client-certificate-data"), "client-certificate-data", source),
        key_data=_b64(user.get("client-key-data"), "client-key-data", source),
        exec_config=_exec(user.get("exec"), user_dir, f'user "{user_name}"', source),
    )
    # Read only to be checked: a compressed answer is never asked for, so there is nothing to disable.
    _bool(cluster, "disable-compression", f'cluster "{cluster_name}"', source)
    return Access(
        server=server.rstrip("/"),
        namespace=str(ctx.get("namespace") or DEFAULT_NAMESPACE),
        context=name,
        ca_file=_path(cluster.get("certificate-authority"), cluster_dir),
        ca_data=_b64(cluster.get("certificate-authority-data"), "certificate-authority-data", source),
        insecure=_bool(cluster, "insecure-skip-tls-verify", f'cluster "{cluster_name}"', source),
        tls_server_name=_str(cluster.get("tls-server-name")),
        proxy_url=_str(cluster.get("proxy-url")),
        credentials=credentials,
    )


def in_cluster(env: Mapping[str, str], root: Path | None = None) -> Access | None:
    root = root or IN_CLUSTER_DIR
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    token = root / "token"
    if not host or not port or not token.is_file():
        return None
    namespace_file = root / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.is_file() else DEFAULT_NAMESPACE
    server_host = f"[{host}]" if ":" in host else host
    return Access(
        server=f"https://{server_host}:{port}",
        namespace=namespace or DEFAULT_NAMESPACE,
        context="in-cluster",
        ca_file=str(root / "ca.crt"),
        credentials=Credentials(token_file=str(token)),
    )


def load(
    kubeconfig: str | None,
    context: str | None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Access:
    env = os.environ if env is None else env
    files = kubeconfig_files(kubeconfig, env, home or Path.home())
    if not files:
        found = in_cluster(env)
        if found is not None and not context:
            return found
        raise CliError("no kubeconfig found; set KUBECONFIG or pass --kubeconfig (the file kubectl uses)")
    merged = Merged()
    for path in files:
        try:
            text = path.read_text()
        except OSError as e:
            raise CliError(f"cannot read kubeconfig {path}: {e.strerror}") from None
        merged.add(parse(text, str(path)), path.resolve().parent)
    source = str(files[0]) if len(files) == 1 else f"KUBECONFIG ({os.pathsep.join(map(str, files))})"
    return resolve(merged, context, source)


def _bool(entry: Mapping[str, Any], key: str, owner: str, source: str) -> bool:
    """A boolean field as kubectl reads it: absent or null is false, a YAML boolean is itself, and
    anything else (the string ``"false"``, a number) is an error rather than a guess."""
    value = entry.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    raise CliError(
        f"{key} of {owner} in {source} must be true or false, not {value!r}; "
        "write it without quotes (kubectl refuses it too)"
    )


def _str(value: Any) -> str | None:
    return str(value) if value else None


def _path(value: Any, directory: Path) -> str | None:
    if not value:
        return None
    path = Path(str(value)).expanduser()
    return str(path if path.is_absolute() else directory / path)


def _b64(value: Any, key: str, source: str) -> bytes | None:
    if not value:
        return None
    try:
        return base64.b64decode(str(value), validate=False)
    except ValueError:
        raise CliError(f"{key} in {source} is not base64") from None


def _exec(value: Any, directory: Path, owner: str, source: str) -> Mapping[str, Any] | None:
    if not isinstance(value, dict) or not value.get("command"):
        return None
    _bool(value, "provideClusterInfo", f"the exec plugin of {owner}", source)
    command = str(value["command"])
    # client-go: a command with a path separator is relative to the kubeconfig; a bare name is on PATH.
    if os.sep in command and not os.path.isabs(command):
        command = str(directory / command)
    return {**value, "command": command}
