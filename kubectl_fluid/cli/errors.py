"""What can go wrong talking to a cluster, and the one line a person reads about it.

Every failure ends as ``error: <what happened>; <what to do>`` on stderr and exit 1 (kubectl's
convention). The API server's own message is kept whole, since it usually names the object and the
rule; what we add is the next step, which the server cannot know.
"""

from __future__ import annotations

from kubectl_fluid.kube.errors import ApiError, Unreachable


class CliError(Exception):
    """A failure already phrased for the operator: printed as ``error: {message}``, exit 1."""


def request_scope(method: str, path: str) -> tuple[str, str, str | None]:
    """(verb, resource, namespace) of an API request, as RBAC and ``kubectl auth can-i`` name them:
    ``GET /apis/data.fluid.io/v1alpha1/namespaces/a/datasets/x`` → ``("get", "datasets.data.fluid.io",
    "a")``. A GET of a collection is ``list``; a subresource reads ``pods/status``."""
    # Here, not at the top: only a failed request pays for it, never ``--help``.
    from kubectl_fluid.kube.resources import scope_of

    scope = scope_of(path)
    if scope is None:
        return method.lower(), path, None
    verb = {"GET": "get" if scope.named else "list", "PATCH": "patch", "PUT": "update", "POST": "create"}.get(
        method.upper(), method.lower()
    )
    resource = f"{scope.resource}.{scope.group}" if scope.group else scope.resource
    return verb, resource, scope.namespace


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
