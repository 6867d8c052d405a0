"""pre-commit's report of its hooks: the first failed hook's own output is the root, whatever printed it.

pre-commit prints a verdict line for each hook (`name.....Failed`: the hook's name, dots to the terminal's width, and
`Passed`, `Failed` or `Skipped` after an optional `(no files to check)`; pre_commit/commands/run.py), then for a failed
hook its id (`- hook id: x`), how it failed (`- exit code: N`, `- files were modified by this hook`, `- duration: 0.1s`
under --verbose), a blank line and the hook's own output. The verdict and the id are `lint-failure`'s (70-tests), the
generic verdict, which ranks below `lint-diagnostic`'s findings; so when the first hook that failed printed output no
rule knows (a pygrep hook's `path:line:matched text`, a `language: fail` hook's message and file names, a project's own
script), a later hook's finding that a rule knows (black's `reformatted x.py`) was named the root, though the first
failed hook is the first cause. When the winner is a lint finding printed under a later hook: the earliest match in
the first failed hook's own output is the root, or, with none, that output's first line (the verdict line when the hook
printed nothing).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import context_lines
from ci_triage.core.logs.values import LogLine, RuleMatch

# (`.*` then exactly three dots: a lazy `.*?` before `\.{3,}` tried every split of a long run of dots, quadratic in its
# length; any dots before the last three are the `.*`'s, which matches the same lines)
_VERDICT = re.compile(r"^\S.*\.{3}(?:\(no files to check\))?(?P<verdict>Passed|Failed|Skipped)$")
_HOOK_ID = re.compile(r"^- hook id: \S+$")
# the lines between a failed hook's id and its own output
_HOOK_FACTS = re.compile(r"^- (?:exit code: -?\d+|files were modified by this hook|duration: [\d.]+s)$")
# How far below the first failed hook's verdict a later hook's finding may be for the call to be made.
_REACH = 5000


def first_failed_hook(lines: Sequence[LogLine], causes: Sequence[RuleMatch], winner: RuleMatch) -> LogLine | None:
    """The first failed pre-commit hook's root line, when `winner` is a lint finding printed under a later hook."""
    if winner.category != "lint_failure":
        return None
    # The verdict and id of a failed hook are matches, so they are among `lines` even when it holds only those.
    failed = next((line for line, after in zip(lines, lines[1:])
                   if _failed(line.text) and _HOOK_ID.match(after.text.strip())), None)
    if failed is None or not 0 < winner.line.number - failed.number <= _REACH:
        return None
    block = context_lines(lines, winner.line, winner.line.number - failed.number + 1)  # the verdict .. the winner
    if not block or block[0].number != failed.number:
        return None
    start = 2
    while start < len(block) and (not block[start].text.strip() or _HOOK_FACTS.match(block[start].text.strip())):
        start += 1
    end = next((i for i in range(start, len(block)) if _VERDICT.match(block[i].text.strip())), None)
    if end is None:
        return None  # no later hook's verdict before the winner: the winner is the first failed hook's own
    first, last = block[start].number if start < end else None, block[end - 1].number
    own = [m for m in causes if first is not None and first <= m.line.number <= last]
    if own:
        return min(own, key=lambda m: (m.priority, m.line.number)).line
    output = [line for line in block[start:end] if line.text.strip()]
    return output[0] if output else failed


def _failed(text: str) -> bool:
    verdict = _VERDICT.match(text.strip())
    return verdict is not None and verdict["verdict"] == "Failed"
