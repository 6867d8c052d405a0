"""`ci-triage timeline`: the jobs of a PR's correlation window as a Gantt chart, per host.

ci_triage.cli registers the command at its end (`register(app)`); the shared options and the output
boundary are taken from it when the command is registered, to keep the import one-way at load time.
"""

# No `from __future__ import annotations`: typer evaluates the command's annotations, and the option
# types are names local to register().

import sys
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    from ci_triage.cli import DemoOption, ReplayOption, RepoOption, StoreOption

    @app.command("timeline")
    def timeline_command(
        pr: Annotated[int, typer.Option("--pr", help="Pull request number.", min=1)],
        repo: RepoOption = None,
        demo: DemoOption = False,
        replay: ReplayOption = None,
        store: StoreOption = None,
        output: Annotated[Path | None, typer.Option(
            "--output", "-o", help="Write the chart to a file instead: .png or .html (inline SVG).")] = None,
    ) -> None:
        """Draw the jobs around a PR's failed jobs per host and runner: failures marked, the PR's jobs outlined."""
        timeline(pr, repo, demo, replay, store, output)


def timeline(pr: int, repo: str | None, demo: bool, replay: Path | None, store: Path | None,
                 output: Path | None) -> None:
    from ci_triage.cli import _boundary, _session

    with _boundary():
        from ci_triage.core.render import gantt
        from ci_triage.service import Triage

        if output is not None:
            from ci_triage.render_files import check_output

            check_output(output)  # before any network work
        with _session(repo, demo, replay, store) as (repo_name, client, cache):
            report = Triage(client, cache).report(repo_name, pr)
        chart = gantt.build_chart(report)
        if output is None:
            from rich.console import Console

            Console(soft_wrap=False).print(gantt.render_terminal(chart))
            return
        from ci_triage.render_files import write_chart

        write_chart(chart, output)
        sys.stdout.write(f"{output}\n")
