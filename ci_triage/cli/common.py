"""What every command shares: the one output boundary, progress, the session (live or the local
fake), the option types and the output formats. Commands live in their own modules beside this one.

Results go to stdout; progress and errors to stderr. A TriageError becomes one line on stderr and its
exit code; nothing else escapes as a traceback (set CI_TRIAGE_DEBUG=1 to see one).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ci_triage.cli.fast import (  # noqa: F401 (re-exported: the other commands' helpers)
    MAX_ERROR_CHARS,
    SECRET_ENV,
    error_text,
    exit_for,
    load_rules,
    read_small_text,
)
from ci_triage.errors import TriageError, UsageError


class ReportFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


def fail(message: str, code: int) -> None:
    # One line, whatever it quotes (redacted, escapes made visible): the same as classify's fast path.
    sys.stderr.write(error_text(message))
    raise typer.Exit(code)


def _debug_logging() -> None:
    """CI_TRIAGE_DEBUG=1: ci-triage's own retry and write messages on stderr (already redacted where
    they quote GitHub). PyGithub's logger stays silent: it would print request details."""
    import logging

    logger = logging.getLogger("ci_triage")
    if not any(getattr(h, "ci_triage_debug", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.ci_triage_debug = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter("ci-triage: debug: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)


@contextlib.contextmanager
def boundary() -> Iterator[None]:
    """The one place errors become exit codes."""
    if os.environ.get("CI_TRIAGE_DEBUG"):
        _debug_logging()
    try:
        yield
    except (typer.Exit, typer.Abort, SystemExit):
        raise
    except (Exception, KeyboardInterrupt) as error:  # noqa: BLE001 - the boundary
        if os.environ.get("CI_TRIAGE_DEBUG") and not isinstance(error, (TriageError, KeyboardInterrupt)):
            raise  # a bug, with its traceback
        fail(*exit_for(error))


def show_progress(fmt: ReportFormat) -> bool:
    return fmt is not ReportFormat.json and sys.stderr.isatty() and not os.environ.get("CI")


@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    if not enabled:
        yield lambda what, done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def update(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total)
            bar.update(tasks[what], completed=done + 1, total=total)

        yield update


@contextlib.contextmanager
def session(repo: str | None, demo: bool, replay: Path | None, store_path: Path | None,
             recorder: Callable[[str, Any], None] | None = None,
             max_wait: float | None = None) -> Iterator[tuple[str, Any, Any]]:
    """(repo, client, store) for live use, or for the local fake serving a case: the same code path.
    `max_wait`: the total seconds this command may wait on GitHub (rate limits, backoff)."""
    from ci_triage.config import (
        default_store_path,
        resolve_api_url,
        resolve_repo,
        resolve_token,
    )
    from ci_triage.errors import NotFound
    from ci_triage.github.client import Connection, GitHubClient, default_policy
    from ci_triage.store import Store

    if demo and replay:
        raise UsageError("--demo and --replay cannot be combined")
    with contextlib.ExitStack() as stack:
        if demo or replay:
            from ci_triage.demo.build import bundled_path
            from ci_triage.demo.replay import FakeGitHub
            from ci_triage.github.case import load_case

            case = load_case(replay or bundled_path())
            fake = stack.enter_context(FakeGitHub(case))
            repo = repo or case["repository"]["full_name"]
            connection = Connection(api_url=fake.base_url, token="replay-token", retries=1, backoff_s=0.05)
            if store_path is None:
                # The fake's address changes every time: a throw-away store keeps stale links out
                # of the user's real cache.
                store_path = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "store.sqlite3"
        else:
            repo = resolve_repo(repo)
            connection = Connection(api_url=resolve_api_url(), token=resolve_token())
        # Only the default location in the user cache directory may have its folder created.
        chosen = store_path or (Path(os.environ["CI_TRIAGE_STORE"]) if os.environ.get("CI_TRIAGE_STORE") else None)
        store = Store(chosen or default_store_path(), create_parent=chosen is None)
        stack.callback(store.close)
        client = GitHubClient(connection, recorder=recorder, policy=default_policy(connection, max_wait_s=max_wait))
        stack.callback(client.close)
        if not (demo or replay):
            yield repo, client, store
            return
        try:
            yield repo, client, store
        except NotFound as error:
            raise offline_not_found(error, case, "the demo" if demo else f"the case {replay}") from None


def offline_not_found(error: Any, case: dict[str, Any], what: str) -> Any:
    """Offline, a PR the case does not hold is a typo, not a token problem: name the PRs it holds."""
    from ci_triage.errors import NotFound

    if "pull request #" not in error.message:
        return error
    numbers = sorted(p.get("number") for p in case.get("pulls", []) if isinstance(p.get("number"), int))
    listed = ", ".join(f"#{n}" for n in numbers) or "none"
    return NotFound(error.message.split(": not found")[0] + f": not found in {what}",
                    hint=f"Its pull requests are {listed}: pass one of them to --pr.")


# A flag's metavar: empty, so no help layout shows `--demo <bool>` as if the flag took a value (typer's
# rich help prints a bool option's type otherwise; its `is_flag` is deprecated and ignored since 0.2x).
FLAG = ""
RepoOption = Annotated[str | None, typer.Option("--repo", help="OWNER/NAME; default: $GITHUB_REPOSITORY.")]
StoreOption = Annotated[Path | None, typer.Option(
    "--store", help="SQLite cache file; default: $CI_TRIAGE_STORE or the user cache directory.")]
DemoOption = Annotated[bool, typer.Option(
    "--demo", metavar=FLAG, help="Run offline on the bundled reconstruction of the seed scenario (a local GitHub fake).")]
MaxWaitOption = Annotated[float | None, typer.Option(
    "--max-wait", min=0, help="Seconds this command may wait in all on GitHub's rate limits and retries "
    "(default 600, fitting a 15-minute job); past it, it stops with an error and reruns nothing.")]
ReplayOption = Annotated[Path | None, typer.Option(
    "--replay", help="Run offline on a case saved by `ci-triage record`.", exists=False)]


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


ConfigOption = Annotated[Path | None, typer.Option(
    "--config", help="A ci-triage.toml to use instead of the repository's .github/ci-triage.toml.")]
ApplyOption = Annotated[bool, typer.Option("--apply", metavar=FLAG, help="Act: rerun and write the PR comment. Without it, "
                                                          "only print the plan.")]


def local_config(path: Path | None) -> Any:
    if path is None:
        return None
    from ci_triage.core.config.repo_config import parse_repo_config

    return parse_repo_config(read_small_text(path, "config file"), origin=str(path))


@contextlib.contextmanager
def actor_session(repo: str | None, demo: bool, replay: Path | None, store: Path | None,
           config: Path | None, max_wait: float | None = None) -> Iterator[tuple[str, Any]]:
    from ci_triage.act import Actor
    from ci_triage.github.writer import GitHubWriter
    from ci_triage.service import Triage

    with session(repo, demo, replay, store, max_wait=max_wait) as (repo_name, client, cache):
        # GitHub asks integrators to space writes out; tests against the local fake may shorten it.
        interval = float(os.environ.get("CI_TRIAGE_WRITE_INTERVAL", "1.0"))
        # One retry policy for reads and writes: one wait budget for the command.
        with GitHubWriter(client.connection, min_write_interval_s=interval, policy=client.policy) as writer:
            yield repo_name, Actor(Triage(client, cache, config=local_config(config)), writer)


def emit_outcome(outcome: Any, fmt: OutputFormat, actions: list[str]) -> None:
    from ci_triage.core.render.actions_output import github_output, step_summary
    from ci_triage.core.render.json import document, outcome_dict, outcome_outputs

    # The summary, the outputs and --format json leave the process: each passes the redactor.
    if os.environ.get("GITHUB_STEP_SUMMARY") and outcome.report is not None:
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
            summary.write(step_summary(outcome.report, actions))
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as output:
            output.write(github_output(outcome_outputs(outcome)))
    if fmt is OutputFormat.json:
        sys.stdout.write(document(outcome_dict(outcome)))
        return
    for line in actions:
        sys.stdout.write(f"{line}\n")


def actions_taken(outcome: Any, applied: bool) -> list[str]:
    lines = []
    for plan in outcome.plans:
        what = "rerun its failed jobs" if plan.mode == "failed" else (
            f"rerun job(s) {', '.join(map(str, plan.job_ids))}" if plan.mode == "jobs" else "no rerun")
        lines.append(f"run {plan.run_id} attempt {plan.attempt}: {what}" + ("" if applied else " (plan only)"))
        lines += [f"  {reason}" for reason in plan.reasons]
    lines += outcome.notes
    if applied:
        lines.append(f"PR comment: {outcome.comment}")
    return lines


def read_event(path: Path, expected: type, name: str) -> Any:
    from ci_triage.core.github.events import load_event

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read event file {path}: {exc.strerror or exc}") from None
    parsed = load_event(text, name)
    if not isinstance(parsed, expected):
        raise UsageError(f"{path} holds a {name} event, not the one this command answers")
    return parsed
