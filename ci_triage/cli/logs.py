"""`ci-triage classify`, `clusters` and `rules explain|check`: the classifier on saved logs and stored failures."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ci_triage.cli.common import (
    FLAG,
    OutputFormat,
    RepoOption,
    StoreOption,
    boundary,
)
from ci_triage.cli.fast import classify_paths, load_rules, mapped, rule_set_for
from ci_triage.core.text import shown
from ci_triage.errors import UsageError

RulesOption = Annotated[Path | None, typer.Option(
    "--rules", help="Extra rule file, added to the built-in rules (its rules first), like a repository's.")]
NoBuiltinOption = Annotated[bool, typer.Option(
    "--no-builtin", metavar=FLAG, help="Use only the --rules file, without the built-in rules.")]

def register(app: typer.Typer) -> None:
    app.command("classify")(classify_files)
    app.command()(clusters)
    rules_app = typer.Typer(rich_markup_mode=None, help="Inspect and check classification rules.", no_args_is_help=True)
    rules_app.command("explain")(rules_explain)
    rules_app.command("check")(rules_check)
    app.add_typer(rules_app, name="rules")


def classify_files(
    # str, not Path: typer (0.29) builds a pydantic TypeAdapter for every Path value it coerces,
    # 45 ms per 1,000 files before the first log is read.
    files: Annotated[list[str], typer.Argument(help="Saved job logs (as downloaded from GitHub).")],
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table or json.")] = OutputFormat.table,
    rules: RulesOption = None,
    no_builtin: NoBuiltinOption = False,
) -> None:
    """Classify saved job logs offline: root-cause line, category, captures and fingerprint."""
    # The body is classify_paths, which cli/fast.py also runs for a plain call without typer.
    with boundary():
        classify_paths(files, fmt.value, rules, no_builtin)


def clusters(
    repo: RepoOption = None,
    category: Annotated[str, typer.Option("--category", help="Which failures to cluster; 'all' for every one.")] = "unknown",
    fmt: Annotated[OutputFormat, typer.Option("--format", help="table or json.")] = OutputFormat.table,
    store: StoreOption = None,
) -> None:
    """Group the stored failures by fingerprint (default: the unknown ones), with counts and PRs."""
    with boundary():
        from ci_triage.core.categories import CATEGORIES

        if category != "all" and category not in CATEGORIES:
            raise UsageError(f"--category {category!r} is not a category; use one of {', '.join(CATEGORIES)}, "
                             "or all")
        from ci_triage.config import default_store_path
        from ci_triage.core.logs.clusters import cluster
        from ci_triage.store import Store

        with Store(store or default_store_path()) as cache:
            found = cluster(cache.failures(repo or os.environ.get("GITHUB_REPOSITORY") or None,
                                           None if category == "all" else category))
        if fmt is OutputFormat.json:
            from dataclasses import asdict

            from ci_triage.core.render.json import document

            sys.stdout.write(document([asdict(c) for c in found]))
            return
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table("fingerprint", "category", "count", "PRs", "first seen", "last seen", "sample")
        for column in table.columns:  # wrapped, never cut: a fingerprint is copied whole
            column.overflow = "fold"
        for item in found:
            table.add_row(item.fingerprint, item.category, str(item.count), ", ".join(f"#{n}" for n in item.prs),
                          item.first_seen or "", item.last_seen or "", Text(shown(item.sample or "", 120, words=True)))
        Console().print(table)


def rules_explain(
    log: Annotated[Path, typer.Argument(help="A saved job log.")],
    rules: RulesOption = None,
    no_builtin: NoBuiltinOption = False,
) -> None:
    """Show every rule match in a log and why one of them is the root cause."""
    with boundary():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        from ci_triage.core.logs.classify import RESEMBLANCE_CANDIDATES, classify, find_matches, unexplained_view
        from ci_triage.core.logs.matcher import relevant_lines
        from ci_triage.core.logs.resemblance import family_model
        from ci_triage.core.logs.scorer import MIN_SCORE

        rule_set = rule_set_for(rules, no_builtin)
        boilerplate = {rule.id for rule in rule_set.rules if rule.boilerplate}
        table = Table("line", "rule", "priority", "category", "text", title=shown(f"Rule matches in {log}"))
        for column in table.columns:  # wrapped, never cut: a rule id or a port is read whole
            column.overflow = "fold"
        # The same parser and matcher as `classify` and `report`: what is explained is what they see.
        with mapped(log) as raw:
            lines = relevant_lines(raw, rule_set)
            for match in find_matches(lines, rule_set):
                kind = " (boilerplate: never the cause)" if match.rule_id in boilerplate else ""
                table.add_row(str(match.line.number), match.rule_id + kind, str(match.priority), match.category,
                              Text(shown(match.line.text, 160, words=True), overflow="fold"))
            result = classify(lines, rule_set)
            # The scorer's view: the lines before the anchors, decoded while the log is still open.
            ranked = unexplained_view(lines, result.matches, boilerplate).ranked[:RESEMBLANCE_CANDIDATES]
        console = Console()
        console.print(table)
        if result.rule_id is None:
            picked = ranked[0] if ranked and ranked[0].score >= MIN_SCORE else None
            where = f"line {result.root_cause.line}" if result.root_cause else "no line"
            signal = result.captures.get("signal")
            how = f"category {result.category} from the exit code ({signal})" if signal else "category unknown"
            if result.resembles:
                how += (f"; it resembles {result.resembles} (a hint, never the category: its words "
                        f"{shown(', '.join(result.resembling_words))} are those of the {result.resembles} rules' examples)")
            resembling = bool(result.root_cause and ranked and any(
                item.line.number == result.root_cause.line and family_model(rule_set).resemble(item.line.text)
                for item in ranked))
            if resembling:
                why = f"of the scorer's {len(ranked)} best lines, the one most like a family of rules' examples"
            elif picked:
                why = "the scorer's choice: the likeliest causal line by its shape and place"
            else:
                why = "no line scored as an error of its own, so the first error line stands in"
            console.print(f"No rule explains this log: {how}; root cause at {where} ({why}).")
            if ranked:
                model = family_model(rule_set)
                scores = Table("line", "score", "why", "resembles", "text", title="Scorer's candidates (best first)")
                for item in ranked:
                    like = model.resemble(item.line.text)
                    scores.add_row(str(item.line.number), f"{item.score:g}", "; ".join(item.reasons),
                                   f"{like.category} ({like.posterior:.2f})" if like else "-",
                                   Text(shown(item.line.text, 120, words=True), overflow="fold"))
                console.print(scores)
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

        # A file is checked on its own: its patterns compile, none is refused as hazardous, its
        # examples match and its near misses do not (loading it raises the first problem).
        rule_set = builtin_rules() if file is None else load_rules(file)
        problems = check_examples(rule_set)
        for problem in problems:
            sys.stderr.write(f"ci-triage: {problem}\n")
        if problems:
            raise typer.Exit(1)
        sys.stdout.write(f"{len(rule_set.rules)} rules OK\n")
