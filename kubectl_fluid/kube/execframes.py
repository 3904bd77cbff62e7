"""The pods/exec stream protocol, as pure functions: what a frame carries and what the end means.

The API server streams an exec over a websocket whose subprotocol is ``v5.channel.k8s.io`` or
``v4.channel.k8s.io`` (kubectl offers v5 first and falls back to v4, so does ``podexec``). Every
binary message is one frame: its first byte is the channel (0 stdin, 1 stdout, 2 stderr, 3 error,
4 resize; 255 close, v5 only, sent by the client), the rest its bytes. Kubelet opens each channel with
an empty frame. The error channel carries, once, a JSON ``metav1.Status``: ``Success``, or
``Failure`` with reason ``NonZeroExitCode`` and the code in a cause ``ExitCode``; any other failure
(no such container, a command that cannot start) is an error of the exec itself, not an exit code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

# Most preferred first, as kubectl offers them.
SUBPROTOCOLS: Final = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE: Final = 255

# A script's output is JSON or a report: kept to this much, the head of stdout, the tail of stderr
# (a failure's last lines say why).
STDOUT_LIMIT: Final = 1 << 20
STDERR_LIMIT: Final = 64 << 10


class ExecProtocolError(Exception):
    """The stream broke the protocol, or the exec itself failed (not the command)."""


@dataclass
class ExecStream:
    """What the frames so far said: output, and the exit code once the error channel has spoken."""

    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    exit_code: int | None = None
    failure: str | None = None  # the exec failed (not the command): the Status's message

    @property
    def finished(self) -> bool:
        return self.exit_code is not None or self.failure is not None

    def feed(self, frame: bytes) -> None:
        """Take one binary message."""
        if not frame:
            return
        channel, data = frame[0], frame[1:]
        if channel == STDOUT:
            if len(self.stdout) < STDOUT_LIMIT:
                self.stdout += data[: STDOUT_LIMIT - len(self.stdout)]
        elif channel == STDERR:
            self.stderr += data
            if len(self.stderr) > STDERR_LIMIT:
                del self.stderr[: len(self.stderr) - STDERR_LIMIT]
        elif channel == ERROR:
            if data:
                self.exit_code, self.failure = status_outcome(data)
        elif channel in (STDIN, RESIZE, CLOSE):
            return  # the server echoes nothing useful on these; a v5 close of a channel ends nothing
        else:
            raise ExecProtocolError(f"a frame on unknown channel {channel}")


def status_outcome(data: bytes) -> tuple[int | None, str | None]:
    """(exit code, None) for a command that ran; (None, message) for an exec that failed."""
    try:
        status: dict[str, Any] = json.loads(data)
    except ValueError as e:
        raise ExecProtocolError(f"the error channel carried no Status: {data[:200]!r}") from e
    if not isinstance(status, dict):
        raise ExecProtocolError(f"the error channel carried no Status: {data[:200]!r}")
    if status.get("status") == "Success":
        return 0, None
    message = str(status.get("message") or status.get("reason") or "exec failed")
    if status.get("reason") == "NonZeroExitCode":
        for cause in (status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                try:
                    return int(cause.get("message", "")), None
                except ValueError:
                    break
    return None, message


def exec_query(command: list[str], container: str) -> list[tuple[str, str]]:
    """The exec endpoint's query: one ``command`` per word, no stdin, no tty."""
    if not command:
        raise ValueError("an exec needs a command")
    return [
        *(("command", word) for word in command),
        ("container", container),
        ("stdin", "false"),
        ("stdout", "true"),
        ("stderr", "true"),
        ("tty", "false"),
    ]


def tail(data: bytes | bytearray, lines: int = 10, limit: int = 1024) -> str:
    """The last ``lines`` non-empty lines of ``data``, at most ``limit`` characters (an Event's
    message is short)."""
    text = bytes(data).decode("utf-8", "replace")
    kept = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
    out = "\n".join(kept)
    return out if len(out) <= limit else "…" + out[-(limit - 1) :]
