"""`ci-triage triage` and `ci-triage bot`: the Action's and the rerun bot's entry points."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ci_triage.cli.common import (
    ApplyOption,
    ConfigOption,
    DemoOption,
    MaxWaitOption,
    OutputFormat,
    ReplayOption,
    RepoOption,
    StoreOption,
    actions_taken,
    actor_session,
    boundary,
    emit_outcome,
    read_event,
)
from ci_triage.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("triage")(triage_run)
    app.command("bot")(rerun_bot)


def triage_run(
    run_id: Annotated[int | None, typer.Option("--run-id", help="The completed workflow run to triage.", min=1)] = None,
    event: Annotated[Path | None, typer.Option(
        "--event", help="A workflow_run webhook payload ($GITHUB_EVENT_PATH) naming the run, instead of --run-id.")] = None,
    repo: RepoOption = None,
    apply: ApplyOption = False,
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table (plain lines) or json.")] = OutputFormat.table,
    config: ConfigOption = None,
    demo: DemoOption = False,
    replay: ReplayOption = None,
    store: StoreOption = None,
    max_wait: MaxWaitOption = None,
) -> None:
    """Triage one completed workflow run (the Action's entry point); with --apply, rerun and comment."""
    with boundary():
        if (run_id is None) == (event is None):
            raise UsageError("give exactly one of --run-id and --event")
        if event is not None:
            from ci_triage.core.github.events import WorkflowRunEvent

            parsed = read_event(event, WorkflowRunEvent, "workflow_run")
            if not parsed.is_failed_completion:
                sys.stdout.write(f"run {parsed.run_id} {parsed.action} with conclusion {parsed.conclusion}: "
                                 "nothing to triage\n")
                return
            run_id, repo = parsed.run_id, repo or parsed.repo
        with actor_session(repo, demo, replay, store, config, max_wait) as (repo_name, actor):
            outcome = actor.triage_run(repo_name, run_id, apply)
        emit_outcome(outcome, fmt, actions_taken(outcome, apply))


def rerun_bot(
    event: Annotated[Path, typer.Option("--event", help="The webhook payload ($GITHUB_EVENT_PATH).")],
    event_name: Annotated[str | None, typer.Option(
        "--event-name", help="Default: $GITHUB_EVENT_NAME, else issue_comment.")] = None,
    apply: ApplyOption = False,
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table (plain lines) or json.")] = OutputFormat.table,
    config: ConfigOption = None,
    store: StoreOption = None,
    max_wait: MaxWaitOption = None,
) -> None:
    """Answer a `/rerun` comment on a pull request (the rerun-bot workflow's entry point); with --apply,
    rerun and reply, else only print the plan (like `triage`)."""
    with boundary():
        from ci_triage.core.github.events import CommentEvent

        parsed = read_event(event, CommentEvent, event_name or os.environ.get("GITHUB_EVENT_NAME") or "issue_comment")
        with actor_session(parsed.repo, False, None, store, config, max_wait) as (_, actor):
            outcome = actor.handle_comment(parsed, apply)
        emit_outcome(outcome, fmt, actions_taken(outcome, apply))
