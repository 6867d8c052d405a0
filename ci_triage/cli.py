"""Command line: parse arguments, call the service, render. One output boundary for every command.

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

from ci_triage.contracts.d2t_cli import app as d2t_app
from ci_triage.errors import TriageError, UsageError

app = typer.Typer(
    name="ci-triage",
    help="Tell whether a red CI job is the PR's fault or the runner's, with the evidence.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
rules_app = typer.Typer(help="Inspect and check classification rules.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")
app.add_typer(d2t_app, name="d2t")

class ReportFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"ci-triage: error: {message}\n")
    raise typer.Exit(code)


@contextlib.contextmanager
def _boundary() -> Iterator[None]:
    """The one place errors become exit codes."""
    try:
        yield
    except TriageError as error:
        _fail(error.one_line(), error.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except (typer.Exit, typer.Abort, SystemExit):
        raise
    except Exception as error:  # noqa: BLE001 - the boundary: a bug still gets one clear line
        if os.environ.get("CI_TRIAGE_DEBUG"):
            raise
        _fail(f"internal error: {type(error).__name__}: {error} (set CI_TRIAGE_DEBUG=1 for a traceback)", 70)


def _show_progress(fmt: ReportFormat) -> bool:
    return fmt is not ReportFormat.json and sys.stderr.isatty() and not os.environ.get("CI")


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
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
def _session(repo: str | None, demo: bool, replay: Path | None, store_path: Path | None,
             recorder: Callable[[str, Any], None] | None = None) -> Iterator[tuple[str, Any, Any]]:
    """(repo, client, store) for live use, or for the local fake serving a case: the same code path."""
    from ci_triage.config import (
        default_store_path,
        resolve_api_url,
        resolve_repo,
        resolve_token,
    )
    from ci_triage.github.client import Connection, GitHubClient
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
        store = Store(store_path or default_store_path())
        stack.callback(store.close)
        client = GitHubClient(connection, recorder=recorder)
        stack.callback(client.close)
        yield repo, client, store


RepoOption = Annotated[str | None, typer.Option("--repo", help="OWNER/NAME; default: $GITHUB_REPOSITORY.")]
StoreOption = Annotated[Path | None, typer.Option(
    "--store", help="SQLite cache file; default: $CI_TRIAGE_STORE or the user cache directory.")]
DemoOption = Annotated[bool, typer.Option(
    "--demo", help="Run offline on the bundled reconstruction of the seed scenario (a local GitHub fake).")]
ReplayOption = Annotated[Path | None, typer.Option(
    "--replay", help="Run offline on a case saved by `ci-triage record`.", exists=False)]


@app.command()
def report(
    pr: Annotated[int, typer.Option("--pr", help="Pull request number.", min=1)],
    repo: RepoOption = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="table (terminal), markdown or json.")] = ReportFormat.table,
    demo: DemoOption = False,
    replay: ReplayOption = None,
    store: StoreOption = None,
) -> None:
    """Triage the failed jobs of a pull request: root cause, evidence, verdict, whether to rerun."""
    with _boundary():
        from ci_triage.service import Triage

        with _session(repo, demo, replay, store) as (repo_name, client, cache), \
                _progress(_show_progress(fmt)) as progress:
            result = Triage(client, cache, progress=progress).report(repo_name, pr)
        _emit_report(result, fmt)


def _emit_report(result: Any, fmt: ReportFormat) -> None:
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


@app.command()
def record(
    pr: Annotated[int, typer.Option("--pr", help="Pull request number.", min=1)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Case file to write (.json or .json.gz).")],
    repo: RepoOption = None,
) -> None:
    """Save everything a report of PR N needs as a case file, to replay offline with --replay."""
    with _boundary():
        from ci_triage.github.recorder import CaseRecorder
        from ci_triage.service import Triage

        recorder = CaseRecorder()
        with tempfile.TemporaryDirectory() as scratch, \
                _session(repo, False, None, Path(scratch) / "store.sqlite3", recorder) as (repo_name, client, cache):
            # A fresh store: every payload must pass through the recorder, none may come from cache.
            client.workflows(repo_name)
            Triage(client, cache).report(repo_name, pr)
            recorder.save(output, api_url=client.connection.api_url, repo=repo_name, pr=pr)
        sys.stdout.write(f"{output}\n")


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


ConfigOption = Annotated[Path | None, typer.Option(
    "--config", help="A ci-triage.toml to use instead of the repository's .github/ci-triage.toml.")]
ApplyOption = Annotated[bool, typer.Option("--apply", help="Act: rerun and write the PR comment. Without it, "
                                                          "only print the plan.")]


def _local_config(path: Path | None) -> Any:
    if path is None:
        return None
    from ci_triage.core.config.repo_config import parse_repo_config

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    return parse_repo_config(text, origin=str(path))


@contextlib.contextmanager
def _actor(repo: str | None, demo: bool, replay: Path | None, store: Path | None,
           config: Path | None) -> Iterator[tuple[str, Any]]:
    from ci_triage.act import Actor
    from ci_triage.github.writer import GitHubWriter
    from ci_triage.service import Triage

    with _session(repo, demo, replay, store) as (repo_name, client, cache):
        # GitHub asks integrators to space writes out; tests against the local fake may shorten it.
        interval = float(os.environ.get("CI_TRIAGE_WRITE_INTERVAL", "1.0"))
        with GitHubWriter(client.connection, min_write_interval_s=interval) as writer:
            yield repo_name, Actor(Triage(client, cache, config=_local_config(config)), writer)


def _emit_outcome(outcome: Any, fmt: OutputFormat, actions: list[str]) -> None:
    import json

    from ci_triage.core.render.actions_output import github_output, step_summary

    data = outcome.as_dict()
    if os.environ.get("GITHUB_STEP_SUMMARY") and outcome.report is not None:
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
            summary.write(step_summary(outcome.report, actions))
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as output:
            output.write(github_output({
                "verdicts": json.dumps(data["verdicts"]),
                "reruns": json.dumps(data["reruns"]),
                "reran": "true" if data["reruns"] else "false",
                "comment": data["comment"],
            }))
    if fmt is OutputFormat.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    for line in actions:
        sys.stdout.write(f"{line}\n")


def _actions_taken(outcome: Any, applied: bool) -> list[str]:
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


def _read_event(path: Path, expected: type, name: str) -> Any:
    from ci_triage.core.github.events import load_event

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read event file {path}: {exc.strerror or exc}") from None
    parsed = load_event(text, name)
    if not isinstance(parsed, expected):
        raise UsageError(f"{path} holds a {name} event, not the one this command answers")
    return parsed


@app.command("triage")
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
) -> None:
    """Triage one completed workflow run (the Action's entry point); with --apply, rerun and comment."""
    with _boundary():
        if (run_id is None) == (event is None):
            raise UsageError("give exactly one of --run-id and --event")
        if event is not None:
            from ci_triage.core.github.events import WorkflowRunEvent

            parsed = _read_event(event, WorkflowRunEvent, "workflow_run")
            if not parsed.is_failed_completion:
                sys.stdout.write(f"run {parsed.run_id} {parsed.action} with conclusion {parsed.conclusion}: "
                                 "nothing to triage\n")
                return
            run_id, repo = parsed.run_id, repo or parsed.repo
        with _actor(repo, demo, replay, store, config) as (repo_name, actor):
            outcome = actor.triage_run(repo_name, run_id, apply)
        _emit_outcome(outcome, fmt, _actions_taken(outcome, apply))


@app.command("bot")
def rerun_bot(
    event: Annotated[Path, typer.Option("--event", help="The webhook payload ($GITHUB_EVENT_PATH).")],
    event_name: Annotated[str | None, typer.Option(
        "--event-name", help="Default: $GITHUB_EVENT_NAME, else issue_comment.")] = None,
    apply: Annotated[bool, typer.Option("--apply/--dry-run", help="Act (default), or only print the plan.")] = True,
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table (plain lines) or json.")] = OutputFormat.table,
    config: ConfigOption = None,
    store: StoreOption = None,
) -> None:
    """Answer a `/rerun` comment on a pull request (the rerun-bot workflow's entry point)."""
    with _boundary():
        from ci_triage.core.github.events import CommentEvent

        parsed = _read_event(event, CommentEvent, event_name or os.environ.get("GITHUB_EVENT_NAME") or "issue_comment")
        with _actor(parsed.repo, False, None, store, config) as (_, actor):
            outcome = actor.handle_comment(parsed, apply)
        _emit_outcome(outcome, fmt, _actions_taken(outcome, apply))


@app.command("classify")
def classify_files(
    files: Annotated[list[Path], typer.Argument(help="Saved job logs (as downloaded from GitHub).")],
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table or json.")] = OutputFormat.table,
    rules: Annotated[Path | None, typer.Option("--rules", help="Rule file to use instead of the built-in rules.")] = None,
) -> None:
    """Classify saved job logs offline: root-cause line, category, captures and fingerprint."""
    with _boundary():
        from ci_triage.core.logs.classify import classify
        from ci_triage.core.logs.matcher import relevant_lines
        from ci_triage.core.logs.rules import builtin_rules

        rule_set = _load_rules(rules) if rules else builtin_rules()
        results = []
        for path in files:
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
            result = classify(relevant_lines(raw, rule_set), rule_set)
            root = result.root_cause
            results.append({
                "file": str(path),
                "category": result.category,
                "retryable": result.retryable,
                "root_cause": {"line": root.line, "text": root.text, "step": root.step} if root else None,
                "captures": dict(result.captures),
                "fingerprint": result.fingerprint,
            })
        if fmt is OutputFormat.json:
            import json

            sys.stdout.write(json.dumps(results, indent=2) + "\n")
            return
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table("file", "category", "retryable", "line", "root cause")
        for entry in results:
            root = entry["root_cause"] or {}
            table.add_row(Text(entry["file"]), entry["category"], "yes" if entry["retryable"] else "no",
                          str(root.get("line", "")), Text(root.get("text", "")))
        Console().print(table)


@app.command()
def clusters(
    repo: RepoOption = None,
    category: Annotated[str, typer.Option("--category", help="Which failures to cluster; 'all' for every one.")] = "unknown",
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table or json.")] = OutputFormat.table,
    store: StoreOption = None,
) -> None:
    """Group the stored failures by fingerprint (default: the unknown ones), with counts and PRs."""
    with _boundary():
        from ci_triage.config import default_store_path
        from ci_triage.core.logs.clusters import cluster
        from ci_triage.store import Store

        with Store(store or default_store_path()) as cache:
            found = cluster(cache.failures(repo or os.environ.get("GITHUB_REPOSITORY") or None,
                                           None if category == "all" else category))
        if fmt is OutputFormat.json:
            import json
            from dataclasses import asdict

            sys.stdout.write(json.dumps([asdict(c) for c in found], indent=2) + "\n")
            return
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table("fingerprint", "category", "count", "PRs", "first seen", "last seen", "sample")
        for item in found:
            table.add_row(item.fingerprint, item.category, str(item.count), ", ".join(f"#{n}" for n in item.prs),
                          item.first_seen or "", item.last_seen or "", Text((item.sample or "")[:120]))
        Console().print(table)


def _load_rules(file: Path) -> Any:
    from ci_triage.core.logs.rules import parse_rules

    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read rule file {file}: {exc.strerror or exc}") from None
    return parse_rules(text, origin=str(file))


@rules_app.command("explain")
def rules_explain(
    log: Annotated[Path, typer.Argument(help="A saved job log.")],
    rules: Annotated[Path | None, typer.Option("--rules", help="Rule file to use instead of the built-in rules.")] = None,
) -> None:
    """Show every rule match in a log and why one of them is the root cause."""
    with _boundary():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        from ci_triage.core.logs.classify import classify, find_matches
        from ci_triage.core.logs.logparse import parse_log
        from ci_triage.core.logs.rules import builtin_rules

        rule_set = _load_rules(rules) if rules else builtin_rules()
        try:
            text = log.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"cannot read {log}: {exc.strerror or exc}") from None
        lines = list(parse_log(text))
        boilerplate = {rule.id for rule in rule_set.rules if rule.boilerplate}
        table = Table("line", "rule", "priority", "category", "text", title=f"Rule matches in {log}")
        for match in find_matches(lines, rule_set):
            kind = " (boilerplate: never the cause)" if match.rule_id in boilerplate else ""
            table.add_row(str(match.line.number), match.rule_id + kind, str(match.priority), match.category,
                          Text(match.line.text[:160]))
        console = Console()
        console.print(table)
        result = classify(lines, rule_set)
        if result.rule_id is None:
            where = f"line {result.root_cause.line}" if result.root_cause else "no line"
            console.print(f"No rule explains this log: category unknown, root cause at {where} "
                          "(the first error line).")
        else:
            console.print(f"Root cause: line {result.root_cause.line}, rule {result.rule_id} ({result.category}). "
                          "It wins because no matching rule has a higher priority (a lower number), and no "
                          "earlier line matches a rule of the same priority.")


@rules_app.command("check")
def rules_check(
    file: Annotated[Path | None, typer.Argument(help="Rule file (TOML); default: the built-in rules.")] = None,
) -> None:
    """Validate a rule file and run every rule's examples and near misses."""
    with _boundary():
        from ci_triage.core.logs.rules import builtin_rules, check_examples

        rule_set = builtin_rules() if file is None else _load_rules(file)
        problems = check_examples(rule_set)
        for problem in problems:
            sys.stderr.write(f"ci-triage: {problem}\n")
        if problems:
            raise typer.Exit(1)
        sys.stdout.write(f"{len(rule_set.rules)} rules OK\n")


def main() -> None:
    app()

from ci_triage.cli_timeline import register as _register_timeline  # noqa: E402 - registers `timeline`

_register_timeline(app)
from ci_triage.cli_config import register as _register_config  # noqa: E402 - registers `config`

_register_config(app)
