"""Log lines + rules -> Classification: the root-cause line, its category, captures and stack.

"unknown" is a value, not an exception: a log no rule explains still gets a root-cause line (the
scorer's choice from general evidence, else the first `##[error]`) and a fingerprint, so it can be
clustered with others like it and apart from unlike ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ci_triage.core.logs.fingerprint import fingerprint
from ci_triage.core.logs.frames import frames_in
from ci_triage.core.logs.matcher import context_before, find_matches, with_context
from ci_triage.core.logs.rules import RuleSet
from ci_triage.core.logs.scorer import CONTEXT_LINES, best_line
from ci_triage.core.logs.values import Classification, Frame, LogLine, RootCause, RuleMatch



def _first_error_line(lines: Sequence[LogLine], boilerplate_matches: Sequence[RuleMatch]) -> LogLine | None:
    """The stand-in root cause when no rule explains a log: the earliest `##[error]` annotation or
    boilerplate match (an exit-code line as the web UI shows it, `Error: Process completed ...`)."""
    annotation = next((line for line in lines if line.text.startswith("##[error]")), None)
    candidates = [m.line for m in boilerplate_matches] + ([annotation] if annotation else [])
    return min(candidates, key=lambda line: line.number, default=None)


def classify(lines: Sequence[LogLine], rule_set: RuleSet) -> Classification:
    matches = find_matches(lines, rule_set)
    boilerplate = {rule.id for rule in rule_set.rules if rule.boilerplate}
    causes = [m for m in matches if m.rule_id not in boilerplate]
    captures: dict[str, str] = {}
    for match in matches:
        if match.rule_id in boilerplate:
            captures.update(match.captures)
    failed_tests = tuple(dict.fromkeys(m.captures["test"] for m in matches if "test" in m.captures))

    if causes:
        # Highest priority wins; among equals, the earliest line: downstream errors come later.
        winner = min(causes, key=lambda m: (m.priority, m.line.number))
        captures.update({k: v for k, v in winner.captures.items() if k != "test"})
        root = RootCause(winner.line.number, winner.line.text, winner.line.step)
        return Classification(
            category=winner.category,
            retryable=winner.retryable,
            rule_id=winner.rule_id,
            root_cause=root,
            captures=captures,
            frames=frames_in(context_before(lines, winner.line)),
            failed_tests=failed_tests,
            fingerprint=fingerprint(winner.category, winner.line.text),
            matches=tuple(matches),
        )

    return _unexplained(lines, matches, boilerplate, captures, failed_tests)


# When no rule explains a log, the exit code still says how the process ended (128 + the signal).
EXIT_MEANINGS = {
    "137": ("host_oom", "Killed (SIGKILL), as the kernel's OOM killer does"),
    "139": ("crash", "Segmentation fault (SIGSEGV)"),
    "134": ("crash", "Aborted (SIGABRT)"),
    "143": ("crash", "Terminated (SIGTERM)"),
}


# How many anchors' preceding lines the scorer reads when no rule explains a log.
MAX_SCORED_ANCHORS = 8

def _unexplained(lines: Sequence[LogLine], matches: Sequence[RuleMatch], boilerplate: set[str],
                 captures: dict[str, str], failed_tests: tuple[str, ...]) -> Classification:
    """No rule names the cause: the scorer picks the likeliest line (so distinct failures get distinct
    fingerprints), the exit code gives the category when it names a signal."""
    # The fast path keeps only matched lines; the scorer reads the lines before the anchors (the
    # boilerplate matches: here every match is one). Bounded: the first and the last few anchors.
    anchors = [m.line for m in matches]
    lines = with_context(lines, anchors[:1] + anchors[-MAX_SCORED_ANCHORS:])
    best = best_line(lines, matches, boilerplate)
    error_line = best.line if best else _first_error_line(lines, [m for m in matches if m.rule_id in boilerplate])
    category, retryable = "unknown", False
    meaning = EXIT_MEANINGS.get(captures.get("exit_code", ""))
    if meaning:
        category, captures["signal"] = meaning[0], meaning[1]
        retryable = True  # resource exhaustion or a crash: the policy still wants contention evidence
    root = RootCause(error_line.number, error_line.text, error_line.step) if error_line else None
    frames: tuple[Frame, ...] = ()
    # Only the lines the matcher keeps for certain (those before the next match) may be read, so the
    # fast path and the full line list agree.
    next_match = min((m.line.number for m in matches if best and m.line.number >= best.line.number), default=None)
    if best is not None and next_match is not None:
        window = [line for line in lines if next_match - CONTEXT_LINES <= line.number <= best.line.number]
        frames = frames_in([line.text for line in window])
    return Classification(
        category=category,
        retryable=retryable,
        rule_id=None,
        root_cause=root,
        captures=captures,
        frames=frames,
        failed_tests=failed_tests,
        fingerprint=fingerprint(category, error_line.text) if error_line else None,
        matches=tuple(matches),
    )


def focus_on_test(classification: Classification, test: str) -> Classification:
    """The same classification with the root cause moved to the line that reports `test` failing.

    Used when the base branch already fails some tests: the interesting line is the first failure
    the PR brought, not the first failure in the log.
    """
    match = next((m for m in classification.matches if m.captures.get("test") == test), None)
    if match is None:
        return classification
    return replace(
        classification,
        category=match.category,
        retryable=match.retryable,
        rule_id=match.rule_id,
        root_cause=RootCause(match.line.number, match.line.text, match.line.step),
        fingerprint=fingerprint(match.category, match.line.text),
    )
