"""Log lines + rules -> Classification: the root-cause line, its category, captures and stack.

"unknown" is a value, not an exception: a log no rule explains still gets a root-cause line (the
scorer's choice from general evidence, else the first `##[error]`) and a fingerprint, so it can be
clustered with others like it and apart from unlike ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ci_triage.core.logs.fingerprint import fingerprint
from ci_triage.core.logs.rules import RuleSet
from ci_triage.core.logs.scorer import CONTEXT_LINES, best_line
from ci_triage.model import Classification, Frame, LogLine, RootCause, RuleMatch

# `  File "/path/to/file.py", line 12, in function`, as printed by Python's traceback module.
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>.+?)\s*$')
_TRACEBACK_START = "Traceback (most recent call last):"
# Where Actions runners check a repository out: hosted `/home/runner/work/<repo>/<repo>/`,
# self-hosted `<root>/_work/<repo>/<repo>/`, container jobs `/__w/<repo>/<repo>/`.
_CHECKOUT = re.compile(r"^.*?/(?:_work|work|__w)/(?P<repo>[^/]+)/(?P=repo)/")
_SITE_PACKAGES = re.compile(r"^.*?/(?:site|dist)-packages/(?P<rest>.+)$")
# Lines from the rule's own examples may be prefixed by `E   ` (pytest) or a logger; keep matching
# bounded: a pathological line is cut before the regexes see it.
_MAX_LINE = 4096
_MAX_MATCHES = 2000


def repo_relative(path: str) -> tuple[str, str | None]:
    """Make a traceback path comparable to a PR's changed files: (path, package or None)."""
    checkout = _CHECKOUT.match(path)
    if checkout:
        return path[checkout.end() :], None
    site = _SITE_PACKAGES.match(path)
    if site:
        rest = site.group("rest")
        return rest, rest.split("/", 1)[0].removesuffix(".py")
    return path, None


def _frames_before(lines: Sequence[LogLine], index: int) -> tuple[Frame, ...]:
    """Frames of the last Python traceback that ends at or just before lines[index]."""
    start = None
    for back in range(index, max(-1, index - 400), -1):
        if _TRACEBACK_START in lines[back].text:
            start = back
            break
    if start is None:
        return ()
    frames = []
    for line in lines[start:index + 1]:
        found = _FRAME.match(line.text)
        if found:
            path, package = repo_relative(found.group("path"))
            frames.append(Frame(path, int(found.group("line")), found.group("function"), package))
    return tuple(frames)


def find_matches(lines: Iterable[LogLine], rule_set: RuleSet) -> list[RuleMatch]:
    """For every line, the highest-priority rule that matches it, with its captures (at most
    _MAX_MATCHES, in log order).

    Lines from `matcher.relevant_lines` come with their matches already found by one scan of the
    whole log; any other lines go through the same per-line check, which skips a rule's regexes on
    lines that lack all of its required literals.
    """
    from ci_triage.core.logs.matcher import (  # the matcher imports this module
        RelevantLines,
        matcher_for,
    )

    if isinstance(lines, RelevantLines):
        if lines.rule_set != rule_set:
            raise ValueError("these lines were selected for another rule set")
        return list(lines.matches)
    return matcher_for(rule_set).match_lines(lines, _MAX_LINE, _MAX_MATCHES)


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
        index = next(i for i, line in enumerate(lines) if line.number == winner.line.number)
        root = RootCause(winner.line.number, winner.line.text, winner.line.step)
        return Classification(
            category=winner.category,
            retryable=winner.retryable,
            rule_id=winner.rule_id,
            root_cause=root,
            captures=captures,
            frames=_frames_before(lines, index),
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


def _unexplained(lines: Sequence[LogLine], matches: Sequence[RuleMatch], boilerplate: set[str],
                 captures: dict[str, str], failed_tests: tuple[str, ...]) -> Classification:
    """No rule names the cause: the scorer picks the likeliest line (so distinct failures get distinct
    fingerprints), the exit code gives the category when it names a signal."""
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
        frames = _frames_before(window, len(window) - 1)
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
