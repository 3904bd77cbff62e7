"""The plugin as a process sees it: help, kubectl's error conventions, flags in either position,
start-up that imports nothing heavy, and completion in Cobra's protocol."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from kubectl_fluid.cli import complete, completers
from kubectl_fluid.cli.main import VERBS, main, normalize_args
from kubectl_fluid.cli.settings import Settings, parse_duration
from tests.unit.fake_apiserver import Server
from tests.unit.test_cli_auth import kubeconfig


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_the_verbs_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert out.startswith("Usage: kubectl fluid [OPTIONS] COMMAND [ARGS]...")
    verbs = [
        line.split()[0]
        for line in out.split("Commands:\n")[1].splitlines()
        if line.startswith("  ") and line.split()
    ]
    assert verbs[:5] == ["inject", "config", "mounts", "datasets", "explain"]


@pytest.mark.parametrize(
    ("asked", "same_as"),
    [
        ([], ["--help"]),
        (["help"], ["--help"]),
        (["help", "inject"], ["inject", "--help"]),
        (["help", "config", "show"], ["config", "show", "--help"]),
        (["config"], ["config", "--help"]),
    ],
)
def test_a_bare_command_and_help_print_the_help_and_succeed(
    capsys: pytest.CaptureFixture[str], asked: list[str], same_as: list[str]
) -> None:
    """kubectl's way (issue 28): ``kubectl fluid`` alone was an ``error: usage:`` with exit 1."""
    code, out, err = run(capsys, *asked)
    assert (code, err) == (0, "")
    assert out.startswith("Usage: kubectl fluid")
    assert out.rstrip() == run(capsys, *same_as)[1].rstrip()


def test_help_of_an_unknown_command_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "help", "nope")
    assert (code, out) == (1, "")
    assert err.startswith("error: no such command 'nope'.")


def test_the_executable_prints_the_help_when_run_bare(tmp_path: Path) -> None:
    for args in ([], ["help"]):
        done = subprocess.run(
            [sys.executable, "-m", "kubectl_fluid.cli.entry", *args],
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": "/usr/bin:/bin", "COLUMNS": "80"},
            cwd=tmp_path,
        )
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout.startswith("Usage: kubectl fluid [OPTIONS] COMMAND [ARGS]...")


@pytest.mark.parametrize(
    "verb",
    [
        ["inject"],
        ["config", "show"],
        ["mounts"],
        ["datasets"],
        ["explain"],
        ["inspect"],
        ["load"],
        ["version"],
    ],
)
def test_every_verb_takes_the_kubectl_flags(capsys: pytest.CaptureFixture[str], verb: list[str]) -> None:
    code, out, _ = run(capsys, *verb, "--help")
    assert code == 0
    for flag in ("-n, --namespace", "--context", "--kubeconfig", "-o, --output", "--no-headers"):
        assert flag in out
    assert ("-A, --all-namespaces" in out) == (verb[0] in ("mounts", "datasets"))


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from kubectl_fluid.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['--help']) == 0\n"
        "    assert main(['inject', '--help']) == 0\n"
        "heavy = {'kr8s', 'pydantic', 'httpx', 'yaml', 'tabulate', 'ssl', 'http',\n"
        "         'webhook', 'controller', 'csi'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["datasets", "--bogus"], "error: no such option '--bogus'."),
        (
            ["datasets", "-o", "table"],
            'error: unable to match a printer suitable for the output format "table", '
            "allowed formats are: json,name,wide,yaml",
        ),
        (
            ["config", "show", "x", "-o", "wide"],
            'error: unable to match a printer suitable for the output format "wide", '
            "allowed formats are: json,name,yaml",
        ),
        (
            ["inject", "deploy/x"],
            "error: --dataset or --fuse is required (or --remove to take datasets away)",
        ),
        (
            ["inject", "deploy/x", "--dataset", "a", "--timeout", "soon"],
            "error: invalid value for --timeout: invalid duration 'soon'",
        ),
        (["nope"], "error: no such command 'nope'."),
    ],
)
def test_usage_errors_are_one_error_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], args: list[str], first_line: str
) -> None:
    code, out, err = run(capsys, *args)
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith(first_line)
    assert len(lines) == 2
    assert lines[1].startswith("See 'kubectl fluid")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["inject", "pod/web", "--dataset", "ds1"],
            "error: cannot inject pod/web: a Pod's spec is immutable",
        ),
        (["inject", "rs/web", "--dataset", "ds1"], 'error: cannot inject "rs": unsupported kind'),
        (["inject", "deploy/web", "--dataset", "other/ds1"], 'error: dataset "other/ds1" names a namespace'),
        (["inject", "deploy/web", "--dataset", "x" * 43], "at most 42 characters"),
        (
            ["inject", "deploy/web", "--dataset", "a.b"],
            'error: dataset "a.b": a Dataset name must be a DNS-1035 label',
        ),
        (["explain", "svc/web"], "error: explain takes pods and workloads, as pod/NAME or deploy|sts|"),
        # One check of a dataset name for every verb (issue 28: config show said "not found").
        (["inject", "deploy/web", "--dataset", ""], 'error: --dataset "" names no dataset; pass DS[,DS...]'),
        (["inject", "deploy/web", "--dataset", " , "], 'error: --dataset " , " names no dataset'),
        (["config", "show", ""], 'error: dataset "": a dataset name is needed'),
        (["config", "show", "Demo"], 'error: dataset "Demo": a Dataset name must be a DNS-1035 label'),
        (["config", "show", "other/ds1"], 'error: dataset "other/ds1" names a namespace'),
        (["config", "show", "x" * 43, "--env"], "at most 42 characters"),
    ],
)
def test_refusals_before_any_request_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code, _, err = run(capsys, *args)
    assert code == 1
    assert err.count("\n") == 1
    assert says in err


def test_an_answer_that_cannot_be_read_is_one_error_line_naming_the_request(
    capsys: pytest.CaptureFixture[str], server: Server, tmp_path: Path
) -> None:
    path = kubeconfig(tmp_path, server, {"token": "t"})
    server.replies["/apis/data.fluid.io/v1alpha1/datasets"] = (200, b'{"items": [{"metadata": ', {})
    code, out, err = run(capsys, "datasets", "-A", f"--kubeconfig={path}")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: the API server's answer to GET /apis/data.fluid.io/v1alpha1/datasets could not be read: "
    )
    assert err.count("\n") == 1


def test_an_unexpected_failure_is_one_line_unless_debugging(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Settings) -> Any:
        raise ValueError("boom")

    monkeypatch.setattr(Settings, "open", broken)
    code, _, err = run(capsys, "datasets")
    assert (code, err) == (
        1,
        "error: unexpected ValueError: boom (set KUBECTL_FLUID_DEBUG=1 for a traceback)\n",
    )
    monkeypatch.setenv("KUBECTL_FLUID_DEBUG", "1")
    with pytest.raises(ValueError, match="boom"):
        main(["datasets"])


def test_connection_flags_work_before_and_after_the_verb(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Settings] = []

    def capture(self: Settings) -> Any:
        seen.append(self)
        raise SystemExit(0)

    monkeypatch.setattr(Settings, "open", capture)
    with pytest.raises(SystemExit):
        main(["-n", "outer", "--context", "c1", "--request-timeout", "2s", "datasets", "-A", "--no-headers"])
    with pytest.raises(SystemExit):
        main(
            [
                "-n",
                "outer",
                "config",
                "--kubeconfig",
                "/k",
                "show",
                "ds1",
                "-n",
                "inner",
                "--request-timeout",
                "0",
            ]
        )
    first, second = seen
    assert (first.namespace, first.context, first.request_timeout) == ("outer", "c1", 2.0)
    assert (first.all_namespaces, first.no_headers) == (True, True)
    assert (second.namespace, second.kubeconfig, second.request_timeout) == ("inner", "/k", None)


def test_bare_dry_run_means_client_and_never_eats_the_next_word() -> None:
    assert normalize_args(["inject", "--dry-run", "deploy/x"]) == ["inject", "--dry-run=client", "deploy/x"]
    assert normalize_args(["--dry-run=server"]) == ["--dry-run=server"]


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("5m", 300), ("1h30m", 5400), ("250ms", 0.25), ("2", 2), ("0", 0)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "5x", "1h 2m", "-1s"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def completions(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    monkeypatch.setattr(sys, "argv", ["kubectl_complete-fluid", *args])
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")  # cluster lookups fail quietly
    assert complete.main() == 0
    return capsys.readouterr().out.splitlines()


def test_completion_in_cobras_protocol(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    verbs = completions(monkeypatch, capsys, "")
    # Every verb, in VERBS' order (read from VERBS: verbs added later are covered too).
    assert [line.split("\t")[0] for line in verbs] == [*VERBS, ":4"]
    assert "\tGive a workload's pods" in verbs[0]
    # A kind completes with a slash and no space after it (2|4).
    assert completions(monkeypatch, capsys, "inject", "st") == ["sts/", ":6"]
    assert completions(monkeypatch, capsys, "mounts", "-o", "") == ["json", "yaml", "wide", "name", ":4"]
    # A bare --dry-run takes no value, so the next word is the workload again.
    assert completions(monkeypatch, capsys, "inject", "--dry-run", "dep") == ["deploy/", ":6"]
    # Files are the shell's job.
    assert completions(monkeypatch, capsys, "datasets", "--kubeconfig", "") == [":0"]
    # Without a cluster, cluster objects complete to nothing, silently.
    assert completions(monkeypatch, capsys, "config", "show", "") == [":4"]
    assert completions(monkeypatch, capsys, "diagnose", "") == ["dataset", "pod", ":4"]
    assert completions(monkeypatch, capsys, "diagnose", "dataset", "") == [":4"]
    # debug takes "pod" then a pod's bare name.
    assert completions(monkeypatch, capsys, "debug", "") == ["pod", ":4"]
    assert completions(monkeypatch, capsys, "debug", "pod", "") == [":4"]
    assert capsys.readouterr().err == ""


def test_dataset_list_completion_continues_after_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(completers, "_names", lambda ctx, path_of, namespaced=True: ["ds1", "ds2", "other"])
    items = completers.dataset_list(None, None, "ds1,")  # type: ignore[arg-type]
    assert [i.value for i in items] == ["ds1,ds2", "ds1,other"]
    assert [i.value for i in completers.workloads(None, None, "deploy/o")] == ["deploy/other"]  # type: ignore[arg-type]
    assert [i.value for i in completers.workloads(None, None, "rs/")] == []  # type: ignore[arg-type]
    assert [i.value for i in completers.pods(None, None, "pod/o")] == ["pod/other"]  # type: ignore[arg-type]
    # diagnose takes a bare name after its word.
    diagnose = click.Context(click.Command("diagnose"))
    diagnose.params["what"] = "dataset"
    assert [i.value for i in completers.diagnose_names(diagnose, None, "d")] == ["ds1", "ds2"]  # type: ignore[arg-type]
    diagnose.params["what"] = "pod"
    assert [i.value for i in completers.diagnose_names(diagnose, None, "o")] == ["other"]  # type: ignore[arg-type]
    assert [i.value for i in completers.pod_names(None, None, "o")] == ["other"]  # type: ignore[arg-type]
    # explain takes pods and workloads (rs/ too).
    assert [i.value for i in completers.explained(None, None, "pod/o")] == ["pod/other"]  # type: ignore[arg-type]
    assert [i.value for i in completers.explained(None, None, "rs/")] == [  # type: ignore[arg-type]
        "rs/ds1",
        "rs/ds2",
        "rs/other",
    ]
    offered = [i.value for i in completers.explained(None, None, "")]  # type: ignore[arg-type]
    assert offered == ["pod/", "deploy/", "sts/", "ds/", "job/", "cronjob/", "rs/"]
