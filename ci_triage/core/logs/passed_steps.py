"""A failure of the change's own code reported in a step that passed is not the job's failure.

A GitHub Actions job stops at its first failed step (unless the step says `continue-on-error`), and a failed
step closes with an `##[error]` line (`##[error]Process completed with exit code 1.`, an action's own error).
So when a log's lines are mapped to steps (by the jobs API's step times, or the `##[group]Run ...` headers) and
a later step failed, an earlier step with no `##[error]` line passed: what it printed that reads like a code
failure was harmless there (a `go test -v` log line of a passing test, `t.Log("address already in use, trying
next port")`; a lint warning the step does not fail on; a flaky test's failure that a rerun plugin retried).
Only categories that are the change's code (never retryable) are set aside this way: a port clash, an OOM kill
or a network fault in an earlier step (a server started in the background) may still be what the later step
failed of.

The other way round, a step run after the first failed `run:` step (its `##[error]Process completed with exit code
N.` line) is an `if: always()` step: a cleanup (`docker rm -f db || true` printing `Error response from daemon: No
such container`), a coverage upload hitting a rate limit, a dump of a service's log. What it prints came after
the failure and is not its cause, whatever its category.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import re

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.logs.matcher import KEEP_ERRORS
from ci_triage.core.logs.values import LogLine, RuleMatch
# the exit line of a failed `run:` step (an action's own `##[error]` text is not read: a script may print
# `::error::` annotations in a step that passes, but not this line)
_STEP_EXIT = re.compile(r"^##\[error\]Process completed with exit code \d+\.")


def _error_lines(lines: Iterable[LogLine]) -> list[LogLine]:
    """The first KEEP_ERRORS `##[error]` lines (those `relevant_lines` keeps, so both paths see the same)."""
    found: list[LogLine] = []
    for line in lines:
        if line.text.startswith("##[error]"):
            found.append(line)
            if len(found) >= KEEP_ERRORS:
                break
    return found


def passed_step_failures(lines: Iterable[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The code failures among `causes` printed in a step that passed, a later step having failed."""
    if not any(m.category in NEVER_RETRYABLE and m.line.step is not None for m in causes):
        return []
    errors = [line for line in _error_lines(lines) if line.step is not None]
    if not errors:
        return []
    failed_steps = {line.step for line in errors}
    return [m for m in causes
            if m.category in NEVER_RETRYABLE and m.line.step is not None and m.line.step not in failed_steps
            and any(e.number > m.line.number for e in errors)]


def first_failed_step_exit(lines: Iterable[LogLine]) -> LogLine | None:
    """The exit line of the first failed `run:` step, when the log's lines are mapped to steps."""
    for line in _error_lines(lines):
        if line.step is not None and _STEP_EXIT.match(line.text):
            return line
    return None


def after_failed_step(lines: Iterable[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches among `causes` printed by a step that ran after the first failed step."""
    first = first_failed_step_exit(lines)
    if first is None:
        return []
    return [m for m in causes if m.line.step is not None and m.line.step != first.step and m.line.number > first.number]
