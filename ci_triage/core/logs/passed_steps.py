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

A step with `continue-on-error: true` that fails prints the same exit line, and the job goes on. The runner
then records the step's result as succeeded (actions/runner, `ExecutionContext.ApplyContinueOnError`: the
outcome is failure, the result, which the jobs API reports as the step's `conclusion`, success), so when the
jobs API's steps are known, the `##[error]` lines of a step it says succeeded do not mark a failed step: what
that step printed is set aside like any passed step's, and the steps after it are not "after the failure".
Without the API's steps (a saved log), the log alone cannot tell such a step from the one that failed the job.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import re

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.logs.matcher import KEEP_ERRORS
from ci_triage.core.logs.values import LogLine, RuleMatch, Step
# the exit line of a failed `run:` step (an action's own `##[error]` text is not read: a script may print
# `::error::` annotations in a step that passes, but not this line)
_STEP_EXIT = re.compile(r"^##\[error\]Process completed with exit code \d+\.")


def succeeded_steps(steps: Iterable[Step]) -> frozenset[str]:
    """Names of the steps the jobs API says succeeded (every step of that name, when names repeat): an
    `##[error]` line in one was a `continue-on-error` step's failure, not the job's."""
    outcomes: dict[str, set[str | None]] = {}
    for step in steps:
        outcomes.setdefault(step.name, set()).add(step.conclusion)
    return frozenset(name for name, conclusions in outcomes.items() if conclusions == {"success"})


def _error_lines(lines: Iterable[LogLine], succeeded: frozenset[str] = frozenset()) -> list[LogLine]:
    """The first KEEP_ERRORS `##[error]` lines (those `relevant_lines` keeps, so both paths see the same),
    but those of a step that succeeded (`continue-on-error`)."""
    found: list[LogLine] = []
    for line in lines:
        if line.text.startswith("##[error]"):
            found.append(line)
            if len(found) >= KEEP_ERRORS:
                break
    return [line for line in found if line.step is None or line.step not in succeeded]


def failure_marks(lines: Iterable[LogLine], succeeded: frozenset[str] = frozenset()) -> list[LogLine]:
    """The `##[error]` lines that mark a failed step: those of a known step that did not succeed."""
    return [line for line in _error_lines(lines, succeeded) if line.step is not None]


def passed_step_failures(lines: Iterable[LogLine], causes: Sequence[RuleMatch],
                         succeeded: frozenset[str] = frozenset()) -> list[RuleMatch]:
    """The code failures among `causes` printed in a step that passed, a later step having failed."""
    if not any(m.category in NEVER_RETRYABLE and m.line.step is not None for m in causes):
        return []
    errors = failure_marks(lines, succeeded)
    if not errors:
        return []
    failed_steps = {line.step for line in errors}
    return [m for m in causes
            if m.category in NEVER_RETRYABLE and m.line.step is not None and m.line.step not in failed_steps
            and any(e.number > m.line.number for e in errors)]


def first_failed_step_exit(lines: Iterable[LogLine], succeeded: frozenset[str] = frozenset()) -> LogLine | None:
    """The exit line of the first failed `run:` step, when the log's lines are mapped to steps."""
    for line in _error_lines(lines, succeeded):
        if line.step is not None and _STEP_EXIT.match(line.text):
            return line
    return None


def after_failed_step(lines: Iterable[LogLine], causes: Sequence[RuleMatch],
                      succeeded: frozenset[str] = frozenset()) -> list[RuleMatch]:
    """The matches among `causes` printed by a step that ran after the first failed step."""
    first = first_failed_step_exit(lines, succeeded)
    if first is None:
        return []
    return [m for m in causes if m.line.step is not None and m.line.step != first.step and m.line.number > first.number]
