"""`ci-triage classify`, `clusters` and `rules explain|check`: the classifier on saved logs and stored failures."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ci_triage.cli.common import (
    OutputFormat,
    RepoOption,
    StoreOption,
    boundary,
    load_rules,
)
from ci_triage.core.text import shown, shown_tree
from ci_triage.errors import UsageError

MAX_CELL_CHARS = 500  # a table cell; rich wraps a 100 MB line for longer than anyone waits


def register(app: typer.Typer) -> None:
    app.command("classify")(classify_files)
    app.command()(clusters)
    rules_app = typer.Typer(rich_markup_mode=None, help="Inspect and check classification rules.", no_args_is_help=True)
    rules_app.command("explain")(rules_explain)
    rules_app.command("check")(rules_check)
    app.add_typer(rules_app, name="rules")


def classify_files(
    files: Annotated[list[Path], typer.Argument(help="Saved job logs (as downloaded from GitHub).")],
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table or json.")] = OutputFormat.table,
    rules: Annotated[Path | None, typer.Option("--rules", help="Rule file to use instead of the built-in rules.")] = None,
) -> None:
    """Classify saved job logs offline: root-cause line, category, captures and fingerprint."""
    with boundary():
        from ci_triage.core.logs.classify import classify
        from ci_triage.core.logs.matcher import relevant_lines
        from ci_triage.core.logs.rules import builtin_rules

        rule_set = load_rules(rules) if rules else builtin_rules()
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

            sys.stdout.write(json.dumps(shown_tree(results), indent=2) + "\n")
            return
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table("file", "category", "retryable", "line", "root cause")
        for entry in results:
            root = entry["root_cause"] or {}
            table.add_row(Text(shown(entry["file"])), Text(shown(entry["category"])),
                          "yes" if entry["retryable"] else "no",
                          str(root.get("line", "")), Text(shown(root.get("text", ""), MAX_CELL_CHARS)))
        Console().print(table)


def clusters(
    repo: RepoOption = None,
    category: Annotated[str, typer.Option("--category", help="Which failures to cluster; 'all' for every one.")] = "unknown",
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table or json.")] = OutputFormat.table,
    store: StoreOption = None,
) -> None:
    """Group the stored failures by fingerprint (default: the unknown ones), with counts and PRs."""
    with boundary():
        from ci_triage.config import default_store_path
        from ci_triage.core.logs.clusters import cluster
        from ci_triage.store import Store

        with Store(store or default_store_path()) as cache:
            found = cluster(cache.failures(repo or os.environ.get("GITHUB_REPOSITORY") or None,
                                           None if category == "all" else category))
        if fmt is OutputFormat.json:
            import json
            from dataclasses import asdict

            sys.stdout.write(json.dumps(shown_tree([asdict(c) for c in found]), indent=2) + "\n")
            return
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table("fingerprint", "category", "count", "PRs", "first seen", "last seen", "sample")
        for item in found:
            table.add_row(item.fingerprint, item.category, str(item.count), ", ".join(f"#{n}" for n in item.prs),
                          item.first_seen or "", item.last_seen or "", Text(shown(item.sample or "", 120)))
        Console().print(table)


def rules_explain(
    log: Annotated[Path, typer.Argument(help="A saved job log.")],
    rules: Annotated[Path | None, typer.Option("--rules", help="Rule file to use instead of the built-in rules.")] = None,
) -> None:
    """Show every rule match in a log and why one of them is the root cause."""
    with boundary():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        from ci_triage.core.logs.classify import classify, find_matches
        from ci_triage.core.logs.logparse import parse_log
        from ci_triage.core.logs.rules import builtin_rules

        rule_set = load_rules(rules) if rules else builtin_rules()
        try:
            text = log.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"cannot read {log}: {exc.strerror or exc}") from None
        lines = list(parse_log(text))
        boilerplate = {rule.id for rule in rule_set.rules if rule.boilerplate}
        table = Table("line", "rule", "priority", "category", "text", title=shown(f"Rule matches in {log}"))
        for match in find_matches(lines, rule_set):
            kind = " (boilerplate: never the cause)" if match.rule_id in boilerplate else ""
            table.add_row(str(match.line.number), match.rule_id + kind, str(match.priority), match.category,
                          Text(shown(match.line.text, 160)))
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


def rules_check(
    file: Annotated[Path | None, typer.Argument(help="Rule file (TOML); default: the built-in rules.")] = None,
) -> None:
    """Validate a rule file and run every rule's examples and near misses."""
    with boundary():
        from ci_triage.core.logs.rules import builtin_rules, check_examples

        rule_set = builtin_rules() if file is None else load_rules(file)
        problems = check_examples(rule_set)
        for problem in problems:
            sys.stderr.write(f"ci-triage: {problem}\n")
        if problems:
            raise typer.Exit(1)
        sys.stdout.write(f"{len(rule_set.rules)} rules OK\n")
