"""What can go wrong talking to a cluster, and the one line a person reads about it.

Every failure ends as ``error: <what happened>; <what to do>`` on stderr and exit 1 (kubectl's
convention). The API server's own message is kept whole, since it usually names the object and the
rule; what we add is the next step, which the server cannot know.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote


class CliError(Exception):
    """A failure already phrased for the operator: printed as ``error: {message}``, exit 1."""


class ApiError(Exception):
    """A non-2xx answer from the API server to ``method path``."""

    def __init__(
        self, code: int, reason: str, message: str, *, method: str, path: str, details: Any = None
    ) -> None:
        super().__init__(f"{reason or code}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.method = method
        self.path = path
        self.details = details if isinstance(details, dict) else {}

    @property
    def is_missing_object(self) -> bool:
        """404 for an object (the Status names it), as opposed to a whole kind the server does not
        serve (404 without details: a CRD that is not installed)."""
        return self.code == 404 and bool(self.details.get("name"))


class Unreachable(Exception):
    """No HTTP answer at all: refused, timed out, name not resolved, TLS failed."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"{server}: {reason}")
        self.server = server
        self.reason = reason


def request_scope(method: str, path: str) -> tuple[str, str, str | None]:
    """(verb, resource, namespace) of an API request, as RBAC and ``kubectl auth can-i`` name them:
    ``GET /apis/data.fluid.io/v1alpha1/namespaces/a/datasets/x`` → ``("get", "datasets.data.fluid.io",
    "a")``. A GET of a collection is ``list``; a subresource reads ``pods/status``."""
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
    group = ""
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return method.lower(), path, None
    namespace = None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    verb = {"GET": "get" if named else "list", "PATCH": "patch", "PUT": "update", "POST": "create"}.get(
        method.upper(), method.lower()
    )
    return verb, f"{resource}.{group}" if group else resource, namespace


def describe_api_error(e: ApiError) -> str:
    """The operator's line for an API error no command handled itself."""
    verb, resource, namespace = request_scope(e.method, e.path)
    ns_flag = f" -n {namespace}" if namespace else ""
    message = e.message or e.reason or f"HTTP {e.code}"
    if e.code == 401:
        return (
            f"the API server rejected the credentials of this context ({message}); log in again or "
            "pick another context with --context"
        )
    if e.code == 403:
        return (
            f"{message}; ask a cluster administrator for {verb} on {resource}"
            f" (check with: kubectl auth can-i {verb} {resource}{ns_flag})"
        )
    if e.code == 404 and not e.is_missing_object:
        group = resource.partition(".")[2]
        if group:
            return (
                f"the server does not serve {resource}: is the API group {group} installed? "
                "(kubectl api-resources --api-group " + group + ")"
            )
    if e.code == 404 and namespace:
        return f"{message}; check the namespace (-n {namespace} was used)"
    if e.code == 409:
        return f"{message}; someone else changed it meanwhile, run the command again"
    return message


def describe_unreachable(e: Unreachable) -> str:
    return (
        f"cannot reach the Kubernetes API server at {e.server} ({e.reason}); is the cluster up, and are "
        "--kubeconfig and --context right? (kubectl cluster-info)"
    )
