"""`ci-triage report` and `ci-triage record`: a PR's triage, and a case saved to replay it offline."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from ci_triage.cli.common import (
    FLAG,
    DemoOption,
    MaxWaitOption,
    ReplayOption,
    RepoOption,
    ReportFormat,
    StoreOption,
    boundary,
    progress_bar,
    session,
    show_progress,
)


def register(app: typer.Typer) -> None:
    app.command()(report)
    app.command()(record)


def report(
    pr: Annotated[int, typer.Option("--pr", help="Pull request number.", min=1)],
    repo: RepoOption = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="table (terminal), markdown or json.")] = ReportFormat.table,
    demo: DemoOption = False,
    replay: ReplayOption = None,
    store: StoreOption = None,
    max_wait: MaxWaitOption = None,
) -> None:
    """Triage the failed jobs of a pull request: root cause, evidence, verdict, whether to rerun."""
    with boundary():
        from ci_triage.service import Triage

        with session(repo, demo, replay, store, max_wait=max_wait) as (repo_name, client, cache), \
                progress_bar(show_progress(fmt)) as progress:
            result = Triage(client, cache, progress=progress).report(repo_name, pr)
        emit_report(result, fmt)


def emit_report(result: Any, fmt: ReportFormat) -> None:
    if fmt is ReportFormat.json:
        from ci_triage.core.render import json as render_json

        sys.stdout.write(render_json.render(result))
    elif fmt is ReportFormat.markdown:
        from ci_triage.core.render import markdown

        sys.stdout.write(markdown.render(result))
    else:
        from rich.console import Console

        from ci_triage.core.render import terminal

        Console(soft_wrap=False).print(terminal.render(result))


def record(
    pr: Annotated[int, typer.Option("--pr", help="Pull request number.", min=1)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Case file to write (.json or .json.gz).")],
    repo: RepoOption = None,
    force: Annotated[bool, typer.Option("--force", metavar=FLAG, help="Overwrite OUTPUT if it exists.")] = False,
    max_wait: MaxWaitOption = None,
) -> None:
    """Save everything a report of PR N needs as a case file, to replay offline with --replay."""
    with boundary():
        from ci_triage.github.recorder import CaseRecorder
        from ci_triage.service import Triage

        # Before any API call: a recording that cannot be saved is a wasted rate limit.
        check_output(output, force)
        recorder = CaseRecorder()
        with tempfile.TemporaryDirectory() as scratch, \
                session(repo, False, None, Path(scratch) / "store.sqlite3", recorder, max_wait) as \
                (repo_name, client, cache):
            # A fresh store: every payload must pass through the recorder, none may come from cache.
            client.workflows(repo_name)
            Triage(client, cache).report(repo_name, pr)
            recorder.save(output, api_url=client.connection.api_url, repo=repo_name, pr=pr, force=force)
        sys.stdout.write(f"{output}\n")


def check_output(output: Path, force: bool) -> None:
    """A case file can be written at `output`: its folder exists and is writable, and it does not
    exist already (unless --force)."""
    import os

    from ci_triage.errors import UsageError

    folder = output.parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {output}: the folder {folder} does not exist")
    if output.exists() and (output.is_dir() or not force):
        raise UsageError(f"{output} already exists" + ("" if output.is_dir() else "; pass --force to overwrite it"))
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {output}: the folder {folder} is not writable")
