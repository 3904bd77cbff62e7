"""Errors of the webhook's pure core. Each message is written for the person whose pod or profile it
refuses: it names the object and what is missing, so they can act without reading logs."""

from __future__ import annotations


class Denied(Exception):
    """The pod must not be admitted. ``message`` goes verbatim into the AdmissionResponse status."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ProfileError(ValueError):
    """The plugin profile cannot be used; start-up must stop rather than serve a wrong set of plugins."""
