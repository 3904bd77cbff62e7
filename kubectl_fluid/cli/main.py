"""``kubectl fluid``: the root command, and the one place where failures become ``error: …`` + exit 1.

Start-up is part of the interface (``kubectl fluid --help`` must feel instant): this module imports
only click at the top. ``--help`` and completing a verb's name list the verbs from ``VERBS`` without
importing any of them; a command loads only its own verb, and the API client, YAML, JSON, TLS and
tabulate are imported inside the commands that use them (``tests/unit/test_cli_startup.py`` holds
the start-up to that). No server code (webhook, controller, csi) and no kr8s/pydantic/httpx is ever
imported by the plugin.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import click

from kubectl_fluid.cli.flags import connection_options

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

PROG = "kubectl fluid"
DEBUG_ENV = "KUBECTL_FLUID_DEBUG"


# Verb → (its module, which holds a command named like it; the first paragraph of its help), in the
# order a person meets them. The summary is what the root lists without importing the verb; a unit
# test holds it equal to the verb's own help.
VERBS = {
    "inject": (
        "kubectl_fluid.cli.inject",
        "Give a workload's pods datasets' runtime config (or, with --fuse, mount propagation).",
    ),
    "config": ("kubectl_fluid.cli.config", "Show datasets' runtime config."),
    "mounts": ("kubectl_fluid.cli.mounts", "List the shared FUSE mounts per node."),
    "datasets": ("kubectl_fluid.cli.datasets", "List datasets and whether pods can use them."),
    "explain": (
        "kubectl_fluid.cli.explain",
        "Say whether a pod was injected, and why not; or a workload's pods.",
    ),
    "inspect": (
        "kubectl_fluid.cli.inspect",
        "Show everything a dataset consists of right now, as a tree.",
    ),
    "diagnose": (
        "kubectl_fluid.cli.diagnose",
        "Find what keeps a dataset, or a pod's datasets, from working: each finding with its rule ID.",
    ),
    "debug": (
        "kubectl_fluid.cli.debug",
        "Walk a pod to the objects, node, FUSE and logs behind it; name what fails.",
    ),
    "load": ("kubectl_fluid.cli.load", "Load a dataset's data into its cache: create a DataLoad."),
    "bundle": (
        "kubectl_fluid.cli.bundle",
        "Write a support archive: logs, events, objects and versions, secrets left out.",
    ),
    "version": (
        "kubectl_fluid.cli.version",
        "Print the plugin's version and that of the cluster and its Fluid components.",
    ),
}
# Set in ``ctx.meta`` while the root lists its verbs rather than runs one.
_LISTING = "kubectl_fluid.cli.main.listing"


class Verbs(click.Group):
    """Verbs loaded on use, listed in VERBS' order from their summaries."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in VERBS:
            return None
        module, summary = VERBS[cmd_name]
        if ctx.meta.get(_LISTING):
            # A listing reads only the short help, which click shortens from the first paragraph
            # alone: a command with just that paragraph lists exactly as the verb itself would.
            return click.Command(cmd_name, help=summary)
        import importlib

        command = getattr(importlib.import_module(module), cmd_name)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with _listing(ctx):
            super().format_commands(ctx, formatter)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        with _listing(ctx):
            return super().shell_complete(ctx, incomplete)


@contextlib.contextmanager
def _listing(ctx: click.Context) -> Iterator[None]:
    ctx.meta[_LISTING] = True
    try:
        yield
    finally:
        del ctx.meta[_LISTING]


@click.group(
    cls=Verbs,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="\b\nUse 'kubectl fluid help COMMAND' or 'kubectl fluid COMMAND --help' for more about a command.",
)
@connection_options
def cli(**_: object) -> None:
    """Fluid dataset caches from kubectl: inject datasets' runtime config into workloads, read it,
    and see the shared FUSE mounts of the CSI driver.

    \b
    Start with:
      kubectl fluid version          what is installed, and where
      kubectl fluid datasets -A      which datasets pods can use
      kubectl fluid inject deploy/app --dataset ds1

    The cluster and the user come from the kubeconfig, read as kubectl reads it (--kubeconfig, else
    every file of KUBECONFIG, else ~/.kube/config, else the pod's service account): certificates,
    tokens, tokenFile, exec plugins, the oidc auth-provider, impersonation (as, as-groups), and
    proxy-url or HTTPS_PROXY/NO_PROXY (http, https and socks5 proxies). A field it does not know is
    a warning, never silently dropped.

    Errors are one "error: ..." line on stderr and exit status 1; set KUBECTL_FLUID_DEBUG=1 for a
    traceback of an unexpected one. Shell completion comes through kubectl
    (kubectl_complete-fluid on PATH)."""


def normalize_args(args: Sequence[str]) -> list[str]:
    """kubectl's ``--dry-run`` alone means ``--dry-run=client`` and never takes the next word as its
    value (pflag's NoOptDefVal); click's optional values would, so the bare flag is spelled out."""
    return ["--dry-run=client" if a == "--dry-run" else a for a in args]


def help_args(args: Sequence[str]) -> list[str]:
    """``help [COMMAND...]`` is ``[COMMAND...] --help``, as in kubectl; anything else is kept."""
    if args[:1] == ["help"] and not any(a.startswith("-") for a in args[1:]):
        return [*args[1:], "--help"]
    return list(args)


def _fail(message: str, usage_of: click.Context | None = None) -> int:
    sys.stderr.write(f"error: {message}\n")
    if usage_of is not None:
        sys.stderr.write(f"See '{usage_of.command_path} --help' for usage.\n")
    return 1


def message_for(e: Exception) -> str | None:
    """The ``error:`` line for a failure the plugin knows, None for a bug."""
    # Here, not at the top: only a failure pays for the error types and their wording.
    from kubectl_fluid.cli.errors import CliError, describe_api_error, describe_unreachable
    from kubectl_fluid.kube.errors import ApiError, BadAnswer, ClientError, Unreachable

    if isinstance(e, click.ClickException):
        text = e.format_message()
        # kubectl's errors start in lower case ("error: unknown flag"); click's sentences do not.
        return text[:1].lower() + text[1:] if text[1:2].islower() else text
    if isinstance(e, click.Abort):
        return "interrupted"
    if isinstance(e, ApiError):
        return describe_api_error(e)
    if isinstance(e, Unreachable):
        return describe_unreachable(e)
    if isinstance(e, (CliError, ClientError, BadAnswer)):
        return str(e)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = normalize_args(help_args(sys.argv[1:] if argv is None else argv))
    try:
        result = cli.main(args=args, prog_name=PROG, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as e:
        # A command without its verb (``kubectl fluid``, ``kubectl fluid config``) asks for its help,
        # as kubectl does: printed on stdout, exit 0.
        asked = e.ctx if e.ctx is not None else click.Context(cli, info_name=PROG)
        click.echo(asked.get_help())
        return 0
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as e:
        return failed(e)
    return result if isinstance(result, int) else 0


def failed(e: Exception) -> int:
    """The exit status of a command that raised ``e``, its ``error:`` line written (called while
    handling ``e``: a bug is raised again under KUBECTL_FLUID_DEBUG)."""
    message = message_for(e)
    if message is None:
        if os.environ.get(DEBUG_ENV):
            raise  # noqa: PLE0704 (always called from an except block)
        message = f"unexpected {type(e).__name__}: {e} (set {DEBUG_ENV}=1 for a traceback)"
    return _fail(message, e.ctx if isinstance(e, click.UsageError) else None)


if __name__ == "__main__":
    sys.exit(main())
