"""Secrets out of a script's stderr before it becomes an Event or a condition.

An Event is readable by anyone who may list Events in the namespace, so every credential a script
prints is masked, whatever script printed it. The rules live in ``kubectl_fluid/redact.py``, shared
with the plugin's support bundle (which may not import the controller).
"""

from __future__ import annotations

from kubectl_fluid.redact import MASK, redact

__all__ = ["MASK", "redact"]
