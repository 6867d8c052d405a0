"""A client's notice that it is retrying a request, and when such a notice stops being the cause.

pip prints `WARNING: Retrying (Retry(total=2, ...)) after connection broken by ...` each time a request
fails and is retried, down to `total=0` when the retries run out. The network rules
match those lines, and since network faults rank above what the change's own code reports (ORDER.md),
such a notice outranks a failing test printed after it. That is right when the retries ran out, and
wrong when a retry worked and the job went on to fail on its own: a PR's failing test called the
network's fault, and rerun.

A rule sees one line, so the call is made here, over all of a log's matches: when no notice says its
retries ran out (pip's `total=0`) and a failure of the change's own code (a category that is never
retryable) is reported after a notice, the notices before that failure are not causes. A run whose
retries ran out keeps its notices, and its client's final error, as the cause.

A client may also say in so many words that it went on past its faults: pip's `Successfully installed ...`
(pip/_internal/commands/install.py, `"Successfully installed %s"`) after its retry notices for a dead
`--extra-index-url`, apt's `W: Some index files failed to download. They have been ignored, or old ones used
instead.` (apt-private/private-update.cc) after its `Err:`/`Could not resolve` lines for one unreachable source,
uv's `Installed N packages in ...`, npm's `added N packages in ...`. In a log whose steps are not known (GitLab,
Jenkins, Buildkite), a network fault followed by such a line, and then by a failure of another kind (a failing test,
a compiler's error, or another network fault later on), is not that failure's cause (`went_on_faults`). Beside a
failure the fault leads to (a resolver's, an import of the module the fault names) it stays one.

Only clients whose last notice says none are left can be read so: cargo's last notice says `(1 tries
remaining)` and its final error is worded as a dependency (`failed to get x as a dependency`), so its
notices stay causes wherever they are.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ci_triage.core.categories import NEVER_RETRYABLE
from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.relevant import context_before
from ci_triage.core.logs.values import LogLine, RuleMatch

# (the notice's wording, with the retries it still has as `left`)
_NOTICES = (
    re.compile(r"\bRetrying \(Retry\(total=(?P<left>\d+)\b"),  # pip (urllib3's Retry)
)


def retries_left(text: str) -> int | None:
    """How many retries a client's retry notice says it has left, or None when the line is no such notice."""
    for notice in _NOTICES:
        found = notice.search(text[:4096])
        if found:
            return int(found["left"])
    return None


# the weak rule of clients' notices that they retry (pnpm, yarn classic); the retry may have worked (ORDER.md)
RETRY_NOTICE_RULES = frozenset({"network-retry-notice"})


def _went_on(notice: RuleMatch, later: Sequence[RuleMatch]) -> bool:
    """Whether a later step of the job log failed after the step that printed `notice` (steps known)."""
    return notice.line.step is not None and any(
        m.line.step is not None and m.line.step != notice.line.step and m.line.number > notice.line.number
        for m in later)


# a client's own word that it finished after the faults it printed (see the module's docstring)
_WENT_ON = re.compile(
    r"^(?:Successfully installed \S"  # pip
    r"|W: Some index files failed to download\. They have been ignored, or old ones used instead\."  # apt
    r"|Installed \d+ packages? in \d"  # uv
    r"|added \d+ packages?(?:, (?:removed|changed) \d+ packages?)*(?:, and audited \d+ packages?)? in \d)")  # npm
_WENT_ON_REACH = 5000
# what a fault leads to when the client went on without what it could not fetch (passed_steps.FAULT_CONSEQUENCES)
_CONSEQUENCES = frozenset({"dependency"})


def went_on_faults(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The network faults among `causes` that a later line of their client's says it finished past (pip's
    `Successfully installed`, apt's `Some index files failed to download. They have been ignored`), when a later
    cause (after that line) is a failure the fault does not lead to."""
    faults = [m for m in causes if m.category == "network" and m.line.step is None]
    if not faults:
        return []
    first = min(m.line.number for m in faults)
    last = max(causes, key=lambda m: m.line.number).line
    reach = last.number - first + 1
    if last.number <= first or reach > _WENT_ON_REACH:
        return []
    # the lines from the first fault to the last cause are read once; went_on[i]: a went-on line among the first i
    texts = context_before(lines, last, reach)
    went_on = [0]
    for text in texts:
        went_on.append(went_on[-1] + any(_WENT_ON.match(u) for u in (text, *unframed(text))))
    start = last.number - len(texts) + 1  # the line number of texts[0]
    ordered = sorted(causes, key=lambda m: m.line.number)
    found: list[RuleMatch] = []
    # The causes a fault's client went on past are those after the first went-on line below it: `went_on` only grows, so
    # they are a suffix of `ordered`, found by bisection, and whether it holds a failure the fault does not lead to is
    # read from what is known of each suffix (each fault read every cause after it otherwise).
    numbers = [m.line.number for m in ordered]
    other_from = [len(ordered)] * (len(ordered) + 1)  # the first failure at or after each place neither a consequence nor an import
    for i in range(len(ordered) - 1, -1, -1):
        m = ordered[i]
        plain = m.category not in _CONSEQUENCES and m.category != "import_error"
        other_from[i] = i if plain else other_from[i + 1]
    imports = [i for i, m in enumerate(ordered) if m.category == "import_error"]
    for fault in faults:
        k = bisect_right(went_on, went_on[max(fault.line.number - start + 1, 0)])  # the first text past a went-on line
        if k >= len(went_on) - 1:
            continue
        at = bisect_left(numbers, start + k)
        if other_from[at] < len(ordered) or any(not _names_module(fault, ordered[i])
                                                for i in imports[bisect_left(imports, at):]):
            found.append(fault)
    return found


def _names_module(fault: RuleMatch, failure: RuleMatch) -> bool:
    """Whether `fault`'s line names the top package of the module `failure` could not import."""
    module = failure.captures.get("module", "")
    top = module.split(".")[0].lower().replace("_", "-")
    return bool(top) and top in fault.line.text.lower().replace("_", "-")


def passed_step_notices(causes: Sequence[RuleMatch], step_failures: Sequence[RuleMatch]) -> list[RuleMatch]:
    """Retry notices (pip's, and the weak clients' notices) printed in a step that ended before the step that
    failed (a boilerplate exit line in a later step of the job log): that step succeeded, so its retries
    worked, whatever else explains the failure."""
    return [m for m in causes
            if (m.rule_id in RETRY_NOTICE_RULES or retries_left(m.line.text) is not None) and _went_on(m, step_failures)]


def outlived_notices(causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The retry notices among `causes` that a later failure of the change's own code shows a retry worked, or
    that the job went past: a notice in one step of a job log (GitHub Actions' `##[group]Run ...` sections) with
    the change's code failing in a later step. A failed step ends the job, so the step that printed the notice
    succeeded whatever its notices said (pip gives up on a dead `--extra-index-url` with `total=0` and installs
    from the main index), and the later failure is the cause."""
    notices = [(match, retries_left(match.line.text)) for match in causes]
    notices = [(match, left) for match, left in notices if left is not None]
    if not notices:
        return []
    code_failures = [m for m in causes if m.category in NEVER_RETRYABLE]
    if not code_failures:
        return []
    if not any(left == 0 for _, left in notices):
        last_code_failure = max(m.line.number for m in code_failures)
        return [match for match, _ in notices if match.line.number < last_code_failure]
    return [match for match, _ in notices if _went_on(match, code_failures)]
