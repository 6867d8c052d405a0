"""pip's installed-set notice before a failure that has nothing to do with the conflict it names.

After an install, pip checks the packages already in the environment against what it installed, and when one of them
no longer fits it prints `ERROR: pip's dependency resolver does not currently take into account all the packages that
are installed. This behaviour is the source of the following dependency conflicts.` and one line per conflict
(`requests 2.34.2 requires idna<4,>=2.5, but you have idna 2.0 which is incompatible.`), then finishes the install and
exits 0. Those lines are `dependency-conflict`'s (35-resolver), which ranks above every failure the change's own code
reports, so a job whose install warned and whose tests then failed on their own read as a dependency conflict.

A rule sees one line, so the call is made here, over a log's matches: the notice (`pip-installed-conflict-notice`) and
the conflict lines under it are not causes when a failure of the change's own code (a test, an import, a compile error, a linter) that a rule names is
printed after them, and nothing between the end of pip's output and that failure names the package pip left at the
wrong version (`idna` above: a traceback through `urllib3/__init__.py` after `you have urllib3 1.20` does name it, and
the conflict stays the cause). pip's own failures, a resolver's verdict, and every other category keep the notice as
it was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.logs.matcher import context_before
from ci_triage.core.logs.scorer import bare
from ci_triage.core.logs.values import LogLine, RuleMatch

_NOTICE = re.compile(r"pip's dependency resolver does not currently take into account all the packages that are installed")
# one conflict line of the notice (pip's check): `<pkg> <ver> requires <req>, but you have <name> <ver> ...`, and the
# legacy wording `... has requirement <req>, but you'll have <name> <ver> which is incompatible.`
_CONFLICT = re.compile(r"^\S+ \S+ (?:requires|has requirement) .*, but you(?: have|'ll have) (?P<name>[A-Za-z0-9][\w.-]*) ")
# pip's closing line after the notice names every package it installed, the conflict's too: not the failure's
_PIP_CLOSE = re.compile(r"^Successfully installed ")
_REACH = 8  # lines between the notice and its last conflict
_SPAN = 400  # lines read between the conflicts and the failure


def _conflict_name(match: RuleMatch) -> str | None:
    found = _CONFLICT.match(bare(match.line.text).strip())
    return found["name"].lower() if found else None


def unrelated_notices(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The dependency-conflict matches of pip's installed-set notice that a later, unrelated code failure outlived."""
    conflicts = [m for m in causes if m.category == "dependency" and _conflict_name(m)
                 and any(_NOTICE.search(text) for text in context_before(lines, m.line, _REACH + 1))]
    if not conflicts:
        return []
    end = max((m.line for m in conflicts), key=lambda line: line.number)
    later = [m for m in causes if m.line.number > end.number and m.category in NEVER_RETRYABLE
             and m.category != "dependency"]
    if not later:
        return []
    failure = min(later, key=lambda m: m.line.number).line
    names = {variant for m in conflicts for name in [_conflict_name(m)]
             for variant in (name, name.replace("-", "_"), name.replace("_", "-"))}
    words = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")(?![\w-])", re.IGNORECASE)
    between = context_before(lines, failure, min(_SPAN, failure.number - end.number))
    if any(words.search(text) and not _PIP_CLOSE.match(bare(text).strip()) for text in between):
        return []
    first = min(m.line.number for m in conflicts)
    notices = [m for m in causes if m.category == "dependency" and _NOTICE.search(m.line.text)
               and 0 < first - m.line.number <= _REACH]
    return conflicts + notices
