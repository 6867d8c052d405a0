"""A rank's report that its collective's peer went away, and when the peer's own failure is the cause instead.

When one rank of a multi-process job fails, the others see it as a peer that went away: Gloo's `Connection closed by
peer` / `Connection reset by peer`, NCCL's remote error, torch's TCPStore client getting 0 bytes. Those lines match
`collective-peer-lost` (50-crash), which ranks above everything the change's own code reports (ORDER.md), so a rank's
`ValueError` printed above or below another rank's `Connection closed by peer` was named collective_timeout: the
survivor's line, not the cause. (torchrun, mp.spawn, mpirun and DeepSpeed all print the ranks' output interleaved, and
the failing rank's traceback often comes first.)

A rule sees one line, so the call is made here, over a log's matches: a peer-lost report is not the cause when the log
also holds the failure of the rank that went away, either
- as another rule's match of a failure of the change's own code (a never-retryable category: an import, a test, a
  compile error), which then wins as it would without the report; or
- as an uncaught exception that ends a traceback (`[rank1]: ValueError: ...`, possibly behind a rank's prefix), which
  no rule names: the log is then left to the scorer, with the reports treated as boilerplate (never the cause).
A report with neither beside it (only the survivors' output was kept, or the peer died silently) stays the cause.

A process pool's report that one of its workers went away (`worker-died-unexpectedly`: concurrent.futures'
`BrokenProcessPool`, Ray's raylet, vLLM's executor) is read the same way: the worker's own failure printed beside it (its
pool initializer's `ModuleNotFoundError`, a traceback the worker printed before exiting) is the cause.
"""

from __future__ import annotations

from collections.abc import Sequence

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.logs.scorer import Scored, best_of, is_boilerplate, is_stack_frame
from ci_triage.core.logs.values import RuleMatch

PEER_LOST_RULES = frozenset({"collective-peer-lost", "worker-died-unexpectedly"})
_EXCEPTION = "an exception class with its message"
_TRACEBACK_END = "ends a traceback"


def code_failures(causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The causes other than peer-lost reports that name a failure of the change's own code."""
    return [m for m in causes if m.rule_id not in PEER_LOST_RULES and m.category in NEVER_RETRYABLE]


def own_exception(ranked: Sequence[Scored], causes: Sequence[RuleMatch]) -> Scored | None:
    """The scorer's best line when it is a rank's own uncaught exception (an exception line that ends a traceback),
    not a peer-lost report and not a launcher's summary; None otherwise."""
    reports = {m.line.number for m in causes if m.rule_id in PEER_LOST_RULES}
    best = best_of([s for s in ranked if s.line.number not in reports])
    if best is None or is_boilerplate(best) or is_stack_frame(best):
        return None
    if any(r.startswith(_EXCEPTION) for r in best.reasons) and any(r.startswith(_TRACEBACK_END) for r in best.reasons):
        return best
    return None
