"""One place that turns the driver's exceptions into gRPC status codes, so every servicer method
answers the code the CSI specification asks for and none forgets a mapping.

The core raises plain exceptions (csi/model/errors.py) and never imports gRPC; servicers raise ``RpcFailure``
for conditions that only exist at the RPC level (a missing request field, an unsupported capability).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from csi.backends.backend import BackendPathError, BackendUnavailable
from csi.model.errors import ClientlessVolume, FuseUnavailable, InvalidParameter, StateConflict

log = logging.getLogger("csi")

Context = grpc.aio.ServicerContext[Any, Any]
_S = TypeVar("_S")
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


class RpcFailure(Exception):
    """Answer the current RPC with ``code`` and ``message``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def required(field: str) -> RpcFailure:
    """The CSI answer to a missing REQUIRED field: INVALID_ARGUMENT naming it."""
    return RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{field} is required")


def _status(err: Exception) -> tuple[grpc.StatusCode, str] | None:
    if isinstance(err, RpcFailure):
        return err.code, err.message
    if isinstance(err, InvalidParameter | BackendPathError):
        return grpc.StatusCode.INVALID_ARGUMENT, str(err)
    if isinstance(err, ClientlessVolume | FuseUnavailable):
        return grpc.StatusCode.FAILED_PRECONDITION, str(err)
    if isinstance(err, StateConflict):
        return grpc.StatusCode[err.code], str(err)
    if isinstance(err, BackendUnavailable):
        return grpc.StatusCode.UNAVAILABLE, str(err)
    return None


def rpc(
    method: Callable[[_S, _Req, Context], Awaitable[_Resp]],
) -> Callable[[_S, _Req, Context], Awaitable[_Resp]]:
    """Decorate an async servicer method: known exceptions become their status code; anything else
    is logged with its traceback and answered INTERNAL (gRPC's own fallback, UNKNOWN, would hide it
    from the driver's logs)."""

    @functools.wraps(method)
    async def wrapper(self: _S, request: _Req, context: Context) -> _Resp:
        try:
            return await method(self, request, context)
        except Exception as err:
            status = _status(err)
            if status is None:
                if isinstance(err, grpc.aio.AbortError):
                    raise  # the method called context.abort itself
                log.exception("%s failed", method.__name__)
                status = grpc.StatusCode.INTERNAL, f"{type(err).__name__}: {err}"
            else:
                log.info("%s: %s %s", method.__name__, status[0].name, status[1])
            await context.abort(*status)

    return wrapper
