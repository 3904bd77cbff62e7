"""Hypothesis strategies: hostile strings, and runtime configs with one in every string field.

The config strategy is derived from the config models themselves, so a field added to them is
fuzzed without touching this file.
"""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from hypothesis import strategies as st
from pydantic import BaseModel

from kubectl_fluid.runtimeconfig import RuntimeConfig

# What breaks naive quoting: quotes of both kinds, expansions and command substitutions, history
# expansion, escapes, line breaks, globbing, comment and operator characters, non-ASCII.
HOSTILE = [
    "",
    "'",
    "''",
    "'\\''",
    "\\'",
    '"',
    '"\'"\'"',
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    "${HOME}",
    "$HOME",
    "$1",
    "$@",
    "\\",
    "\\\\",
    "\\n",
    "\n",
    "a\nb\n",
    "\r\n",
    "\t",
    "!",
    "!!",
    "!$",
    "*",
    "?",
    "~",
    "#",
    ";",
    "&",
    "|",
    "<",
    ">",
    " ",
    "-n",
    "%s%d",
    "=",
    "é漢字🚀",
    "\u2028",
    "\x01\x1b[31m\x7f",
    "EOF",
]

# Any character a Kubernetes string can hold and a shell variable can carry: no NUL (runtime.sh
# refuses it, tested apart) and no lone surrogates (not valid UTF-8, so not in any API object).
_chars = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
hostile_text = st.one_of(
    st.sampled_from(HOSTILE),
    st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=4).map("".join),
    st.text(_chars, max_size=12),
)

_SCALARS: dict[Any, st.SearchStrategy[Any]] = {
    str: hostile_text,
    bool: st.booleans(),
    int: st.integers(min_value=0, max_value=10**6),
}


def for_type(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for a config field's type; optional models are sometimes None (absent)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        present = [a for a in args if a is not type(None)]
        assert len(present) == 1, tp
        return st.none() | for_type(present[0])
    if origin is list:
        return st.lists(for_type(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(hostile_text, hostile_text, max_size=3)
    if tp in _SCALARS:
        return _SCALARS[tp]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        fields = {name: for_type(f.annotation) for name, f in tp.model_fields.items()}
        return st.fixed_dictionaries(fields).map(lambda kw: tp(**kw))
    raise TypeError(f"no strategy for {tp!r}")


runtime_configs: st.SearchStrategy[RuntimeConfig] = for_type(RuntimeConfig)
