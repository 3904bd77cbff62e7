"""The executable's fast path for ``config show`` (kubectl_fluid/cli/fastpath.py): wherever it takes an
argument list, click would have read it the same way; the common spellings are taken; a failure is the
same ``error:`` line; a run it takes imports no click."""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubectl_fluid.cli import configview, entry, fastpath
from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.main import main as click_main
from tests.unit.test_cli_startup import modules_after

WORDS = [
    "config", "show", "ds1", "ds2", "a/b", "", "-n", "--namespace", "--namespace=ns1", "--namespace=",
    "-n=ns", "-nns", "ns1", "ns2", "--context", "ctx", "--context=c2", "--kubeconfig", "/tmp",
    "--kubeconfig=/k/config", "k.yaml", "--request-timeout", "5s", "1h30m", "--request-timeout=0", "soon",
    "--format", "sh", "json", "yaml", "--format=json", "--format=xml", "--env", "--env=1", "-o", "-ojson",
    "--", "--help", "-h", "--no-headers", "-A", "--dry-run", "inject",
]  # fmt: skip


@contextlib.contextmanager
def clicks_reading() -> Iterator[list[tuple[Any, ...]]]:
    """What click hands ``configview.show`` for an argument list (nothing is sent)."""
    seen: list[tuple[Any, ...]] = []

    def show(settings: Any, dataset: str, fmt: str | None, env: bool) -> str:
        seen.append((dataset, settings, fmt, env))
        return ""

    with mock.patch.object(configview, "show", show), contextlib.redirect_stderr(io.StringIO()):
        yield seen


def click_reads(args: list[str]) -> tuple[Any, ...] | None:
    with clicks_reading() as seen:
        code = click_main(args)
    return seen[0] if code == 0 and seen else None


COMMON = [
    ["config", "show", "ds1"],
    ["config", "show", "ds1", "-n", "ns1"],
    ["-n", "ns1", "config", "show", "ds1"],
    ["config", "-n", "ns1", "show", "ds1", "--namespace=ns2"],
    ["config", "show", "--kubeconfig", "k.yaml", "--context=c2", "ds1"],
    ["config", "show", "ds1", "--format", "json", "--request-timeout", "5s"],
    ["config", "show", "ds1", "--env", "--request-timeout=0"],
    ["--context", "ctx", "config", "show", "a/b"],
]


@pytest.mark.parametrize("args", COMMON)
def test_the_common_spellings_take_the_fast_path_as_click_reads_them(args: list[str]) -> None:
    taken = fastpath.parse(args)
    assert taken is not None
    assert tuple(taken) == click_reads(args)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=9))
@example(["config", "show", "ds1", "-n", "ns1", "-n", "ns2"])  # repeated: click's last one wins
@example(["-n", "x", "config", "show", "ds1", "--namespace"])
@example(["config", "show", "ds1", "--request-timeout", "soon"])
@example(["--request-timeout=soon", "config", "show", "ds1", "--request-timeout=5s"])
def test_wherever_the_fast_path_reads_an_argument_list_click_reads_it_the_same(args: list[str]) -> None:
    taken = fastpath.parse(args)
    if taken is not None:
        assert tuple(taken) == click_reads(args), args


# Whole flags, each as the fast path takes it, and single words of WORDS, which it may not.
GOOD_FLAGS = [
    ["-n", "ns1"], ["--namespace", "ns2"], ["--namespace=ns1"], ["--context", "ctx"], ["--context=c2"],
    ["--kubeconfig", "k.yaml"], ["--kubeconfig=/k/config"], ["--request-timeout", "5s"],
    ["--request-timeout=0"],
]  # fmt: skip
VERB_FLAGS = [*GOOD_FLAGS, ["--format", "json"], ["--format=sh"], ["--env"]]
PIECES = {"outer": [*GOOD_FLAGS * 5, *([w] for w in WORDS)], "verb": [*VERB_FLAGS * 4, *([w] for w in WORDS)]}


def assemble(outer: list[list[str]], group: list[list[str]], verb: list[list[str]]) -> list[str]:
    """``[root flags] config [group flags] show [verb flags and the name]``."""
    return [*(w for p in outer for w in p), "config", *(w for p in group for w in p), "show",
            *(w for p in verb for w in p)]  # fmt: skip


@st.composite
def shaped(draw: st.DrawFn) -> list[str]:
    """Mostly lists the fast path takes, with what it must leave to click mixed in."""
    outer = st.lists(st.sampled_from(PIECES["outer"]), max_size=3)
    verb = draw(st.lists(st.sampled_from(PIECES["verb"]), max_size=3))
    return assemble(draw(outer), draw(outer), draw(st.permutations([*verb, ["ds1"]])))


@settings(max_examples=800, deadline=None)
@given(shaped())
@example(["config", "--kubeconfig", "/tmp", "show", "--kubeconfig", "k.yaml", "ds1"])  # click checks both
def test_shaped_argument_lists_are_read_as_click_reads_them(args: list[str]) -> None:
    taken = fastpath.parse(args)
    if taken is not None:
        assert tuple(taken) == click_reads(args), args


def test_shaped_lists_do_reach_the_fast_path() -> None:
    """The property above is not empty: a good share of such lists are taken (a fixed seed)."""
    rng = random.Random(15)

    def some(kind: str) -> list[list[str]]:
        return [rng.choice(PIECES[kind]) for _ in range(rng.randrange(4))]

    lists = [assemble(some("outer"), some("outer"), [*some("verb"), ["ds1"]]) for _ in range(400)]
    taken = sum(fastpath.parse(a) is not None for a in lists)
    assert taken >= 20, taken  # 52 of 400 with this seed


def test_a_failure_is_the_same_error_line_and_status_as_clicks(capsys: pytest.CaptureFixture[str]) -> None:
    def failing(*_: Any) -> str:
        raise CliError('dataset "ds1" not found in namespace "default"; check the name')

    with mock.patch.object(configview, "show", failing):
        fast = entry.main(["config", "show", "ds1"]), capsys.readouterr()
        slow = click_main(["config", "show", "ds1"]), capsys.readouterr()
    assert fast == slow
    assert fast[0] == 1
    assert fast[1].err == 'error: dataset "ds1" not found in namespace "default"; check the name\n'


def test_a_run_on_the_fast_path_imports_no_click() -> None:
    loaded = modules_after(
        "from kubectl_fluid.cli import configview\n"
        "configview.show = lambda *_: 'export FLUID_X=1\\n'\n"
        "from kubectl_fluid.cli.entry import main\n"
        "assert main(['config', 'show', 'ds1', '-n', 'ns1']) == 0"
    )
    assert "kubectl_fluid.cli.fastpath" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "click"}
