"""A network error or a crash printed in a later failing test's report is not the log's first cause.

A test runner that reports several failures prints them one after another, each under a header of its own: go test's
`--- FAIL: TestX (0.00s)` (its `=== RUN   TestX` under -v), libtest's `---- tests::x stdout ----` block in the failures
section, googletest's `[ RUN      ] Suite.Test`, jest's `● suite › test`, vitest's `FAIL  a.test.ts > suite > test`,
node:test's `✖ test (2.02ms)`, the numbered failures of minitest (`  2) Error:`), RSpec (`  2) Invoice
adds tax`), mocha (`  2) suite`) and jasmine (`2) suite spec`), ctest's per-test verdicts (`2/5 Test #2: x ...***Exception:
SegFault`). Rules see one line at a time and a network or crash rule ranks above every test rule, so the words of a later
test's report (a test quoting `503 Service Unavailable` or `ECONNRESET` in its own assertion, another package's panic, a
later ctest test's segfault) outranked the first test's failure, which is the first cause (the labelling convention: a
pytest FAILED after a port clash is the port clash, and the converse holds too).

A `network` or `crash` match is set aside when the report block it lies in is not the first of its run: the nearest such
header above it (within reach) has a header of the same runner above it (a go test `--- FAIL:` other than its parent's, a
libtest block, a jest, vitest or node:test header, a googletest `[  FAILED  ]` verdict, a numbered failure whose number is above 1 under a `1)` header, an
earlier ctest failure verdict, or entry of its list of failed tests). A match in the first failing test's own report stays: a test that really could not reach
its host (`dial tcp: lookup ... no such host` under the first `--- FAIL:`) is the network's fault. The machine's own
reports (runner lost, timeouts, memory, disk) are never touched, and neither is pytest's report.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence

from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.relevant import context_windows
from ci_triage.core.logs.values import LogLine, RuleMatch

SET_ASIDE = frozenset({"network", "crash"})
_REACH = 400
_NUMBERED_REACH = 80
_SPAN = _REACH  # matches this near share one read of the lines above them (a block is at most twice one match's lines)
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+) \(\d")
_GO_RUN = re.compile(r"^=== RUN\s+(\S+)\s*$")
_LIBTEST_BLOCK = re.compile(r"^---- (\S+) stdout ----$")
_GTEST_RUN = re.compile(r"^\[ RUN      \] \S+")
_GTEST_FAILED = re.compile(r"^\[  FAILED  \] \S+ \(\d+ ms\)$")
_NUMBERED = re.compile(r"^\s*(\d+)\) \S")
# jest's failure header ("  ● suite › test", or a later file's "  ● Test suite failed to run": a report of its own, so a
# network error in it after another file's failing test is not the first cause, review r13b; not its console block's),
# vitest's ("FAIL  a.test.ts > suite > test"), node:test's spec reporter ("✖ test name (2.02ms)")
_JEST = re.compile(r"^\s*● (?!Console$)\S")
_VITEST = re.compile(r"^\s?FAIL  \S+\.[cm]?[jt]sx? > \S")
_NODE_TEST = re.compile(r"^\s*✖ \S.* \(\d+(?:\.\d+)?m?s\)$")
_CTEST_BAD = re.compile(r"^\s*(?:\d+/\d+ )?Test +#\d+: \S+ \.+\*\*\*(?:Failed|Timeout|Exception)\b")
# ctest's list under "The following tests FAILED:" ("  2 - crash_test (SEGFAULT)")
_CTEST_LIST = re.compile(r"^\s+\d+ - \S+ \((?:Failed|Timeout|SEGFAULT|ILLEGAL|BUS_ERROR|NUMERICAL|OTHER_FAULT|Subprocess aborted|Exception|Child aborted)\)$")


def _texts(text: str) -> tuple[str, ...]:
    return (text, *unframed(text))


def _match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    for t in _texts(text):
        found = pattern.match(t)
        if found:
            return found
    return None


def _later_block(above: Sequence[str], found: Callable[[re.Pattern[str], int], re.Match[str] | None] | None = None
                 ) -> bool | tuple[int, int]:
    """Whether the last of `above` (a line and the lines before it) lies in a test report that is not its run's first;
    for a numbered header, the indices in `above` of the `1)` header and of the line's own header, between which a
    cause must lie (see later_test_reports). `found(pattern, i)`: `_match(pattern, above[i])`, which a caller reading
    many windows of one block answers once per line of it."""
    if found is None:
        found = lambda pattern, i: _match(pattern, above[i])  # noqa: E731
    last = len(above) - 1
    for own in (_CTEST_BAD, _CTEST_LIST):
        if found(own, last):
            return any(found(own, j) for j in range(last))
    for i in range(last - 1, -1, -1):
        go = found(_GO_FAIL, i)
        if go:
            name = go.group(1)
            for j in range(i):
                other = found(_GO_FAIL, j)
                if other and not name.startswith(other.group(1) + "/"):
                    return True
            return False
        if found(_GO_RUN, i):
            return any(found(_GO_FAIL, j) for j in range(i))
        if found(_LIBTEST_BLOCK, i):
            return any(found(_LIBTEST_BLOCK, j) for j in range(i))
        for header in (_JEST, _VITEST, _NODE_TEST):
            if found(header, i):
                return any(found(header, j) for j in range(i))
        if found(_GTEST_RUN, i):
            return any(found(_GTEST_FAILED, j) for j in range(i))
        numbered = found(_NUMBERED, i)
        if numbered:
            # (a numbered header is a common shape: it must be near, and a `1)` header of the same indent above it)
            if int(numbered.group(1)) < 2 or len(above) - i > _NUMBERED_REACH:
                return False
            indent = len(numbered.group(0)) - len(numbered.group(0).lstrip())
            firsts = [j for j, m in enumerate(found(_NUMBERED, j) for j in range(i))
                      if m and m.group(1) == "1" and len(m.group(0)) - len(m.group(0).lstrip()) == indent]
            return (firsts[-1], i) if firsts else False
    return False


def later_test_reports(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The network and crash matches among `causes` printed in a failing test's report that another test's precedes.

    A numbered list (`1) Installing packages`, `2) Downloading fixtures`) has the shape of minitest's, RSpec's, mocha's and
    jasmine's failure headers, so a numbered block counts as a later test's report only when a cause lies in the blocks
    above it (the first failure's own line: `Expected: 25`, `Failure/Error:`, ExUnit's `1) test x (Module)` header); else a setup script's `curl: (6)` under
    its step `2)` was set aside and the job read as no cause (review r13b)."""
    candidates = [m for m in causes if m.category in SET_ASIDE]
    # Near matches share the lines above them: each line is matched against a header once per block, not once per
    # match (many crash lines under a long line read it 400 times each otherwise).
    windows = context_windows(lines, [m.line for m in candidates], _REACH, _SPAN)
    memos: dict[int, dict[tuple[re.Pattern[str], int], re.Match[str] | None]] = {}
    cause_lines = sorted(m.line.number for m in causes)
    found = []
    for m, (block, lo, hi) in zip(candidates, windows):
        memo = memos.setdefault(id(block), {})

        def header(pattern: re.Pattern[str], i: int, block: list[LogLine] = block, lo: int = lo,
                   memo: dict[tuple[re.Pattern[str], int], re.Match[str] | None] = memo) -> re.Match[str] | None:
            key = (pattern, lo + i)
            if key not in memo:
                memo[key] = _match(pattern, block[lo + i].text)
            return memo[key]

        later = _later_block([line.text for line in block[lo:hi]], header)
        if isinstance(later, tuple):
            # a cause from the `1)` header (ExUnit's header is itself a failed test's line) down to this match's own
            # header, exclusive (the match lies below its header)
            first_header, own_header = block[lo + later[0]].number, block[lo + later[1]].number
            later = bisect_left(cause_lines, own_header) > bisect_left(cause_lines, first_header)
        if later:
            found.append(m)
    return found
