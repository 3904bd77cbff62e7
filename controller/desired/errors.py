"""The error desired-state builders raise: a runtime config error (the controller reports it as a
``Ready=False`` condition and a Warning Event) with the reason that condition carries."""

from __future__ import annotations

from typing import Final

from kubectl_fluid.runtimeconfig import RuntimeConfigError

# Reasons, by whose object holds the mistake.
INVALID_SPEC: Final = "InvalidSpec"
INVALID_RUNTIME_CLASS: Final = "InvalidRuntimeClass"
INVALID_TIERED_STORE: Final = "InvalidTieredStore"


class SpecError(RuntimeConfigError):
    def __init__(self, message: str, reason: str = INVALID_SPEC) -> None:
        super().__init__(message)
        self.reason = reason
