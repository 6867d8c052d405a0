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
records the step's result as succeeded (actions/runner, `ExecutionContext.ApplyContinueOnError`: the outcome is
failure, the result, which the jobs API reports as the step's `conclusion`, success). So when the jobs API's steps
are known (the report has them), the `##[error]` lines of a step it says succeeded mark no failed step
(`failure_marks`): what that step printed is set aside like any passed step's, and the steps after it are not
"after the failure". Without them (a saved log), the log is read for it, leaning to no rerun: a later `run:` step
that failed too (its own exit line) of a code failure, or a later `run:` step under which the runner stopped the job
(lost, timed out), is a step the job ran as usual (a test, a build) after `continue-on-error` ones. That step is the
one the job failed of, and what the failed steps before it printed (an advisory linter's findings, an optional
download's DNS error) is not the cause (`failed_step_exit`, `continued_step_failures`). A later step failing of what
a rerun may cure (a disk filled while archiving the failed tests' logs in an `if: always()` step) or an action under
which the runner stopped (an `if: failure()` debugging session waiting out the timeout) leaves the first failed step
as the cause: the log cannot tell those from steps after a `continue-on-error` one, and a wrong guess there would
set a real failure aside for a rerun.

A network fault printed by a step that passed (curl's `(52) Empty reply from server` before its `--retry` worked, a
client's handled `ConnectionResetError` logged with its traceback, an optional download's DNS error) did not stop that
step: when the failed step reports a failure of its own that a rule explains, the earlier fault is not its cause
(`passed_step_faults`). Without such a failure of its own (a step that only exits, or prints what no rule knows) the
fault stays a cause: a download that an earlier step gave up on quietly (`|| true`) may be why the later step failed;
so it does beside a later dependency failure, what an unreachable index leads to (`FAULT_CONSEQUENCES`).
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
# The header name of an action's step (`uses: owner/name@ref`, `uses: owner/name/path@ref`, `uses: docker://image`).
_ACTION_STEP = re.compile(r"^Run (?:[\w.-]+/[\w./-]+@\S+|docker://\S+)$")


# In the set `succeeded_steps` gives when the jobs API's step conclusions are known (no step has this name): the API
# then says which steps failed and which went on (`continue-on-error`), and the log is not read for it.
API_KNOWN = "\x00jobs API"


def succeeded_steps(steps: Iterable[Step]) -> frozenset[str]:
    """Names of the steps the jobs API says succeeded (every step of that name, when names repeat): an
    `##[error]` line in one was a `continue-on-error` step's failure, not the job's. With API_KNOWN when some
    step has a conclusion."""
    outcomes: dict[str, set[str | None]] = {}
    for step in steps:
        outcomes.setdefault(step.name, set()).add(step.conclusion)
    names = frozenset(name for name, conclusions in outcomes.items() if conclusions == {"success"})
    known = any(conclusion is not None for conclusions in outcomes.values() for conclusion in conclusions)
    return names | {API_KNOWN} if known else names


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


# A later step counts as failed when it is a `run:` step that exited non-zero (an action that reports the tests' results
# after them, `if: always()`, fails with its own `##[error]` message, which says what the failed step already did), or
# when the runner stopped the job under it (lost, timed out).
RUNNER_STOPS = frozenset({"runner_lost", "job_timeout"})


def failed_step_exit(lines: Sequence[LogLine], causes: Sequence[RuleMatch],
                     succeeded: frozenset[str] = frozenset()) -> LogLine | None:
    """The first `##[error]` line of the step the job failed of: the first failed `run:` step's exit line, unless the
    jobs API's conclusions are unknown and a later `run:` step failed too (its own exit line) of a code failure, or the
    runner stopped the job under a later `run:` step; then the last such step's, the steps failed before it having
    been `continue-on-error`."""
    errors = failure_marks(lines, succeeded)
    first = next((line for line in errors if _STEP_EXIT.match(line.text)), None)
    if first is None or API_KNOWN in succeeded:
        # With the jobs API's conclusions, a step that failed and went on is one the API says succeeded (set aside
        # already): a failed step after the first is an `if: always()`/`if: failure()` step, never the job's cause.
        return first
    exited = {line.step for line in errors if line.number > first.number and _STEP_EXIT.match(line.text)}
    later = {line.step for line in errors if line.number > first.number and line.step != first.step}
    # The runner stopping the job under a later action (`uses:`) is no sign that the job went on as usual: an
    # `if: failure()` debugging action (mxschmitt/action-tmate) waits there until the job times out.
    # Nor is a later `run:` step's failure of what a retry may cure (a disk filled by an `if: always()` step archiving
    # the failed tests' logs): without the jobs API the log cannot tell that step from one after a continue-on-error
    # step, and taking it for the job's failure would set the real failure aside for a rerun. A code failure can.
    went_on = [m for m in causes if m.line.step in later and m.line.number > first.number
               and ((m.line.step in exited and m.category in NEVER_RETRYABLE)
                    or (m.category in RUNNER_STOPS and not _ACTION_STEP.match(m.line.step)))]
    if not went_on:
        return first
    step = max(went_on, key=lambda m: m.line.number).line.step
    return next(line for line in errors if line.step == step)


def continued_steps(lines: Sequence[LogLine], causes: Sequence[RuleMatch],
                    succeeded: frozenset[str] = frozenset()) -> tuple[LogLine | None, frozenset[str]]:
    """(the failed step's first `##[error]` line, the steps that failed before it and went on: `continue-on-error`;
    those the jobs API says succeeded are not among them, their `##[error]` lines being set aside already)."""
    failed = failed_step_exit(lines, causes, succeeded)
    if failed is None:
        return None, frozenset()
    return failed, frozenset(line.step for line in failure_marks(lines, succeeded)
                             if line.step != failed.step and line.number < failed.number)


def continued_step_failures(lines: Sequence[LogLine], causes: Sequence[RuleMatch],
                            succeeded: frozenset[str] = frozenset()) -> list[RuleMatch]:
    """The matches among `causes` printed by a `continue-on-error` step that failed before the step the job failed of,
    whatever their category: the job went on past them."""
    failed, continued = continued_steps(lines, causes, succeeded)
    if not continued:
        return []
    return [m for m in causes if m.line.step in continued and m.line.number < failed.number]


# What a step that passed may print and still go on: a request that failed and was retried, handled, or not needed.
PASSED_STEP_FAULTS = frozenset({"network"})
# What a later step fails of when an earlier one could not reach a package index and went on (`apt-get update`
# warning that an index failed to download, then `Unable to locate package`): beside it the earlier network fault
# stays the cause, as a resolver's failure beside an unreachable index is the network's (categories.py).
FAULT_CONSEQUENCES = frozenset({"dependency"})


def passed_step_faults(lines: Sequence[LogLine], causes: Sequence[RuleMatch],
                       succeeded: frozenset[str] = frozenset()) -> list[RuleMatch]:
    """The network faults among `causes` printed by a step that passed (no `##[error]` line, or one the jobs API says
    succeeded) before the failed step, when the failed step reports an explained failure of its own."""
    if not any(m.category in PASSED_STEP_FAULTS and m.line.step is not None for m in causes):
        return []
    failed = failed_step_exit(lines, causes, succeeded)
    if failed is None:
        return []
    failed_steps = {line.step for line in failure_marks(lines, succeeded)}
    faults = [m for m in causes if m.category in PASSED_STEP_FAULTS and m.line.step is not None
              and m.line.step not in failed_steps and m.line.number < failed.number]
    own = [m for m in causes if m.line.step == failed.step]
    # A module the failed step cannot find that a fault names (pip's `Read timed out` for its wheel, in an install the
    # step went on past: `pip install ... || true`) is what that fault left missing: an import error beside it is its
    # consequence, as a resolver's failure is.
    missing = {_spelled(m.captures["module"].split(".")[0]) for m in own
               if m.category == "import_error" and m.captures.get("module")}
    named = any(module and module in _spelled(fault.line.text) for module in missing for fault in faults)
    if not any(m.category not in FAULT_CONSEQUENCES and not (named and m.category == "import_error") for m in own):
        return []
    return faults


def _spelled(text: str) -> str:
    """Text as a package index spells names: lowered, `_` as `-`."""
    return text.lower().replace("_", "-")


def after_failed_step(lines: Sequence[LogLine], causes: Sequence[RuleMatch],
                      succeeded: frozenset[str] = frozenset()) -> list[RuleMatch]:
    """The matches among `causes` printed by a step that ran after the failed step."""
    failed = failed_step_exit(lines, causes, succeeded)
    if failed is None:
        return []
    return [m for m in causes if m.line.step is not None and m.line.step != failed.step and m.line.number > failed.number]
