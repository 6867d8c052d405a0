"""vitest's error thrown outside any test's own result: the error line under its banner is the root cause.

vitest fails a run whose tests all passed when something threw outside them (a timer's callback after its test returned,
a promise rejected with no handler). Its reporter (packages/vitest/src/node/reporters/base.ts, printError.ts) prints the
summary `Vitest caught N unhandled error(s) during the test run.` under an `Unhandled Errors` banner, then each error under
a banner of its kind (`⎯⎯⎯⎯ Uncaught Exception ⎯⎯⎯⎯`, `Unhandled Rejection`, `Unhandled Error`): the error's own line
(`Error: flush queue closed before drain`), its code frame and stack, and the note naming the test file it came from
(`This error originated in "src/a.test.ts" test file. It doesn't mean the error was thrown inside the file itself, but
while it was running.`). `vitest-unhandled-error` (70-tests) matches that note; the line after the banner above it says
what went wrong, so it is the root cause. Without a banner within reach the note stays the root.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import context_lines
from ci_triage.core.logs.values import LogLine

UNHANDLED_RULES = frozenset({"vitest-unhandled-error"})
# An error's code frame and stack are a few dozen lines; vitest trims the stack to the user's frames.
_REACH = 80
_BANNER = re.compile(r"^\s*⎯+ (?:Unhandled Rejection|Uncaught Exception|Unhandled Error) ⎯+\s*$")


def unhandled_error_line(lines: Sequence[LogLine], note: LogLine) -> LogLine | None:
    """The error line under the banner nearest above `note` (vitest's `This error originated in ...` note)."""
    above = context_lines(lines, note, _REACH)
    for i in range(len(above) - 2, -1, -1):
        if _BANNER.match(above[i].text):
            return next((line for line in above[i + 1:-1] if line.text.strip()), None)
    return None
