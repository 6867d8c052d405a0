"""The typer app: the root group, `--version`, and every command group registered into it.

Imports stay light here: `ci-triage --help` must not pay for pandas, PyGithub or hyperscan, so every
command imports what it needs inside its body.
"""

from __future__ import annotations

from typing import Annotated

import typer

import ci_triage.cli.act as act
import ci_triage.cli.config as config
import ci_triage.cli.logs as logs
import ci_triage.cli.report as report
import ci_triage.cli.runners as runners
import ci_triage.cli.timeline as timeline
from ci_triage.cli.lazy import MODULES, CommandModule, LazyGroup

app = typer.Typer(
    name="ci-triage",
    help="Tell whether a red CI job is the PR's fault or the runner's, with the evidence.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help text: typer's rich help imports rich.markdown, markdown-it and pygments, tripling the
    # start-up time of every `--help` and every usage error.
    rich_markup_mode=None,
    # Each command is built when it is run (or listed by name and help text): see cli/lazy.py.
    cls=LazyGroup,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("ci-triage")
        except PackageNotFoundError:  # run from a source tree that was never installed
            number = "unknown"
        typer.echo(f"ci-triage {number}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[bool, typer.Option(
        "--version", metavar="", is_eager=True, callback=_print_version,
        help="Print ci-triage's version and exit.")] = False,
) -> None:
    """Tell whether a red CI job is the PR's fault or the runner's, with the evidence."""


def _register_d2t(into: typer.Typer) -> None:
    from ci_triage.contracts.d2t_cli import app as d2t_app

    into.add_typer(d2t_app, name="d2t")


for group in (report.register, timeline.register, runners.register, act.register, logs.register, config.register,
              _register_d2t):
    MODULES.append(CommandModule(group))
