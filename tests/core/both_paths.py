"""Classify a log by both paths (every line parsed, and the fast matcher's selection) and hold them to one answer."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules

RULES = builtin_rules()


def classify_both(log: str, steps=()):
    """The classification of `log` (with the jobs API's `steps`, if any), the same by both paths."""
    full = classify(list(parse_log(log, steps)), RULES, steps)
    fast = classify(relevant_lines(log, RULES, steps), RULES, steps)
    assert (full.category, full.root_cause.line) == (fast.category, fast.root_cause.line)
    return full
