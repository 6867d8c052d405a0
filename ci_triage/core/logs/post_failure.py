"""What a CI system runs after the job's command failed is not why it failed.

GitHub Actions' steps after the failed one are `passed_steps.after_failed_step`'s. The other CI systems mark the
moment the job's own command failed with a line of their own, and go on to run what is configured to run
regardless: a coverage upload (`curl: (6) Could not resolve host: codecov.io`), a `docker logout`, an artifact
upload finding no files. Those lines come after the failure and are not its cause, whatever their category (a
network line ranks above a failing test, ORDER.md). The marks, as the systems print them:

- gitlab-runner's `after_script` section (`section_start:<time>:after_script`, `Running after script...`), which it
  runs after the script whatever its outcome and whose failure does not fail the job, and the
  `upload_artifacts_on_failure` section;
- the Buildkite agent's `🚨 Error: The command exited with status N` (its job runner's report of the command's exit),
  after which only hooks (`pre-exit`) and the artifact upload run;
- a Jenkins declarative pipeline's `[Pipeline] { (Declarative: Post Actions)` stage, its `post { always { ... } }`
  blocks, run after the stages.

So a cause printed after such a mark is set aside when a cause was printed before it (the job's own failure); when
nothing before it explains the job, what comes after stays (it may be all there is).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.relevant import context_before
from ci_triage.core.logs.values import LogLine, RuleMatch

_MARK = re.compile(
    r"^(?:section_start:\d+:(?:after_script|upload_artifacts_on_failure)\b|Running after script\.\.\.\s*$"  # GitLab
    r"|(?:🚨 )?Error: The command exited with status -?\d+\s*$"  # Buildkite
    r"|\[Pipeline\] \{ \(Declarative: Post Actions\)\s*$)")  # Jenkins
_REACH = 10000


def after_failure_mark(lines: Sequence[LogLine], causes: Sequence[RuleMatch]) -> list[RuleMatch]:
    """The matches among `causes` printed after a CI system's mark that the job's command had failed, when a cause
    was printed before that mark."""
    if len(causes) < 2:
        return []
    first = min(causes, key=lambda m: m.line.number).line
    last = max(causes, key=lambda m: m.line.number).line
    reach = last.number - first.number + 1
    if reach > _REACH:
        return []
    texts = context_before(lines, last, reach)
    mark = None
    for offset, text in enumerate(texts[1:], start=1):
        if any(_MARK.match(t) for t in (text, *unframed(text))):
            mark = first.number + offset
            break
    if mark is None:
        return []
    return [m for m in causes if m.line.number > mark]
