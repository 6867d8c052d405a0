"""A client's notice that it is retrying a request, and when such a notice stops being the cause.

pip prints `WARNING: Retrying (Retry(total=2, ...)) after connection broken by ...` each time a request
fails and is retried, down to `total=0` when the retries run out. The network rules
match those lines, and since network faults rank above what the change's own code reports (ORDER.md),
such a notice outranks a failing test printed after it. That is right when the retries ran out, and
wrong when a retry worked and the job went on to fail on its own: a PR's failing test called the
network's fault, and rerun.

A rule sees one line, so the call is made here, over all of a log's matches: when no notice says its
retries ran out (pip's `total=0`) and a failure of the change's own code (a category that is never
retryable) is reported after a notice, the notices before that failure are not causes. A run whose
retries ran out keeps its notices, and its client's final error, as the cause.

Only clients whose last notice says none are left can be read so: cargo's last notice says `(1 tries
remaining)` and its final error is worded as a dependency (`failed to get x as a dependency`), so its
notices stay causes wherever they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.logs.values import RuleMatch

# (the notice's wording, with the retries it still has as `left`)
_NOTICES = (
    re.compile(r"\bRetrying \(Retry\(total=(?P<left>\d+)\b"),  # pip (urllib3's Retry)
)


def retries_left(text: str) -> int | None:
    """How many retries a client's retry notice says it has left, or None when the line is no such notice."""
    for notice in _NOTICES:
        found = notice.search(text[:4096])
        if found:
            return int(found["left"])
    return None


# the weak rule of clients' notices that they retry (pnpm, yarn classic); the retry may have worked (ORDER.md)
RETRY_NOTICE_RULES = frozenset({"network-retry-notice"})


def _went_on(notice: RuleMatch, later: Sequence[RuleMatch]) -> bool:
    """Whether a later step of the job log failed after the step that printed `notice` (steps known)."""
    return notice.line.step is not None and any(
        m.line.step is not None and m.line.step != notice.line.step and m.line.number > notice.line.number
        for m in later)


def passed_step_notices(causes: Sequence[RuleMatch], step_failures: Sequence[RuleMatch]) -> list[RuleMatch]:
    """Retry notices (pip's, and the weak clients' notices) printed in a step that ended before the step that
    failed (a boilerplate exit line in a later step of the job log): that step succeeded, so its retries
    worked, whatever else explains the failure."""
    return [m for m in causes
            if (m.rule_id in RETRY_NOTICE_RULES or retries_left(m.line.text) is not None) and _went_on(m, step_failures)]


def outlived_notices(causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The retry notices among `causes` that a later failure of the change's own code shows a retry worked, or
    that the job went past: a notice in one step of a job log (GitHub Actions' `##[group]Run ...` sections) with
    the change's code failing in a later step. A failed step ends the job, so the step that printed the notice
    succeeded whatever its notices said (pip gives up on a dead `--extra-index-url` with `total=0` and installs
    from the main index), and the later failure is the cause."""
    notices = [(match, retries_left(match.line.text)) for match in causes]
    notices = [(match, left) for match, left in notices if left is not None]
    if not notices:
        return []
    code_failures = [m for m in causes if m.category in NEVER_RETRYABLE]
    if not code_failures:
        return []
    if not any(left == 0 for _, left in notices):
        last_code_failure = max(m.line.number for m in code_failures)
        return [match for match, _ in notices if match.line.number < last_code_failure]
    return [match for match, _ in notices if _went_on(match, code_failures)]
