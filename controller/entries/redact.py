"""Secrets out of a script's stderr before it becomes an Event or a condition (pure).

Curvine's mountUfs.sh prints the whole ``cv mount`` command line on stderr, S3 secret key included
(``-c s3.credentials.secret=...``); upstream Fluid redacts the command it logs, not the output. An
Event is readable by anyone who may list Events in the namespace, so every ``KEY=VALUE`` or
``KEY: VALUE`` whose key names a credential has its value replaced, whatever script printed it.
"""

from __future__ import annotations

import re
from typing import Final

MASK: Final = "******"
_KEY = r"[\w.\-]*(?:secret|password|passwd|token|credential|access[_\-.]?key|private[_\-.]?key)[\w.\-]*"
_PAIR = re.compile(rf"(?i)\b({_KEY})(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)")


def redact(text: str) -> str:
    return _PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
