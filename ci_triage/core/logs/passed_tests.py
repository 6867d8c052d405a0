"""What a test printed while it ran is not the test runner's verdict on it.

A long test step prints, besides the runner's verdicts, what the tests themselves log: a client's retried
`ECONNRESET` logged with `console.error`, a `#[should_panic]` test's expected panic. Rules see one line at a time,
so such a line can outrank the one failing test's verdict (a network line ranks above every test rule). Two shapes of
it are the runner's own and can be told apart from the verdicts:

- jest's console blocks (`@jest/console`'s BufferedConsole, printed under a suite's `PASS`/`FAIL` header): a
  `console.error` / `console.warn` / `console.log` (...) line, the message indented under it, the code frame of the
  call site (`> 4 |     console.error(...)`, quoted source) and the `at Object.error (src/x.test.js:4:13)` frame that
  closes it. What a test logs is not why it failed: a failing test's cause is in its `● suite › test` block.
- libtest's output of a test run with `--nocapture` (cargo test -- --nocapture, --show-output): the test's line
  (`test tests::rejects_zero - should panic ... `) is printed before it runs, its output follows, then its result
  alone on a line (`ok`, `FAILED`). A panic (`thread 'tests::x' (12) panicked at src/lib.rs:3:5:`) whose test's
  result is `ok` was expected (`#[should_panic]`) or caught (`catch_unwind`), and is not the failure.

What such a block prints is set aside whatever its category, but the machine's own reports (a runner lost, the job
timed out, the host out of memory or disk), which can land anywhere in a log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.matcher import context_before
from ci_triage.core.logs.values import LogLine, RuleMatch

MACHINE_CATEGORIES = frozenset({"runner_lost", "job_timeout", "host_oom", "disk_full"})
_CONSOLE_HEADER = re.compile(r"^\s*console\.(?:log|error|warn|info|debug|trace)\s*$")
# what ends a console block going upwards: the call site's frame that closes an earlier block, a jest verdict
# (`PASS src/a.test.js`, `FAIL ...`), a test's failure header (`● suite › test`)
_CONSOLE_END = re.compile(r"^\s*at .+:\d+:\d+\)?\s*$|^\s*(?:PASS|FAIL)\s+\S|^\s*●\s")
_CONSOLE_REACH = 60
_PANIC = re.compile(r"^\s*thread '[^']+'(?: \(\d+\))? panicked at ")
_TEST_START = re.compile(r"^test \S+(?: - should panic(?: with message)?)? \.\.\. ")
_RESULT = re.compile(r"^(ok|FAILED|ignored)\s*$")
_LIBTEST_REACH = 4000


def _texts(text: str) -> tuple[str, ...]:
    return (text, *unframed(text))


def _in_console_block(before: Sequence[str]) -> bool:
    """Whether the last of `before` (a line and the lines above it) is inside a jest console block."""
    for text in reversed(before[:-1]):
        candidates = _texts(text)
        if any(_CONSOLE_HEADER.match(t) for t in candidates):
            return True
        if any(_CONSOLE_END.match(t) for t in candidates):
            return False
    return False


def _passed_panic(texts: Sequence[str]) -> bool:
    """Whether the panic that opens `texts` (it and the lines after it) belongs to a test whose result is `ok`."""
    for text in texts[1:]:
        candidates = _texts(text)
        for t in candidates:
            found = _RESULT.match(t)
            if found:
                return found.group(1) == "ok"
        if any(_TEST_START.match(t) for t in candidates):
            return False
    return False


def test_output(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches among `causes` that are a test's own output: a jest console block's lines, the panic of a libtest
    test whose result is `ok`."""
    found: list[RuleMatch] = []
    candidates = [m for m in causes if m.category not in MACHINE_CATEGORIES]
    if not candidates:
        return found
    last = max(causes, key=lambda m: m.line.number).line
    for m in candidates:
        texts = _texts(m.line.text)
        if any(_PANIC.match(t) for t in texts) and last.number > m.line.number:
            reach = last.number - m.line.number + 1
            if reach <= _LIBTEST_REACH:
                after = context_before(lines, last, reach)
                start = next((i for i, t in enumerate(after) if t == m.line.text), None)
                if start is not None and _passed_panic(after[start:]):
                    found.append(m)
                    continue
        if _in_console_block(context_before(lines, m.line, _CONSOLE_REACH)):
            found.append(m)
    return found
