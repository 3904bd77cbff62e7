"""Credentials out of text and objects before they leave the cluster (pure), for the controller's
Events and the plugin's support bundle alike (here, at the library's top, because the plugin may not
import the controller).

Two kinds of thing are masked, whatever printed them:

- a value whose *key* names a credential: ``KEY=VALUE``, ``KEY: VALUE``, ``"KEY": "VALUE"`` (JSON
  inside an annotation or a runtime config's options) and ``--KEY VALUE``/``--KEY=VALUE`` on a command
  line, where the key holds secret, password, passwd, token, credential, access key, private key,
  api key or authorization. Curvine's mountUfs.sh prints its whole ``cv mount`` command line, S3 secret key
  included (``-c s3.credentials.secret=...``); upstream Fluid redacts the command it logs, not the
  output.
- a value that *looks* like one whatever its key: an ``Authorization: Bearer``/``Basic`` credential,
  a JWT (three base64url parts, the first two ``eyJ``), an AWS access key id (``AKIA``/``ASIA`` and 16
  more), a PEM private key block, the password of a URL's user (``s3://KEY:SECRET@host/b``,
  ``https://user:pass@host``: a Dataset's mountPoint, a FUSE's log).

``redact_object()`` applies the same to every string of an API object, and masks the ``value`` of an
env entry (``{name, value}``) or ConfigMap key whose name names a credential. A secret printed bare, in
no recognisable form, cannot be told from other text: nothing here can catch it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

MASK: Final = "******"
_WORD = (
    r"(?:secret|password|passwd|token|credential|access[_\-.]?key|private[_\-.]?key|api[_\-.]?key"
    r"|authorization)"
)
# Bounded on both sides: a long run of word characters costs a bounded look at each boundary, never
# a quadratic one (a log line may be megabytes long).
_KEY = rf"[\w.\-]{{0,64}}{_WORD}[\w.\-]{{0,64}}"
# The words alone, matched on lower-cased text: case-insensitive alternations cost many times more.
_LOWER_WORD = re.compile(_WORD)
# A whole key (an annotation's may carry a prefix: example.com/api-token).
KEY_NAMES_CREDENTIAL: Final = re.compile(rf"(?i)^(?:[\w.\-]+/)?{_KEY}$")
# Keys that name where a credential is, not the credential: secretName, secretKeyRef, tokenPath…
_REFERENCE = re.compile(r"(?i)(?:name|ref|path|file|dir|mode|namespace|secrets|ttl|seconds)$")
# A key (perhaps quoted, as in JSON) then = or :, then the value: quoted (either quote, or JSON's
# escaped quotes inside a string) or a run of characters that closes no quote or bracket around it.
_VALUE = r"""(\\"(?:[^\\]|\\(?!"))*\\"|"[^"]*"|'[^']*'|[^\s"',{}\[\]\\]+)"""
_PAIR = re.compile(rf"""(?i)\b({_KEY})(\\?["']?\s*[=:]\s*){_VALUE}""")
# ``--password hunter2`` (a flag and its value as two words) on a logged command line.
_FLAG = re.compile(rf"""(?i)(?<![\w.\-])(--?{_KEY})(\s+)(?!-){_VALUE}""")
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9\-._~+/]{8,}=*)")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
# scheme://user:password@ : the password masked, the user kept (it tells which account).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,15}://[^\s/:@]{1,256}:)([^\s/@]{1,1024})(@)")
_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(?:-----END \1-----|\Z)", re.DOTALL)


def redact(text: str) -> str:
    """``text`` with every credential it shows masked (``MASK``); text without any is unchanged."""
    # Each pattern runs only where a cheap look finds what it needs: a log may be 5 MiB of lines that
    # hold no credential, and the bundle redacts every one.
    if "PRIVATE KEY-----" in text:
        text = _PEM.sub(lambda m: f"-----BEGIN {m.group(1)}-----{MASK}-----END {m.group(1)}-----", text)
    if "eyJ" in text:
        text = _JWT.sub(MASK, text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    if "AKIA" in text or "ASIA" in text:
        text = _AWS_KEY_ID.sub(MASK, text)
    low = text.lower()
    if "bearer" in low or "basic" in low:
        text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _keyed(text, low)


def _keyed(text: str, low: str) -> str:
    """Values of keys that name a credential masked, on the lines that hold such a word only."""
    hits = [m.start() for m in _LOWER_WORD.finditer(low)]
    if not hits:
        return text
    if len(low) != len(text):  # lower() changed lengths (rare letters): positions do not carry over
        return _FLAG.sub(_masked, _PAIR.sub(_masked, text))
    out, done = [], 0
    for at in hits:
        if at < done:
            continue
        begin, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        end = len(text) if end < 0 else end
        out += [text[done:begin], _FLAG.sub(_masked, _PAIR.sub(_masked, text[begin:end]))]
        done = end
    out.append(text[done:])
    return "".join(out)


def _masked(m: re.Match[str]) -> str:
    key, between, value = m.group(1), m.group(2), m.group(3)
    if _REFERENCE.search(key) or value.strip("\"'\\") == MASK or value.lower() in ("bearer", "basic"):
        return m.group(0)
    quote = value[:2] if value.startswith('\\"') else value[:1] if value[:1] in "\"'" else ""
    return f"{key}{between}{quote}{MASK}{quote}"


def names_credential(key: str) -> bool:
    """Whether a key (an env var's name, a ConfigMap's key, an option's name) names a credential."""
    return bool(KEY_NAMES_CREDENTIAL.match(key)) and not _REFERENCE.search(key)


def redact_object(value: Any) -> Any:
    """A copy of an API object (JSON) with every string redacted, and the value of each env entry or
    mapping key that names a credential masked whole."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_object(v) for v in value]
    if isinstance(value, Mapping):
        named = value.get("name")
        env_like = isinstance(named, str) and "value" in value and names_credential(named)
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(v, str) and v and ((env_like and k == "value") or names_credential(str(k))):
                out[k] = MASK
            else:
                out[k] = redact_object(v)
        return out
    return value
