"""A finding whose rule matches a note printed under it, and the finding's own header above that note.

clippy prints each finding as rustc prints a diagnostic: the header that says what is wrong (`error: unneeded
`return` statement`), the location (` --> src/main.rs:1:33`), the source excerpt (`1 | fn add() ...`, `  |   ^^^`)
and then its notes (`= help: for further information visit .../index.html#needless_return`, `= note: `-D
clippy::needless-return` implied by `-D warnings``). `clippy-lint` (60-build) matches the notes, the only lines that
say the finding is clippy's (the header reads like any of rustc's errors, and clippy has hundreds of wordings); the
header is the line that says why, so it is the root cause: the walk goes back from the note over the diagnostic's
body (location, excerpt, earlier notes) to its header, and stops at any other line (a blank line ends a diagnostic).

ty (astral's type checker) prints its findings in the same shape (`error[invalid-return-type]: ...`, ` --> app.py:4:12`),
warnings too (`warning[unused-type-ignore-comment]: ...`), which do not fail the run. `lint-diagnostic` (70-tests)
matches the location line of a Python file (ruff's full format, whose findings are all errors and whose header has no
`error:`), so a warning's location printed first was named the root: a location under a `warning[...]` header is no
cause (`python_warning_locations`), and one under an `error[...]` header names that header (`python_location_header`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import context_lines
from ci_triage.core.logs.values import LogLine, RuleMatch

# (and cargo-manifest-error: cargo prints a Cargo.toml parse error as a diagnostic, its location line under the header)
HEADER_RULES = frozenset({"clippy-lint", "cargo-manifest-error"})
# How far above the note its header may be: a finding's excerpt spans a few lines, a multi-line span a few dozen.
_REACH = 60
_HEADER = re.compile(r"^(?:error|warning)(?:\[[\w:-]+\])?: \S")
# rustc's diagnostic body: ` --> file:l:c`, ` ::: file`, `  |`, `12 | code`, `12 + code` / `12 - code` (a suggestion),
# `  = note: ...`, `...` (elided lines)
_BODY = re.compile(r"^\s*(?:-->|:::|\||=|\d+\s*[|+-]|\.\.\.$)")


def diagnostic_header(lines: Sequence[LogLine], note: LogLine) -> LogLine | None:
    """The header of the diagnostic `note` belongs to, when only the diagnostic's body lies between them."""
    above = context_lines(lines, note, _REACH)
    for line in reversed(above[:-1]):
        if _HEADER.match(line.text):
            return line
        if not _BODY.match(line.text):
            return None
    return None


# ruff's and ty's location line under a finding in a Python file
_PY_LOCATION = re.compile(r"^\s*--> \S+?\.pyi?:\d+:\d+$")


def python_warning_locations(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The lint-diagnostic matches on a Python location line whose diagnostic's header is a warning's."""
    found = []
    for match in causes:
        if match.rule_id == "lint-diagnostic" and _PY_LOCATION.match(match.line.text):
            header = diagnostic_header(lines, match.line)
            if header is not None and header.text.startswith("warning"):
                found.append(match)
    return found


def python_location_header(lines: Sequence[LogLine], location: LogLine) -> LogLine | None:
    """The `error[...]` header above a Python location line (ty's), which says why; None for ruff's."""
    if not _PY_LOCATION.match(location.text):
        return None
    header = diagnostic_header(lines, location)
    return header if header is not None and header.text.startswith("error") else None
