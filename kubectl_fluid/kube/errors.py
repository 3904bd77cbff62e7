"""What the plugin's client (``transport``) raises: a request the server answered with an error, a
server that gave no answer, an answer that cannot be read, and a client that cannot even ask (a
kubeconfig, credential or proxy it cannot use). How each reads to the operator is the plugin's
business (``kubectl_fluid.cli.errors``).

The servers' kr8s calls raise ``kubectl_fluid.kube.http.ApiError`` instead.
"""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """The client cannot make the request; the message is already phrased for the operator (what is
    wrong, and where: the kubeconfig file, the context, the credential plugin, the proxy)."""


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


class BadAnswer(Exception):
    """A 2xx answer that is not what was asked for: JSON or protobuf that does not decode. Never a
    shorter list or an empty object in its place."""

    def __init__(self, method: str, path: str, reason: str) -> None:
        super().__init__(f"the API server's answer to {method} {path} could not be read: {reason}")
        self.method = method
        self.path = path
        self.reason = reason


class Unreachable(Exception):
    """No HTTP answer at all: refused, timed out, name not resolved, TLS failed."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"{server}: {reason}")
        self.server = server
        self.reason = reason
