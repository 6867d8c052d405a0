"""Classify a raw log within a time budget: an overrun is an `unknown` with a note, never a hang.

The clock comes from the caller (the shell passes `time.monotonic`), so this stays pure; RE2 and
the refusal of exponential patterns (regex_guard) bound each regex call, the budget bounds the sum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import RawLog
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.regex_guard import Budget, BudgetExceeded, within
from ci_triage.core.logs.rules import RuleSet
from ci_triage.core.logs.values import Classification, Step

# Seconds the rules may spend on one log; a log that needs more is reported unknown with a note.
DEFAULT_BUDGET_S = 20.0


def classify_within(raw: RawLog, rule_set: RuleSet, steps: Iterable[Step] = (), *, seconds: float | None,
                    clock: Callable[[], float] | None) -> Classification:
    """`classify(relevant_lines(raw, rule_set, steps), rule_set, steps)`, stopped after `seconds`."""
    budget = Budget(seconds, clock) if seconds is not None and clock is not None else None
    try:
        with within(budget):
            steps = tuple(steps)
            return classify(relevant_lines(raw, rule_set, steps), rule_set, steps)
    except BudgetExceeded as exc:
        return Classification(category="unknown", retryable=False, rule_id=None, root_cause=None,
                              captures={"note": f"not classified: {exc}"}, frames=(), failed_tests=(),
                              fingerprint=None)
