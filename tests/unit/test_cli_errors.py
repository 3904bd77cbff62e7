"""The one line a person reads when the API says no, or does not answer."""

from __future__ import annotations

import pytest

from kubectl_fluid.cli.errors import describe_api_error, describe_unreachable, request_scope
from kubectl_fluid.kube.errors import ApiError, Unreachable


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        (
            "GET",
            "/apis/data.fluid.io/v1alpha1/namespaces/a/datasets/x",
            ("get", "datasets.data.fluid.io", "a"),
        ),
        (
            "GET",
            "/apis/data.fluid.io/v1alpha1/namespaces/a/datasets",
            ("list", "datasets.data.fluid.io", "a"),
        ),
        ("GET", "/apis/data.fluid.io/v1alpha1/fusemounts", ("list", "fusemounts.data.fluid.io", None)),
        ("PATCH", "/apis/apps/v1/namespaces/a/deployments/x", ("patch", "deployments.apps", "a")),
        ("GET", "/api/v1/namespaces/a/configmaps/fluid-runtime-config-x", ("get", "configmaps", "a")),
        ("GET", "/api/v1/namespaces/a", ("get", "namespaces", None)),
        ("GET", "/api/v1/namespaces/a/pods/p/status", ("get", "pods/status", "a")),
        ("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", ("list", "pods", None)),
    ],
)
def test_request_scope_names_what_rbac_names(
    method: str, path: str, scope: tuple[str, str, str | None]
) -> None:
    assert request_scope(method, path) == scope


def error(code: int, message: str, path: str, method: str = "GET", name: str | None = "x") -> ApiError:
    return ApiError(code, "", message, method=method, path=path, details={"name": name} if name else None)


def test_forbidden_says_which_permission_and_how_to_check() -> None:
    line = describe_api_error(
        error(
            403,
            'datasets.data.fluid.io "x" is forbidden: User "u" cannot get ...',
            "/apis/data.fluid.io/v1alpha1/namespaces/a/datasets/x",
        )
    )
    assert line.startswith('datasets.data.fluid.io "x" is forbidden')
    assert "ask a cluster administrator for get on datasets.data.fluid.io" in line
    assert "kubectl auth can-i get datasets.data.fluid.io -n a" in line


def test_unauthorized_says_to_log_in_again() -> None:
    assert "log in again" in describe_api_error(error(401, "Unauthorized", "/api/v1/namespaces/a/pods"))


def test_a_kind_the_server_does_not_serve_is_a_missing_api_not_a_missing_object() -> None:
    e = error(
        404,
        "the server could not find the requested resource",
        "/apis/data.fluid.io/v1alpha1/namespaces/a/datasets",
        name=None,
    )
    assert not e.is_missing_object
    assert "is the API group data.fluid.io installed?" in describe_api_error(e)
    assert error(404, "x", "/api/v1/namespaces/a/pods/x").is_missing_object


def test_conflict_says_run_again() -> None:
    assert "run the command again" in describe_api_error(
        error(409, "conflict", "/apis/apps/v1/namespaces/a/deployments/x", "PATCH")
    )


def test_unreachable() -> None:
    line = describe_unreachable(Unreachable("https://127.0.0.1:1", "connection refused"))
    assert line.startswith(
        "cannot reach the Kubernetes API server at https://127.0.0.1:1 (connection refused)"
    )
    assert "--kubeconfig" in line
    assert "\n" not in line
