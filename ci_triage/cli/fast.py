"""`ci-triage classify` without typer: the command's body, and a parser for its plain calls.

A classify call spends most of its start-up in typer (which imports pydantic and builds an adapter
per parameter) when the command itself needs neither. `run_fast` takes only the calls whose meaning
is certain (`classify`, then files, `--format table|json`, `--rules FILE`, `--no-builtin`, `--`,
each option at most once) and runs the same body as the typer command (`classify_paths`), with the
same error line and exit code (`error_text`, `boundary`). Anything else, `--help` and every usage
error included, returns False and is left to typer, so what typer would print it still prints.
The rule-file reading every command shares (`read_small_text`, `load_rules`) lives here too, so that
classify can use it without typer; cli/common.py re-exports it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ci_triage.errors import TriageError, UsageError

# Where a token reaches us (ci_triage/config.py reads these): its value is redacted wherever it occurs.
SECRET_ENV = ("GITHUB_TOKEN", "GH_TOKEN")
MAX_ERROR_CHARS = 2000
MAX_CELL_CHARS = 500  # a table cell; rich wraps a 100 MB line for longer than anyone waits
FORMATS = ("table", "json")  # cli.common.OutputFormat's values


def error_text(message: str) -> str:
    """The one line an error becomes on stderr."""
    from ci_triage.core.redact import redact
    from ci_triage.core.text import shown

    # One line, whatever it quotes: a URL with a token in it, a log line with escape sequences in it.
    secrets = [os.environ.get(name) for name in SECRET_ENV]
    return f"ci-triage: error: {redact(shown(message, MAX_ERROR_CHARS), secrets)}\n"


@contextlib.contextmanager
def mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """A saved log's bytes through a read-only mmap: the page cache is read in place, so private
    memory stays bounded at any size (an empty file, which cannot be mapped, is b"")."""
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                yield b""
                return
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                yield data
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def rule_set_for(rules: Path | None, no_builtin: bool) -> Any:
    from ci_triage.core.logs.rules import builtin_rules, merge_rule_sets

    if no_builtin and rules is None:
        raise UsageError("--no-builtin needs a --rules file")
    if rules is None:
        return builtin_rules()
    extra = load_rules(rules)
    return extra if no_builtin else merge_rule_sets(builtin_rules(), extra)


def read_small_text(path: Path, what: str) -> str:
    """A config or rule file's text, refused before reading when it is bigger than any real one."""
    from ci_triage.core.limits import size_problem
    from ci_triage.errors import ConfigError

    try:
        too_big = size_problem(path.stat().st_size)
        if too_big:
            raise ConfigError(f"{what} {path} {too_big}")
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from None


def load_rules(file: Path) -> Any:
    from ci_triage.core.limits import toml_problem
    from ci_triage.core.logs.rules import parse_rules
    from ci_triage.errors import ConfigError

    text = read_small_text(file, "rule file")
    problem = toml_problem(text)  # before tomllib, which is quadratic in dotted-key parts
    if problem:
        raise ConfigError(f"{file}: {problem}")
    return parse_rules(text, origin=str(file))


def classify_paths(files: Sequence[str], fmt: str, rules: Path | None, no_builtin: bool) -> None:
    """The body of `ci-triage classify` (fmt: "table" or "json")."""
    import time

    from ci_triage.core.logs.budget import DEFAULT_BUDGET_S, classify_within
    from ci_triage.core.render import json as json_contract

    rule_set = rule_set_for(rules, no_builtin)
    results = []
    for path in map(Path, files):
        with mapped(path) as raw:
            result = classify_within(raw, rule_set, seconds=DEFAULT_BUDGET_S, clock=time.monotonic)
        results.append(json_contract.classification_entry(str(path), result))
    if fmt == "json":
        sys.stdout.write(json_contract.document(results))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ci_triage.core.text import shown

    table = Table("file", "category", "retryable", "line", "root cause")
    for entry in results:
        root = entry["root_cause"] or {}
        table.add_row(Text(shown(entry["file"])), Text(shown(entry["category"])),
                      "yes" if entry["retryable"] else "no",
                      str(root.get("line", "")), Text(shown(root.get("text", ""), MAX_CELL_CHARS)))
    Console().print(table)


def parse_classify(argv: Sequence[str]) -> tuple[list[str], str, Path | None, bool] | None:
    """(files, format, rules, no_builtin) of a plain `classify` call, or None for typer to handle."""
    if not argv or argv[0] != "classify":
        return None
    files: list[str] = []
    fmt, rules, no_builtin = "table", None, False
    seen: set[str] = set()
    rest = list(argv[1:])
    only_files = False
    while rest:
        arg = rest.pop(0)
        if only_files or arg == "-" or not arg.startswith("-"):
            files.append(arg)
            continue
        if arg == "--":
            only_files = True
            continue
        name, equals, value = arg.partition("=")
        if name in seen:
            return None
        seen.add(name)
        if name == "--no-builtin" and not equals:
            no_builtin = True
            continue
        if name not in ("--format", "--rules"):
            return None  # --help, a typo, a short option: typer's answer
        if not equals:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None
        if name == "--format":
            if value not in FORMATS:
                return None
            fmt = value
        else:
            rules = Path(value)
    if not files:
        return None
    return files, fmt, rules, no_builtin


def exit_for(error: Exception | KeyboardInterrupt) -> tuple[str, int]:
    """The message and exit code an error that reached a command's boundary ends the process with."""
    if isinstance(error, TriageError):
        return error.one_line(), error.exit_code
    if isinstance(error, KeyboardInterrupt):
        return "interrupted", 130
    # A bug still gets one clear line.
    return f"internal error: {type(error).__name__}: {error} (set CI_TRIAGE_DEBUG=1 for a traceback)", 70


@contextlib.contextmanager
def boundary() -> Iterator[None]:
    """cli.common.boundary without typer: the same line on stderr, the same exit code."""
    try:
        yield
    except SystemExit:
        raise
    except (Exception, KeyboardInterrupt) as error:  # noqa: BLE001 - the boundary
        message, code = exit_for(error)
        sys.stderr.write(error_text(message))
        sys.exit(code)


def run_fast(argv: Sequence[str]) -> bool:
    """Run a plain `classify` call here and return True; False leaves the call to typer."""
    if os.environ.get("CI_TRIAGE_DEBUG") or any(name.endswith("_COMPLETE") for name in os.environ):
        return False  # debug logging and shell completion are typer's
    try:
        for arg in argv:
            arg.encode()
    except UnicodeEncodeError:  # an undecodable argument: typer decides what it means
        return False
    parsed = parse_classify(argv)
    if parsed is None:
        return False
    with boundary():
        classify_paths(*parsed)
    return True
