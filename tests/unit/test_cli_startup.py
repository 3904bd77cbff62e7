"""The plugin's start-up (issue 15): what ``--help`` and completion import, and that the root lists its
verbs, from ``VERBS``' summaries, exactly as the verbs themselves would be listed."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.cli import entry, roothelp
from kubectl_fluid.cli.main import VERBS


def modules_after(body: str) -> set[str]:
    """The modules a fresh interpreter holds after ``body`` (stdout silenced)."""
    code = (
        "import sys, io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
        + "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


# Whatever a request needs; none of it is start-up.
REQUEST_MODULES = {"ssl", "_ssl", "http", "http.client", "email", "json", "yaml", "socket", "hashlib"}


def test_help_loads_the_root_alone() -> None:
    loaded = modules_after("from kubectl_fluid.cli.main import main\nassert main(['--help']) == 0")
    assert sorted(m for m in loaded if m.startswith("kubectl_fluid")) == [
        "kubectl_fluid",
        "kubectl_fluid.cli",
        "kubectl_fluid.cli.flags",
        "kubectl_fluid.cli.main",
    ]
    assert loaded & REQUEST_MODULES == set()
    assert "dataclasses" not in loaded


def test_completing_a_verb_loads_no_verb() -> None:
    loaded = modules_after(
        "sys.argv = ['kubectl_complete-fluid', '']\n"
        "from kubectl_fluid.cli.complete import main\n"
        "assert main() == 0"
    )
    assert not {m for m in loaded if m.startswith("kubectl_fluid.")} - {
        "kubectl_fluid.cli",
        "kubectl_fluid.cli.complete",
        "kubectl_fluid.cli.flags",
        "kubectl_fluid.cli.main",
    }
    assert loaded & REQUEST_MODULES == set()


def test_a_verbs_help_loads_that_verb_and_no_client() -> None:
    loaded = modules_after(
        "from kubectl_fluid.cli.main import main\nassert main(['config', 'show', '--help']) == 0"
    )
    assert {module for module, _ in VERBS.values()} & loaded == {"kubectl_fluid.cli.config"}
    assert loaded & REQUEST_MODULES == set()


def test_the_client_loads_no_tls_before_a_request() -> None:
    loaded = modules_after(
        "from kubectl_fluid.kube import kubeconfig, transport\n"
        "access = kubeconfig.Access(server='https://127.0.0.1:6443', namespace='default', context='c')\n"
        "transport.Api(access)"
    )
    assert "kubectl_fluid.kube.transport" in loaded
    assert {"ssl", "_ssl", "http.client"} & loaded == set()


@pytest.mark.parametrize("name", list(VERBS))
def test_a_verb_is_listed_as_its_own_help_would_list_it(name: str) -> None:
    module, summary = VERBS[name]
    verb = getattr(importlib.import_module(module), name)
    assert isinstance(verb, click.Command)
    assert (verb.hidden, verb.deprecated, verb.short_help) == (False, False, None)
    assert summary == " ".join((verb.help or "").partition("\n\n")[0].split())
    listed = click.Command(name, help=summary)
    for limit in range(1, 120):
        assert listed.get_short_help_str(limit) == verb.get_short_help_str(limit)


# The executable's first module answers the root's --help from text click rendered ahead of time.
ENTRY_HELP_MODULES = [
    "kubectl_fluid",
    "kubectl_fluid.cli",
    "kubectl_fluid.cli.entry",
    "kubectl_fluid.cli.roothelp",
]


def run_entry(args: list[str], columns: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    command = [sys.executable, "-m", "kubectl_fluid.cli.entry", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def test_the_entrys_help_loads_no_click() -> None:
    loaded = modules_after("from kubectl_fluid.cli.entry import main\nassert main(['--help']) == 0")
    assert sorted(m for m in loaded if m.startswith("kubectl_fluid")) == ENTRY_HELP_MODULES
    assert not {m for m in loaded if m.split(".")[0] in {"click", "shutil", "json"}}


@pytest.mark.parametrize("columns", [None, "80", "95", "110", "200", "30", "junk"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_the_entrys_help_is_clicks_byte_for_byte(flag: str, columns: str | None) -> None:
    # Widths rendered ahead (80, 110+) and not (95, 30, junk: click's own path) alike.
    fast = run_entry([flag], columns)
    code = "import sys\nfrom kubectl_fluid.cli.main import main\nsys.exit(main())"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | ({"COLUMNS": columns} if columns else {})
    command = [sys.executable, "-c", code, flag]
    slow = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert fast.stdout.startswith("Usage: kubectl fluid [OPTIONS] COMMAND [ARGS]...")


def test_every_other_argument_goes_to_click() -> None:
    for args in (["--help", "--help"], ["version", "--help"], ["--nonsense"]):
        assert entry.rendered_help(args, {"COLUMNS": "80"}) is None
    run = run_entry(["--nonsense"], "80")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "error: no such option '--nonsense'.\nSee 'kubectl fluid --help' for usage.\n"


def test_the_rendered_help_is_current() -> None:
    assert {width: entry.render(width) for width in entry.WIDTHS} == roothelp.TEXTS


# Anything an environment can hold: no NUL, no lone surrogate.
ENV_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=4)


@given(st.one_of(st.none(), st.integers(-5, 400).map(str), ENV_TEXT))
def test_help_width_is_clicks(columns: str | None) -> None:
    env = {} if columns is None else {"COLUMNS": columns}
    saved = os.environ.get("COLUMNS")
    try:
        os.environ.pop("COLUMNS", None)
        os.environ.update(env)
        # click's own: shutil's columns, capped by the root's max_content_width, less 2, at least 50.
        expected = max(min(shutil.get_terminal_size().columns, entry.MAX_CONTENT_WIDTH) - 2, 50)
    finally:
        os.environ.pop("COLUMNS", None)
        if saved is not None:
            os.environ["COLUMNS"] = saved
    assert entry.help_width(env) == expected
