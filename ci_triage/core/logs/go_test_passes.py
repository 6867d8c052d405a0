"""A passing Go test's log lines, which `go test -v` prints with the same location format as a failure's.

`go test -v` streams what a test logs (`t.Log`, `t.Logf`) as it runs, indented under the test: `    api_test.go:3:
serving`, then the test's verdict one level out (`--- PASS: TestHandler (0.00s)`). A failing test's `t.Error` and
`t.Fatal` lines have exactly that shape, which is why `test-assertion-failed` (70-tests) takes a `x_test.go:N: ` line
at the start of an indented line. In a log where a passing test logged something before the job failed of something
else (a later test's timeout panic, a job stopped at its limit with nothing a rule knows) that line was read as the
failure: in one step, so `passed_steps.py` (which sets aside what a step that passed printed) does not see it.

A rule sees one line, so the call is made here: a Go test log line whose test's verdict, printed after it at one
indentation level less (four spaces; go >= 1.14 prints a test's output before its verdict), says `--- PASS` or `---
SKIP` is not a cause. A line whose verdict says `--- FAIL`, or is not in the log (the job was stopped under the test,
the package's summary came first, the paste was cut), stays one.

Whatever rule such a line matches: what a passing test logs may read like any fault (`t.Logf("second listen: %v",
err)` printing `listen tcp 127.0.0.1:39693: bind: address already in use` from a test of a port fallback, a `context
deadline exceeded` it retried past). Only the runner's own notices (a runner lost, the job timed out), which may be
written into any line, are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import RelevantLines
from ci_triage.core.logs.values import LogLine, RuleMatch

GO_TEST_RULE = "test-assertion-failed"
# the runner's own notices, which may be written into any line of a log
_RUNNER_CATEGORIES = frozenset({"runner_lost", "job_timeout"})
# The location of a test's log line, after whatever framing the CI system put in front of it (a Tekton step's
# `[task : step] `), and the indentation go test gives it: four spaces per level.
# Matched at the start of each run of spaces (a lazy frame before `(?: {4})+` tried every space of a long run, each
# time across the rest of the run: quadratic); the indent is the run's last multiple of four spaces.
_GO_LOG_LINE = re.compile(r"(?<! )(?P<run> {4,})\S+_test\.go:\d+: ")


def _shape(text: str) -> tuple[str, int] | None:
    """The framing before a Go test log line's indentation, and its depth (0 for a top-level test's line)."""
    found = _GO_LOG_LINE.search(text)
    if found is None:
        return None
    start = found.start("run") + len(found["run"]) % 4
    return text[:start], len(found["run"]) // 4 * 4 - 4
_VERDICT = re.compile(r"--- (?P<verdict>PASS|FAIL|SKIP): ")
# A package's summary line (`ok  \tpkg\t0.01s`, `FAIL\tpkg\t0.01s`, a bare `FAIL`/`PASS`): its tests' verdicts are above it.
_PACKAGE_END = re.compile(r"(?:ok|FAIL|PASS)(?:\s|$)")
REACH = 400  # lines after a log line within which its test's verdict is looked for


def _following(lines: Sequence[LogLine], line: LogLine) -> list[LogLine]:
    """The lines after `line`, up to REACH of them, as far as the log (or the matcher's kept lines) reaches."""
    if not isinstance(lines, RelevantLines):
        return [other for other in lines if line.number < other.number <= line.number + REACH]
    later = [other for other in lines if line.number < other.number <= line.number + REACH]
    end = lines.last_line
    if end is not None and line.number < end.number <= line.number + REACH:
        later.append(end)
    if not later:
        return []
    anchor = max(later, key=lambda other: other.number)
    return [other for other in lines.context_lines(anchor, anchor.number - line.number) if other.number > line.number]


def passing_test_logs(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches (`test-assertion-failed`'s, or any other rule's but the runner's notices) that are a Go test's log
    line under a verdict of PASS or SKIP."""
    found = []
    for match in causes:
        if match.category in _RUNNER_CATEGORIES:
            continue
        shape = _shape(match.line.text)
        if shape is None:
            continue
        frame, depth = shape
        for other in _following(lines, match.line):
            if not other.text.startswith(frame):
                continue
            rest = other.text[len(frame):]
            if depth == 0 and _PACKAGE_END.match(rest):
                break
            if rest[:depth].strip() == "" and _VERDICT.match(rest, depth):
                if _VERDICT.match(rest, depth)["verdict"] != "FAIL":
                    found.append(match)
                break
    return found
