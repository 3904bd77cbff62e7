"""Errors of the driver's pure core, in one place so the gRPC layer maps each to one status code
without the core importing gRPC: ``InvalidParameter`` → INVALID_ARGUMENT, ``ClientlessVolume`` and
``FuseUnavailable`` → FAILED_PRECONDITION, ``StateConflict`` → its ``code``, ``StateFileError`` →
the node refuses to start."""

from __future__ import annotations

from typing import Literal

# gRPC status code names (``grpc.StatusCode[code]``), spelled as strings to keep gRPC out of the core.
ConflictCode = Literal["ALREADY_EXISTS", "FAILED_PRECONDITION"]


class InvalidParameter(ValueError):
    """A StorageClass parameter, volume-context key or request field that cannot be used. ``key``
    names it, so the message a user sees says which line of their YAML to fix."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f'invalid parameter "{key}": {message}')
        self.key = key
        self.message = message


class ClientlessVolume(Exception):
    """A clientless dataset's PV reached NodeStage: there is no FUSE to mount, the runtime config is
    injected into pods instead. The message tells the user what to do."""


class FuseUnavailable(Exception):
    """No FUSE process can be started on this node as configured (``--fuse-binary`` missing or not
    executable): the message names the flag and what to do."""


class StateConflict(Exception):
    """A node call that contradicts what the node already holds (the same volume staged elsewhere,
    a target bound to another volume, unstaging a volume that is still published...)."""

    def __init__(self, message: str, code: ConflictCode = "ALREADY_EXISTS") -> None:
        super().__init__(message)
        self.code: ConflictCode = code


class StateFileError(Exception):
    """The node's state file exists but cannot be read back. Starting empty would forget the
    reference counts of live mounts, so the node service stops with this message instead."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"node state file {path} is unreadable: {reason}; fix it, or move it aside to start "
            "with an empty state"
        )
        self.path = path
        self.reason = reason
