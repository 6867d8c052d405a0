"""In a docker build's plain progress, what another build step printed is not the failed step's cause.

BuildKit's plain progress (moby/buildkit util/progress/progressui/printer.go) prints every line of a build step (a
vertex: `#7 [app 3/6] RUN curl ...`) behind its number and the time since the step started (`#7 1.300 curl: (6) Could
not resolve host: ...`), closes a step with `#7 DONE 2.6s`, `#7 CACHED` or `#7 CANCELED`, and a failed one with `#10
ERROR: process "/bin/sh -c pytest" did not complete successfully: exit code: 1` (the builder stops there, cancelling
the steps running beside it). So when a step failed and printed a failure of its own that a rule explains, what the
other steps printed came from a step that went on (an optional download's DNS error behind `|| echo ...`, a linter's
warning), or from one the failure cancelled (a parallel stage's `npm ci`): it is not the cause, like a passed GitHub
Actions step's output (passed_steps.py), whatever its category, but the machine's own reports (the host out of memory
or disk, a runner lost or timed out), which any step may print. When the failed step's only explained failure is one a
network fault leads to (a resolver's, FAULT_CONSEQUENCES), the other step's fault stays a cause, as in passed_steps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.passed_steps import FAULT_CONSEQUENCES
from ci_triage.core.logs.passed_tests import MACHINE_CATEGORIES
from ci_triage.core.logs.values import RuleMatch

_VERTEX = re.compile(r"#(\d+) ")
# printer.go: fmt.Fprintf(p.w, "#%d ERROR: %s\n", v.index, v.Error)
_FAILED_VERTEX = re.compile(r"#(\d+) ERROR: ")


def _vertex(match: RuleMatch) -> str | None:
    found = _VERTEX.match(match.line.text)
    return found.group(1) if found else None


def other_build_steps(matches: Sequence[RuleMatch], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches among `causes` printed by another BuildKit build step than the first one that failed, before it
    failed, when the failed step printed an explained failure of its own."""
    if not any(_VERTEX.match(m.line.text) for m in causes):
        return []
    failed = None
    for m in sorted(matches, key=lambda m: m.line.number):
        found = _FAILED_VERTEX.match(m.line.text)
        if found:
            failed = (found.group(1), m.line.number)
            break
    if failed is None:
        return []
    vertex, end = failed
    if not any(_vertex(m) == vertex and m.line.number < end and m.category not in FAULT_CONSEQUENCES for m in causes):
        return []
    return [m for m in causes if m.line.number < end and m.category not in MACHINE_CATEGORIES
            and (found := _vertex(m)) is not None and found != vertex]
