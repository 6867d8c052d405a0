"""`ci-triage timeline`: the jobs of a PR's correlation window as a Gantt chart, per host."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ci_triage.cli.common import (
    DemoOption,
    ReplayOption,
    RepoOption,
    StoreOption,
    boundary,
    session,
)


def register(app: typer.Typer) -> None:
    app.command("timeline")(timeline)


def timeline(
    pr: Annotated[int, typer.Option("--pr", help="Pull request number.", min=1)],
    repo: RepoOption = None,
    demo: DemoOption = False,
    replay: ReplayOption = None,
    store: StoreOption = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the chart to a file instead: .png or .html (inline SVG).")] = None,
) -> None:
    """Draw the jobs around a PR's failed jobs per host and runner: failures marked, the PR's jobs outlined."""
    with boundary():
        from ci_triage.core.render import gantt
        from ci_triage.service import Triage

        if output is not None:
            from ci_triage.render_files import check_output

            check_output(output)  # before any network work
        with session(repo, demo, replay, store) as (repo_name, client, cache):
            report = Triage(client, cache).report(repo_name, pr)
        chart = gantt.build_chart(report)
        if output is None:
            from rich.console import Console

            Console(soft_wrap=False).print(gantt.render_terminal(chart))
            return
        from ci_triage.render_files import write_chart

        write_chart(chart, output)
        sys.stdout.write(f"{output}\n")
