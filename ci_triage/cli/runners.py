"""`ci-triage sync` and `ci-triage runners`: a window of CI history into the store, then which runners
and hosts are sick, which jobs collide, and what reruns cost."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ci_triage.cli.common import FLAG, DemoOption, RepoOption, StoreOption, boundary, progress_bar, session

BOT_LOGINS = ("github-actions[bot]",)
SinceOption = Annotated[str, typer.Option("--since", help="Window start: 14d, 36h, 2w, or a date (2026-05-01).")]


class LogsChoice(StrEnum):
    failed = "failed"
    none = "none"


class HealthFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"
    html = "html"


def register(app: typer.Typer) -> None:
    app.command("sync")(sync_command)
    app.command("runners")(runners)


def _fleet_case() -> Path:
    from ci_triage.demo.fleet import bundled_path

    return bundled_path()


def _show_progress(json_output: bool) -> bool:
    import os

    return not json_output and sys.stderr.isatty() and not os.environ.get("CI")


def _sync(repo_name, client, store, since: datetime, logs: LogsChoice, quiet: bool):
    from ci_triage.service import Triage
    from ci_triage.sync import sync

    triage = Triage(client, store)
    repository = client.check_repository(repo_name)
    triage.config = triage.repo_config(repo_name, repository.get("default_branch") or "main")
    with progress_bar(not quiet) as progress:
        result = sync(client, store, repo_name, since, logs=logs.value, triage=triage, progress=progress)
    return result, triage.config


def sync_command(
    repo: RepoOption = None,
    since: SinceOption = "14d",
    logs: Annotated[LogsChoice, typer.Option("--logs", help="Classify the logs of failed jobs, or none.")] = LogsChoice.failed,
    store: StoreOption = None,
    demo: DemoOption = False,
) -> None:
    """Fetch every completed workflow run of the window and all its jobs (every attempt) into the store;
    incremental, resumable, conditional (an unchanged window costs almost no rate limit)."""
    with boundary():
        from ci_triage.sync import parse_since

        start = parse_since(since, datetime.now(UTC)) if not demo else None
        with session(repo, False, _fleet_case() if demo else None, store) as (repo_name, client, cache):
            if start is None:
                from ci_triage.demo.fleet import DEMO_NOW

                start = parse_since(since, DEMO_NOW)
            result, _ = _sync(repo_name, client, cache, start, logs, quiet=not _show_progress(False))
        sys.stdout.write(f"{repo_name}: {result.runs_listed} runs listed, {result.runs_fetched} fetched, "
                         f"{result.jobs_stored} jobs stored, {result.logs_classified} logs classified\n")


def runners(
    repo: RepoOption = None,
    since: SinceOption = "14d",
    fmt: Annotated[HealthFormat, typer.Option("--format", help="Output format.")] = HealthFormat.table,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    png: Annotated[Path | None, typer.Option(
        "--png", help="Also write the trends picture (host x day infra failures, rerun cost per day) to this PNG.")] = None,
    offline: Annotated[bool, typer.Option("--offline", metavar=FLAG, help="Read the store only; do not sync first.")] = False,
    host_pattern: Annotated[str | None, typer.Option(
        "--host-pattern", help="Regex on runner names naming the host (default: the repository config's).")] = None,
    store: StoreOption = None,
    demo: DemoOption = False,
) -> None:
    """Which runners and hosts fail far more than their pool (with a p-value), which jobs collide on one
    host, how many reruns people and ci-triage asked for and what they cost, and the flakiest jobs.
    `--format html` is one self-contained page with the trends per day drawn in (needs matplotlib)."""
    with boundary():
        import re

        from ci_triage.core.health.analysis import analyse
        from ci_triage.errors import UsageError
        from ci_triage.sync import automatic_attempts, health_records, parse_since

        if offline and demo:
            raise UsageError("--demo syncs from the bundled reconstruction; it cannot be --offline")
        drawn = fmt is HealthFormat.html or png is not None
        if drawn:
            from ci_triage.render_files import require_matplotlib

            require_matplotlib("--format html" if fmt is HealthFormat.html else "--png")
        now = datetime.now(UTC)
        if demo:
            from ci_triage.demo.fleet import DEMO_NOW

            now = DEMO_NOW
        start = parse_since(since, now)
        pattern_text = host_pattern
        if offline:
            from ci_triage.config import default_store_path, resolve_repo
            from ci_triage.store import Store

            repo_name = resolve_repo(repo)
            with Store(store or default_store_path(), create_parent=store is None) as cache:
                records = health_records(cache, repo_name, start)
                automatic = automatic_attempts(cache, repo_name, BOT_LOGINS)
        else:
            with session(repo, False, _fleet_case() if demo else None, store) as (repo_name, client, cache):
                _, config = _sync(repo_name, client, cache, start, LogsChoice.failed,
                                  quiet=not _show_progress(fmt is HealthFormat.json))
                pattern_text = pattern_text or config.host_pattern
                records = health_records(cache, repo_name, start)
                automatic = automatic_attempts(cache, repo_name, BOT_LOGINS)
        try:
            pattern = re.compile(pattern_text) if pattern_text else None
        except re.error as exc:
            raise UsageError(f"--host-pattern: {exc}") from None
        report = analyse(records, repo=repo_name, since=start, until=now, host_pattern=pattern, automatic=automatic)
        picture = trends = None
        if drawn:
            from ci_triage.core.health.trends import daily_trends
            from ci_triage.render_trends import trends_png

            trends = daily_trends(records, since=start, until=now, host_pattern=pattern, automatic=automatic)
            picture = trends_png(report, trends)
        if fmt is HealthFormat.html and trends is not None:
            from ci_triage.core.render.health_html import render_html

            text = render_html(report, trends, picture)
        else:
            text = _render(report, fmt)
        written = []
        if png is not None and picture is not None:
            written.append(_write(png, picture))
        if output is not None:
            written.append(_write(output, text.encode("utf-8")))
        # stdout carries the result: the document, or the names of the files it went to.
        sys.stdout.write("".join(f"{path}\n" for path in written) if output is not None else text)


def _write(path: Path, content: bytes) -> Path:
    from ci_triage.errors import UsageError

    try:
        path.write_bytes(content)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _render(report, fmt: HealthFormat) -> str:
    from ci_triage.core.render import health

    if fmt is HealthFormat.json:
        from ci_triage.core.render.json import document

        return document(health.health_dict(report))
    if fmt is HealthFormat.markdown:
        return health.render_markdown(report)
    from io import StringIO

    from rich.console import Console

    buffer = StringIO()
    Console(file=buffer, width=160, soft_wrap=False, force_terminal=sys.stdout.isatty()).print(
        health.render_terminal(report))
    return buffer.getvalue()
