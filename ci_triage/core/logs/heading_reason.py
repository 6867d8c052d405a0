"""A compiler's or build tool's heading that says where an error is, and the line that says why.

Two tools print an error as a heading with the reason on the lines under it:

- CMake: `CMake Error at CMakeLists.txt:5 (message):`, then the message indented by two spaces (`  Unsupported
  BACKEND=opengl; choose vulkan or metal`). `cmake-configure-error` (60-build) names the reasons CMake itself words;
  a project's own `message(FATAL_ERROR ...)` or `SEND_ERROR` can say anything, so when the heading is what a rule
  matched (`compile-failed-summary`), the first line under it is the root.
- webpack: `ERROR in ./src/math.js 2:12` (its stats printer's `ERROR in <module> <location>`), then the error's message
  (`Module parse failed: Unexpected token (2:12)`, ts-loader's or fork-ts-checker's `TS2322: Type ...`). The heading is
  where; the message under it says why, as for a failed resolve (`Module not found: Error: Can't resolve 'x'`, which
  python-import-error names).

And javac under `-Werror` fails with `error: warnings found and -Werror specified` after the warnings it made fatal: the
verdict names none of them, so the first warning of that compile (`App.java:5: warning: [rawtypes] found raw type: List`,
maven's `[WARNING] /x/App.java:[5,9] ...`) is the root, as gcc's first `-Werror=` diagnostic is. rpmbuild's `error:
Couldn't download <url>` follows curl's own line for the fetch (`curl: (22) The requested URL returned error: 404`),
which says what the server answered: that line is the root.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import RelevantLines, context_lines
from ci_triage.core.logs.values import LogLine, RuleMatch

HEADING_RULES = frozenset({"compiler-error", "compile-failed-summary", "package-source-download-failed"})
# How far below a heading its reason may be (a blank line or two between them), and above javac's verdict its warnings
_BELOW = 6
_ABOVE = 300
_CMAKE_HEADING = re.compile(r"^CMake Error at \S+:\d+ \(\w+\):\s*$")
_WEBPACK_HEADING = re.compile(r"^ERROR in (?:\[[\w-]+\] )?\S+(?::\d+:\d+| \d+:\d+)\s*$")
_LOADER_WRAPPER = re.compile(r"^Module (?:build failed|Error|Warning) \(from [^)]+\):\s*$")
_RPM_DOWNLOAD = re.compile(r"^error: Couldn't download \S+")
_CURL_ERROR = re.compile(r"^curl: \(\d+\) \S")
_JAVAC_VERDICT = re.compile(r"^(?:(?:error|e): |\[ERROR\] (?:\S+?\.(?:java|kt): )?)warnings found and -Werror specified")
_JAVAC_WARNING = re.compile(r"^(?:\S+?\.java:\d+: warning: |\[WARNING\] \S+?\.java:\[\d+,\d+\] )")
# What ends a compile's output going up: a blank line before javac's own output, a command echoed by a shell or a CI
# system, a build tool's task or phase heading
_OUTSIDE = re.compile(r"^(?:\+ |\$ |> Task |\[INFO\] --- |##\[group\])")


def _lines_after(lines: Sequence[LogLine], heading: LogLine, matches: Sequence[RuleMatch]) -> list[LogLine]:
    """The few log lines after `heading`: read back from the next match below it (or the log's last line), since the
    fast path keeps only matched lines."""
    below = [m.line for m in matches if heading.number < m.line.number <= heading.number + _BELOW]
    end = max(below, key=lambda line: line.number) if below else None
    if end is None:
        later = [m.line for m in matches if m.line.number > heading.number]
        end = min(later, key=lambda line: line.number) if later else _last(lines)
    if end is None or end.number <= heading.number:
        return []
    span = context_lines(lines, end, end.number - heading.number + 1)
    return [line for line in span if heading.number < line.number <= heading.number + _BELOW]


def _last(lines: Sequence[LogLine]) -> LogLine | None:
    if isinstance(lines, RelevantLines):
        return lines.last_line
    return lines[-1] if lines else None


def heading_reason(lines: Sequence[LogLine], winner: LogLine, matches: Sequence[RuleMatch]) -> LogLine | None:
    """The line that says why, when `winner` is a heading (CMake's, webpack's) or javac's -Werror verdict."""
    text = winner.text
    if _CMAKE_HEADING.match(text):
        for line in _lines_after(lines, winner, matches):
            if line.text.strip():
                return line if line.text.startswith("  ") else None
        return None
    if _WEBPACK_HEADING.match(text):
        after = _lines_after(lines, winner, matches)
        if not after or after[0].number != winner.number + 1:
            return None
        # a loader's wrapper line ("Module build failed (from ./node_modules/x-loader/...):") says only which loader
        # failed: its error is on the line after it
        if _LOADER_WRAPPER.match(after[0].text) and len(after) > 1 and after[1].number == winner.number + 2:
            after = after[1:]
        first = after[0].text
        return after[0] if first.strip() and not first[0].isspace() else None
    if _RPM_DOWNLOAD.match(text):
        # curl's own report just above rpmbuild's verdict says what the server answered
        for line in reversed(context_lines(lines, winner, 4)[:-1]):
            if _CURL_ERROR.match(line.text):
                return line
        return None
    if _JAVAC_VERDICT.match(text):
        first = None
        for line in reversed(context_lines(lines, winner, _ABOVE)[:-1]):
            if _OUTSIDE.match(line.text):
                break
            if _JAVAC_WARNING.match(line.text):
                first = line
        return first
    return None
