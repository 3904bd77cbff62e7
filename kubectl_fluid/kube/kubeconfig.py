"""Which API server to talk to, and as whom: kubeconfig read the way kubectl reads it.

Files: ``--kubeconfig`` alone if given; else every file of ``KUBECONFIG`` (merged, the first to set a
name wins, as client-go merges); else ``~/.kube/config``; else the in-cluster service account.
Relative paths in a file are relative to that file. The context is ``--context`` or the current one;
its namespace (default ``default``) is the namespace of commands without ``-n``.

Written here rather than borrowed from kr8s so that a command pays for no client library at start-up
(``kubectl fluid config show`` must stay close to ``kubectl get cm``). Every field of the v1 format is
served (neither kr8s 0.20 nor the official client's loader serves more: no impersonation in either,
no tokenFile or OIDC refresh in kr8s), and a field it does not know is warned about, never silently
dropped. Decisions where kubectl would do more or less:

- ``auth-provider``: ``oidc`` is served (kubectl still has it): a valid ``id-token`` is sent, an expired
  one is refreshed with the ``refresh-token`` and both are written back to the file that holds the user
  (``kubectl_fluid.kube.oidc``). ``gcp`` and ``azure``, removed from kubectl in 1.26, are refused with
  the exec plugin that replaced them.
- ``exec``: run on every invocation (no credential cache); ``provideClusterInfo`` passes the cluster in
  ``KUBERNETES_EXEC_INFO``; ``interactiveMode`` decides whether the plugin gets the terminal (missing:
  ``IfAvailable``, where kubectl would refuse a ``v1`` plugin without it).
- ``as``, ``as-uid``, ``as-groups``, ``as-user-extra``: sent as client-go's impersonation headers.
- ``proxy-url`` and the proxy environment: ``kubectl_fluid.kube.proxy`` (http, https and socks5).
- A boolean field must be a YAML boolean, as kubectl's strict decoding demands:
  ``insecure-skip-tls-verify: "false"`` (a string) is refused, never read as true.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubectl_fluid.kube.errors import ClientError

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_NAMESPACE = "default"
# The fields of client-go's clientcmd/api/v1 types. ``extensions`` are opaque to clients; the exec
# plugin's cluster configuration is one of them (EXEC_EXTENSION).
CLUSTER_FIELDS = frozenset(
    {
        "server",
        "tls-server-name",
        "insecure-skip-tls-verify",
        "certificate-authority",
        "certificate-authority-data",
        "proxy-url",
        "disable-compression",
        "extensions",
    }
)
USER_FIELDS = frozenset(
    {
        "client-certificate",
        "client-certificate-data",
        "client-key",
        "client-key-data",
        "token",
        "tokenFile",
        "as",
        "as-uid",
        "as-groups",
        "as-user-extra",
        "username",
        "password",
        "auth-provider",
        "exec",
        "extensions",
    }
)
CONTEXT_FIELDS = frozenset({"cluster", "user", "namespace", "extensions"})
EXEC_FIELDS = frozenset(
    {"command", "args", "env", "apiVersion", "installHint", "provideClusterInfo", "interactiveMode"}
)
# The settings of the oidc auth-provider's config (client-go's plugin/pkg/client/auth/oidc).
OIDC_FIELDS = frozenset(
    {
        "client-id",
        "client-secret",
        "id-token",
        "refresh-token",
        "idp-issuer-url",
        "idp-certificate-authority",
        "idp-certificate-authority-data",
        "extra-scopes",
    }
)
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
# The auth-providers kubectl removed, and what replaced each.
REMOVED_AUTH_PROVIDERS = {
    "gcp": "the exec plugin gke-gcloud-auth-plugin",
    "azure": "the exec plugin kubelogin (Azure/kubelogin)",
}


@dataclass(frozen=True)
class Impersonation:
    """``as``, ``as-uid``, ``as-groups``, ``as-user-extra``: whom the API server is asked to act as."""

    user: str | None = None
    uid: str | None = None
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def headers(self) -> list[tuple[str, str]]:
        """client-go's headers, one per group and per extra value (never comma-joined)."""
        out = []
        if self.user:
            out.append(("Impersonate-User", self.user))
        if self.uid:
            out.append(("Impersonate-Uid", self.uid))
        out += [("Impersonate-Group", g) for g in self.groups]
        for key, values in self.extra:
            out += [(f"Impersonate-Extra-{header_key_escape(key)}", v) for v in values]
        return out


# RFC 7230 token characters: what a header name may hold unescaped.
_TCHAR = frozenset(b"!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def header_key_escape(key: str) -> str:
    """An extra's key in a header name, as client-go escapes it: each byte outside the token
    characters, and ``%``, percent-encoded (the API server unescapes it)."""
    return "".join(chr(b) if b in _TCHAR else f"%{b:02X}" for b in key.encode())


@dataclass(frozen=True)
class AuthProvider:
    """An ``auth-provider`` (only ``oidc`` is served), with where to write refreshed tokens back."""

    name: str
    config: Mapping[str, str]
    user: str
    source: Path | None


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
    # With provideClusterInfo: the cluster as ExecCredential.spec.cluster carries it.
    exec_cluster: Mapping[str, Any] | None = None
    impersonate: Impersonation = field(default_factory=Impersonation)
    auth_provider: AuthProvider | None = None


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
    # Fields of the kubeconfig this plugin does not know, each said once (on stderr, by the caller).
    warnings: tuple[str, ...] = ()


def kubeconfig_files(explicit: str | None, env: Mapping[str, str], home: Path) -> list[Path]:
    """The files to read, in precedence order. An explicit file must exist (kubectl agrees);
    ``KUBECONFIG`` entries that do not exist are skipped."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ClientError(f"kubeconfig {explicit} not found; pass an existing file to --kubeconfig")
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
        raise ClientError(f"kubeconfig {source} cannot be parsed: {str(e).splitlines()[0]}") from None
    if not isinstance(loaded, dict):
        raise ClientError(f"kubeconfig {source} is not a mapping")
    return loaded


@dataclass
class Merged:
    """Named entries of every file (first wins), each with the directory its paths are relative to."""

    clusters: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    current_context: str = ""
    # The file each user came from: refreshed OIDC tokens are written back there.
    user_files: dict[str, Path] = field(default_factory=dict)

    def add(self, config: Mapping[str, Any], directory: Path, path: Path | None = None) -> None:
        for key, into in (("clusters", self.clusters), ("users", self.users)):
            for entry in config.get(key) or ():
                if isinstance(entry, dict) and entry.get("name") and entry["name"] not in into:
                    into[str(entry["name"])] = (dict(entry.get(key[:-1]) or {}), directory)
                    if key == "users" and path is not None:
                        self.user_files[str(entry["name"])] = path
        for entry in config.get("contexts") or ():
            if isinstance(entry, dict) and entry.get("name") and entry["name"] not in self.contexts:
                self.contexts[str(entry["name"])] = dict(entry.get("context") or {})
        if not self.current_context:
            self.current_context = str(config.get("current-context") or "")


def resolve(merged: Merged, context: str | None, source: str) -> Access:
    name = context or merged.current_context
    if not name:
        raise ClientError(
            f"no current context in {source}; pass --context or run kubectl config use-context NAME"
        )
    ctx = merged.contexts.get(name)
    if ctx is None:
        known = ", ".join(sorted(merged.contexts)) or "none"
        raise ClientError(f'context "{name}" not found in {source} (contexts: {known}); check --context')
    cluster_name = str(ctx.get("cluster") or "")
    if cluster_name not in merged.clusters:
        raise ClientError(f'cluster "{cluster_name}" of context "{name}" not found in {source}')
    cluster, cluster_dir = merged.clusters[cluster_name]
    server = str(cluster.get("server") or "")
    if not server:
        raise ClientError(f'cluster "{cluster_name}" in {source} has no server')
    user_name = str(ctx.get("user") or "")
    user, user_dir = merged.users.get(user_name, ({}, cluster_dir))
    warnings = [
        *_unknown(ctx, CONTEXT_FIELDS, f'context "{name}"', source),
        *_unknown(cluster, CLUSTER_FIELDS, f'cluster "{cluster_name}"', source),
        *_unknown(user, USER_FIELDS, f'user "{user_name}"', source),
    ]
    owner = f'user "{user_name}"'
    exec_config = _exec(user.get("exec"), user_dir, owner, source)
    if isinstance(user.get("exec"), dict):
        warnings += _unknown(user["exec"], EXEC_FIELDS, f"the exec plugin of {owner}", source)
    ca_file = _path(cluster.get("certificate-authority"), cluster_dir)
    ca_data = _b64(cluster.get("certificate-authority-data"), "certificate-authority-data", source)
    insecure = _bool(cluster, "insecure-skip-tls-verify", f'cluster "{cluster_name}"', source)
    # Read only to be checked: a compressed answer is never asked for, so there is nothing to disable.
    no_compression = _bool(cluster, "disable-compression", f'cluster "{cluster_name}"', source)
    exec_cluster = None
    if exec_config is not None and exec_config.get("provideClusterInfo"):
        ca = ca_data if ca_data is not None or not ca_file else _read(ca_file, "certificate-authority")
        exec_cluster = _exec_cluster_info(cluster, server, ca, insecure, no_compression)
    credentials = Credentials(
        token=_str(user.get("token")),
        token_file=_path(user.get("tokenFile"), user_dir),
        username=_str(user.get("username")),
        password=_str(user.get("password")),
        cert_file=_path(user.get("client-certificate"), user_dir),
        key_file=_path(user.get("client-key"), user_dir),
        cert_data=_b64(user.get("client-certificate-data"), "client-certificate-data", source),
        key_data=_b64(user.get("client-key-data"), "client-key-data", source),
        exec_config=exec_config,
        exec_cluster=exec_cluster,
        impersonate=_impersonation(user, owner, source),
        auth_provider=_auth_provider(user.get("auth-provider"), user_name, merged.user_files.get(user_name)),
    )
    if credentials.auth_provider is not None:
        where = f"the oidc auth-provider of {owner}"
        warnings += [
            f'key "{k}" of {where} in {source} is not an oidc setting; ignored'
            for k in sorted(k for k in credentials.auth_provider.config if k not in OIDC_FIELDS)
        ]
    return Access(
        server=server.rstrip("/"),
        namespace=str(ctx.get("namespace") or DEFAULT_NAMESPACE),
        context=name,
        ca_file=ca_file,
        ca_data=ca_data,
        insecure=insecure,
        tls_server_name=_str(cluster.get("tls-server-name")),
        proxy_url=_str(cluster.get("proxy-url")),
        credentials=credentials,
        warnings=tuple(warnings),
    )


def _unknown(entry: Mapping[str, Any], known: frozenset[str], owner: str, source: str) -> list[str]:
    """A warning per field kubectl's v1 format does not have (a typo, most often): kubectl drops such
    fields silently; here the operator hears of it, with the field it most likely meant."""
    unknown = sorted(str(k) for k in entry if k not in known)
    if not unknown:
        return []
    import difflib  # here, not above: only a kubeconfig with a stray field pays for it

    out = []
    for key in unknown:
        near = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f' (did you mean "{near[0]}"?)' if near else ""
        out.append(f'field "{key}" of {owner} in {source} is not a kubeconfig field; ignored{hint}')
    return out


def _exec_cluster_info(
    cluster: Mapping[str, Any], server: str, ca: bytes | None, insecure: bool, no_compression: bool
) -> dict[str, Any]:
    """``ExecCredential.spec.cluster`` as client-go fills it for ``provideClusterInfo: true``."""
    info: dict[str, Any] = {"server": server}
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = str(cluster["tls-server-name"])
    if insecure:
        info["insecure-skip-tls-verify"] = True
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode()
    if cluster.get("proxy-url"):
        info["proxy-url"] = str(cluster["proxy-url"])
    if no_compression:
        info["disable-compression"] = True
    for extension in cluster.get("extensions") or ():
        if isinstance(extension, dict) and extension.get("name") == EXEC_EXTENSION:
            info["config"] = extension.get("extension")
    return info


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ClientError(f"cannot read {what} {path}: {e.strerror}") from None


def _impersonation(user: Mapping[str, Any], owner: str, source: str) -> Impersonation:
    groups = user.get("as-groups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise ClientError(f"as-groups of {owner} in {source} must be a list of group names")
    extra = user.get("as-user-extra") or {}
    if not isinstance(extra, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in extra.values()
    ):
        raise ClientError(f"as-user-extra of {owner} in {source} must map each key to a list of strings")
    return Impersonation(
        user=_str(user.get("as")),
        uid=_str(user.get("as-uid")),
        groups=tuple(groups),
        extra=tuple((str(k), tuple(v)) for k, v in sorted(extra.items())),
    )


def _auth_provider(value: Any, user_name: str, source: Path | None) -> AuthProvider | None:
    if not value:
        return None
    name = str(value.get("name") or "") if isinstance(value, dict) else ""
    owner = f'user "{user_name}"'
    if name in REMOVED_AUTH_PROVIDERS:
        raise ClientError(
            f"{owner} uses the {name} auth-provider, which kubectl removed in v1.26 (and so does "
            f"kubectl fluid): switch it to {REMOVED_AUTH_PROVIDERS[name]}"
        )
    if name != "oidc":
        raise ClientError(
            f"{owner} uses auth-provider {name!r}, which neither kubectl nor kubectl fluid knows: "
            "switch it to an exec credential plugin"
        )
    config = value.get("config") or {}
    if not isinstance(config, dict):
        raise ClientError(f"the oidc auth-provider of {owner} has a config that is not a mapping")
    return AuthProvider(name, {str(k): str(v) for k, v in config.items()}, user_name, source)


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
        raise ClientError("no kubeconfig found; set KUBECONFIG or pass --kubeconfig (the file kubectl uses)")
    merged = Merged()
    for path in files:
        try:
            text = path.read_text()
        except OSError as e:
            raise ClientError(f"cannot read kubeconfig {path}: {e.strerror}") from None
        merged.add(parse(text, str(path)), path.resolve().parent, path)
    source = str(files[0]) if len(files) == 1 else f"KUBECONFIG ({os.pathsep.join(map(str, files))})"
    return resolve(merged, context, source)


def _bool(entry: Mapping[str, Any], key: str, owner: str, source: str) -> bool:
    """A boolean field as kubectl reads it: absent or null is false, a YAML boolean is itself, and
    anything else (the string ``"false"``, a number) is an error rather than a guess."""
    value = entry.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    raise ClientError(
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
        raise ClientError(f"{key} in {source} is not base64") from None


def _exec(value: Any, directory: Path, owner: str, source: str) -> Mapping[str, Any] | None:
    if not isinstance(value, dict) or not value.get("command"):
        return None
    _bool(value, "provideClusterInfo", f"the exec plugin of {owner}", source)
    mode = value.get("interactiveMode") or "IfAvailable"
    if mode not in INTERACTIVE_MODES:
        raise ClientError(
            f"interactiveMode of the exec plugin of {owner} in {source} is {mode!r}; "
            f"use one of {', '.join(INTERACTIVE_MODES)}"
        )
    command = str(value["command"])
    # client-go: a command with a path separator is relative to the kubeconfig; a bare name is on PATH.
    if os.sep in command and not os.path.isabs(command):
        command = str(directory / command)
    return {**value, "command": command, "interactiveMode": mode}
