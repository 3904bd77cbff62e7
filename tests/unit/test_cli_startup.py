"""The plugin's start-up (issue 15): what ``--help`` and completion import, and that the root lists its
verbs, from ``VERBS``' summaries, exactly as the verbs themselves would be listed."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

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
