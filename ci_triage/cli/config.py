"""`ci-triage config check|init`: the shell around ci_triage/core/config/repo_config.py (which is pure).

Reads and writes files, nothing more; errors go through the CLI's one output boundary so they are
one line on stderr with a stable exit code (2 for an invalid config or a bad argument).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ci_triage.cli.common import FLAG, boundary


def register(app: typer.Typer) -> None:
    config_app = typer.Typer(rich_markup_mode=None, help="Check or create the repository's config file (.github/ci-triage.toml).",
                             no_args_is_help=True)
    config_app.command("check")(check)
    config_app.command("init")(init)
    app.add_typer(config_app, name="config")


def _read_text(path: Path, what: str) -> str:
    from ci_triage.errors import ConfigError, UsageError

    from ci_triage.core.limits import size_problem

    try:
        too_big = size_problem(path.stat().st_size)  # before reading: the file may be any size
        if too_big:
            raise ConfigError(f"{path}: {too_big}")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"no {what} at {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # TOML is UTF-8 by definition (toml.io, "Spec").
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def check(
    file: Annotated[Path | None, typer.Argument(
        help="Config file to check; default: .github/ci-triage.toml in the current directory.")] = None,
) -> None:
    """Validate a config file: exit 0 if it is valid, 2 with the key and the problem if not."""
    from ci_triage.core.config.repo_config import DEFAULT_PATH, parse_repo_config

    with boundary():
        path = file or Path(DEFAULT_PATH)
        if file is None and not path.exists():
            # No file is a valid setup: every key has a default.
            sys.stdout.write(f"no {DEFAULT_PATH}: the defaults apply (see `ci-triage config init`)\n")
            return
        config = parse_repo_config(_read_text(path, "config file"), origin=str(path))
        facts = [f"{len(config.ownership)} ownership entr{'y' if len(config.ownership) == 1 else 'ies'}",
                 f"{len(config.policy.retryable_categories)} retryable categories",
                 f"max {config.max_auto_reruns} automatic rerun(s)"]
        if config.host_pattern:
            facts.append("host_pattern set")
        if config.rules_file:
            facts.append(f"rules from {config.rules_file}")
        sys.stdout.write(f"{path}: OK ({', '.join(facts)})\n")


def init(
    output: Annotated[Path, typer.Option(
        "--output", "-o", help="File to write; '-' for stdout.")] = Path(".github/ci-triage.toml"),
    workflows: Annotated[Path | None, typer.Option(
        "--workflows",
        help="Directory of workflow files; default: .github/workflows in the current directory.")] = None,
    force: Annotated[bool, typer.Option("--force", metavar=FLAG, help="Overwrite the output file if it exists.")] = False,
) -> None:
    """Write a commented config to start from, inferred from the repository's workflow files."""
    from ci_triage.core.config.infer import analyse_workflows, infer_config
    from ci_triage.core.config.repo_config import DEFAULT_WORKFLOWS_DIR
    from ci_triage.errors import UsageError
    from ci_triage.workflow_yaml import parse_all

    with boundary():
        directory = workflows or Path(DEFAULT_WORKFLOWS_DIR)
        if workflows is not None and not directory.is_dir():
            raise UsageError(f"no workflow directory at {directory}")
        # GitHub reads only the top level of .github/workflows, and both extensions.
        files = sorted(p for p in directory.glob("*") if p.suffix in (".yml", ".yaml") and p.is_file()) \
            if directory.is_dir() else []
        texts = parse_all({str(p): _read_workflow(p) for p in files})
        for workflow in analyse_workflows(texts):
            if workflow.problem:
                sys.stderr.write(f"ci-triage: warning: skipped {workflow.path}: {workflow.problem}\n")
        text = infer_config(texts)
        if str(output) == "-":
            sys.stdout.write(text)
            return
        _write_new(output, text, force)
        jobs = sum(len(w.jobs) for w in analyse_workflows(texts))
        sys.stdout.write(f"{output}: written from {len(files)} workflow file(s), {jobs} job(s)\n")


def _read_workflow(path: Path) -> str:
    from ci_triage.errors import UsageError

    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read workflow {path}: {exc.strerror or exc}") from None


def _write_new(path: Path, text: str, force: bool) -> None:
    from ci_triage.errors import UsageError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # "x" fails if the file appeared meanwhile: never clobber someone's edited config.
        with path.open("w" if force else "x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise UsageError(f"{path} already exists", "Pass --force to overwrite it.") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
