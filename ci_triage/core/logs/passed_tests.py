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

pytest says the same of its own lines (`_pytest/terminal.py`). Its verdict of a test that did not fail (`-v`'s
`tests/test_io.py::test_enospc_message PASSED [ 84%]`, `SKIPPED (CUDA not available...)`, `XFAIL (...)`, a
rerun plugin's `RERUN`; `-r`'s summary `PASSED tests/...::test_x`, `SKIPPED [1] tests/x.py:44: reason`,
`XFAIL tests/...::test_x - reason`) names a test whose name or reason may read like a cause (`ENOSPC`,
`flaky: ECONNRESET`, `Segmentation fault in libfoo`). And `-rP`/`-rA` print a `PASSES` section (its `==== PASSES
====` header, a `____ test_x ____` header per test, its `Captured stdout call` / `Captured log call` blocks) with
what passing tests printed (`OSError: [Errno 28] No space left on device` from a test of that error's message),
up to the next `====` header (`short test summary info`). pytest prints that section when the session is over, so
nothing of the machine's is written into it but the runner's own notices (a runner lost, the job timed out): only
those are kept from it, as they are from the verdict lines.
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
# the runner's own notices, which may be written into any line of a log
RUNNER_CATEGORIES = frozenset({"runner_lost", "job_timeout"})
# pytest's verdicts of tests that did not fail (`-v`'s progress line, `-r`'s summary line)
_PYTEST_NOT_FAILED = re.compile(
    r"^\S+::\S.*? (?:PASSED|SKIPPED|XFAIL|XPASS|RERUN)(?: \(.*\))?\s*(?:\[\s*\d+%\])?\s*$"
    r"|^(?:PASSED|XFAIL|XPASS) \S+::\S|^SKIPPED \[\d+\] \S+:\d+: ")
# (the same read in linear time by _not_failed: the pattern's `\S+::\S.*?` tried each `::` and then the rest of the line,
# its `\s*` twice over trailing spaces, its `\(.*\)` after each verdict word: each quadratic in a long line's length)
_PYTEST_SUMMARY = re.compile(r"^(?:PASSED|XFAIL|XPASS) \S+::\S|^SKIPPED \[\d+\] \S+:\d+: ")
_VERDICT_WORD = re.compile(r" (?:PASSED|SKIPPED|XFAIL|XPASS|RERUN)")
_FIRST_WORD = re.compile(r"\S*")


def _not_failed(text: str) -> bool:
    """Whether `_PYTEST_NOT_FAILED` matches `text`: its first word holds `::` (after the word's first character, before
    its last), and a verdict word after that `::` is followed by the rest the pattern allows, which is read from the
    line's end: spaces, or a `[ 84%]` and spaces, with a parenthesised reason before them or not."""
    if "\n" in text:
        return _PYTEST_NOT_FAILED.match(text) is not None
    if _PYTEST_SUMMARY.match(text):
        return True
    word_end = _FIRST_WORD.match(text).end()
    colons = text.find("::", 1, word_end)
    if colons < 0 or colons + 2 >= word_end:
        return False
    # The places a tail may start: the line's trailing spaces, and the spaces before its closing `[ 84%]`.
    end = len(text.rstrip())
    tails = [(end, len(text))]
    if text.endswith("%]", 0, end):
        digits = end - 2
        while digits > 0 and text[digits - 1].isdecimal():
            digits -= 1
        if digits < end - 2:
            bracket = len(text[:digits].rstrip()) - 1
            if bracket >= 0 and text[bracket] == "[":
                tails.append((len(text[:bracket].rstrip()), bracket))
    # The last `)` a tail may follow (`(?: \(.*\))?`).
    close = max((lo - 1 for lo, _ in tails if lo > 0 and text[lo - 1] == ")"), default=-1)
    for verdict in _VERDICT_WORD.finditer(text, colons + 3):
        after = verdict.end()
        if any(lo <= after <= hi for lo, hi in tails) or (text.startswith(" (", after) and close >= after + 2):
            return True
    return False


# a `====` header of pytest's: the section a line is in is named by the nearest one above it
_PYTEST_SECTION = re.compile(r"^=+ (.+?) =+\s*$")
_PYTEST_REACH = 2000


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


def pytest_passes(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches among `causes` that are pytest's verdict of a test that did not fail, or a line of its PASSES
    section (what passing tests printed), but the runner's own notices."""
    candidates = [m for m in causes if m.category not in RUNNER_CATEGORIES]
    found = [m for m in candidates if any(_not_failed(t) for t in _texts(m.line.text))]
    rest = sorted((m for m in candidates if all(m is not f for f in found)), key=lambda m: m.line.number)
    if not rest:
        return found
    # The section each line is in, read once from up to _PYTEST_REACH lines above the first to the last.
    first, last = rest[0].line, rest[-1].line
    texts = context_before(lines, last, min(last.number - first.number + 1 + _PYTEST_REACH, last.number))
    start = last.number - len(texts) + 1
    in_passes = []
    section = None
    for text in texts:
        in_passes.append(section == "PASSES")
        for t in _texts(text):
            header = _PYTEST_SECTION.match(t)
            if header:
                section = header.group(1)
                break
    for m in rest:
        index = m.line.number - start
        if 0 <= index < len(in_passes) and in_passes[index]:
            found.append(m)
    return found


def test_output(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches among `causes` that are a test's own output: a jest console block's lines, the panic of a libtest
    test whose result is `ok`; pytest's verdicts of tests that did not fail and its PASSES section."""
    found: list[RuleMatch] = pytest_passes(lines, causes)
    candidates = [m for m in causes if m.category not in MACHINE_CATEGORIES and all(m is not f for f in found)]
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
