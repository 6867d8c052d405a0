"""A log line without the framing that CI systems, launchers and people put before a tool's own words.

A rule is written from the message a tool prints (`ImportError while importing test module ...`,
`--- FAIL: TestX`), often anchored at its start (`^`). The same message reaches a log behind framing the
tool never wrote: an Azure/Actions `##[error]` annotation, a launcher's rank or process prefix
(`[rank0]: `, `(RayWorker pid=123) `, Open MPI's `[1,0]<stderr>:`, torchrun's `[default0]:`), docker
build's BuildKit step prefix (`#8 12.34 `), a Jenkins parallel branch's `[linux-build] `, a log level
(`[ERROR] `, `ERROR: `, Python logging's `ERROR:root:` and `- name - ERROR - `, vLLM's
`ERROR 05-01 12:34:56 [file.py:12] `, glog's `E0501 12:34:56.789 123 file.cc:12] `, mozharness's
`03:04:05    ERROR - `, and its `INFO - ` lines that carry a command's output), a logger's timestamp
(ISO's; not Go's log package's `2024/05/01 12:34:56 `, mostly the program under test's own log), the journal's short format (`Dec 06 14:10:00 host runsvc.sh[1187]: `, a
self-hosted runner's service log),
Jenkins timestamper's time of day (`10:00:09  `, as a copied console shows it),
docker compose's `web-1  | `, Nix's build-log prefix (`widgets> `), indentation, line numbers pasted with a tab or
`|`, a quote (`> `), or backticks/quotes around the whole line. `unframed(text)` is the text with that
framing peeled off (None when the line has none); `Rule.match` tries a pattern on the line as it is and
then on its unframed text, so one rule holds under every framing. The runner's timestamp, Buildkite's,
Jenkins timestamper's, Bamboo's, TeamCity's, Zuul's (`<time> | <host> | `), Taskcluster's (`[task <ISO time>] `),
`tkn logs`' (`[task : step] `), Cloud Build's (`Step #2 - "id": `) and `kubectl logs --prefix`' (`[pod/p/c] `) prefixes, ANSI codes and `\\r` progress are removed earlier, by the line parser
(logparse.split_line).

Only framing is peeled: warnings and notices stay framed (`[WARNING] `, `##[warning]`), so a warning
that quotes an error does not become one; pytest's `E   ` stays (an exception on an E line is the
test's, ORDER.md); a message inside prose or code (`see "ImportError ..."`, `raise ImportError(...)`) is
not at the line's start after peeling either, so `^`-anchored patterns still refuse it. The peeled text
is a suffix of the line's text, so the matcher's needles and required literals hold for it.
"""

from __future__ import annotations

import re
from functools import lru_cache

# One framing at the line's start, peeled repeatedly (at most MAX_PEELS times). A log level is peeled
# too, but the text before its peel is kept as a candidate of its own: a tool that prints its own level
# (`ERROR: Failure: ImportError (...)`, Maven's `[ERROR] `) is matched by rules that include it.
# (ISO's dashes only: Go's log package's '2024/05/01 12:34:56 ' is not peeled, since in a CI log it is mostly the
# program under test that logs so, and a bare phrase a `^`-anchored infrastructure rule names ('Timed out!', 'Out of
# memory!', 'Address already in use') in its own log line is not the runner's (review r13b))
_DATE_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?"
_FRAME = re.compile(
    r"(?P<level>\[(?:ERROR|FATAL|CRITICAL|error|fatal)\] "
    r"|\[[a-z][\w-]{0,30}:error\] "  # a worker's own error level: Taskcluster's generic-worker '[taskcluster:error] '
    r"|(?:CRITICAL|ERROR|FATAL):[\w.-]*:"  # Python logging's default format
    # vLLM's and glog's: 'ERROR 05-01 12:34:56 [engine.py:12] ', 'E0501 12:34:56.789 123 file.cc:12] '
    r"|(?:ERROR|CRITICAL|FATAL) [0-9]{2}-[0-9]{2} " + _TIME + r" \[[\w.-]+:[0-9]+\] "
    r"|[EF][0-9]{4} " + _TIME + r" +[0-9]+ [\w.-]+:[0-9]+\] "
    r"|(?:ERROR|FATAL|CRITICAL)(?::| \|)? (?=\S)"
    r"|-?(?: ?[\w.-]{1,60} -)? (?:ERROR|CRITICAL|FATAL) - "  # '%(asctime)s - %(name)s - %(levelname)s - '
    # mozharness (Taskcluster's Gecko tasks: '%(asctime)s %(levelname)8s - %(message)s', the time as %H:%M:%S)
    # (its level padded to 8: any other logger's 'HH:MM:SS LEVEL - ' line, the app under test's, stays framed, review r13b)
    r"|" + _TIME + r"(?: {4}(?:ERROR|FATAL)| CRITICAL) - )"
    r"|\s{1,200}"
    r"|##\[error\]"
    r"|\[?" + _DATE_TIME + r"\]?,? "  # a logger's timestamp, bracketed or not
    r"|\[" + _TIME + r"\] "
    # the journal's and syslog's short format (journalctl -o short, RFC 3164): 'Dec 06 14:10:00 ci-runner-4 runsvc.sh[1234]: '
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ 0-3][0-9] " + _TIME + r" [\w.-]{1,64} [\w.@/-]{1,64}(?:\[[0-9]{1,10}\])?: "
    # mozharness's INFO and DEBUG lines carry its commands' own output ('03:04:05     INFO -  TEST-UNEXPECTED-FAIL | ...');
    # its WARNING lines stay framed
    r"|" + _TIME + r"(?: {5}INFO| {4}DEBUG) - "
    # Jenkins timestamper's time of day before a console line, as a copied console shows it ('10:00:09  FAILED ...')
    # (the timestamper writes two spaces; the tool's own indentation after them is the next peel's)
    r"|" + _TIME + r"(?: (?=\S)|  (?=\s*\S))"
    # BuildKit plain progress: its format is '#%d %s %s' (step, seconds since the step started as %.3f/
    # %.2f/%.1f by magnitude, or '%#.4g' cut to five characters before 2020, then the tool's line as
    # printed, whose own indentation the next peel takes); pasted logs show the gap widened ('#98  55.71 ')
    r"|#\d{1,5} {1,4}\d+(?:\.\d+)? "
    r"|\[(?:rank|RANK)?\d+(?:,\d+)?\](?:<std(?:out|err)>)?: ?"  # [rank0]: [0]: [1,0]<stderr>:
    r"|\[default\d+\]: ?"  # torchrun --tee
    r"|\([\w.-]{1,40}(?: rank=\d{1,6})? pid=\d{1,9}(?:, ip=[\d.]{1,40})?\) "  # Ray / vLLM worker processes
    r"|[\w.-]{1,40}[-_][0-9]{1,4} {1,8}\| "  # docker compose's service prefix ('web-1  | ')
    # a Jenkins parallel branch, a job or container tag (not a level: warnings stay framed)
    # (the tool's own indentation after it is the next peel's: cmake's '  Cannot find source file:')
    r"|\[(?!(?:WARN(?:ING)?|INFO|DEBUG|NOTICE|TRACE|warn(?:ing)?|info|debug)\])[A-Za-z][\w.-]{0,39}\] (?=\s*\S)"
    r"|\d{1,6}(?:\t| ?\| )(?=\S)"  # pasted line numbers
    # a quote ('> '), of an indented line too ('>   ✕ test'); pytest's '>' before the failing source line is
    # peeled the same way, and leaves code, which a message's pattern refuses as it does any code
    r"|> (?=\s*\S)"
    # Nix's build log line under `nix build -L` / `nix flake check -L` (src/libmain/progress-bar.cc: the derivation's name
    # without its version, then '> ', or ' (post)> ' for a post-build hook): 'python3.11-widgets> FAILED tests/...'
    r"|[A-Za-z0-9_][\w.+-]{0,99}(?: \(post\))?> (?=\s*\S)"
)
# The characters a framing can start with (and compose's ' | '): a line with neither (most lines) costs
# two look-ups.
_STARTS = frozenset(" \t\v\f#[(ECF>`\"'0123456789-")
_WRAPS = ("`", '"', "'")
_MONTHS = frozenset(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))
MAX_PEELS = 5
_NONE: tuple[str, ...] = ()

# The last text asked about and its answer (every rule tried on a line asks), replaced as one tuple.
_last: tuple[str | None, tuple[str, ...]] = (None, _NONE)


def _unwrap(text: str) -> str:
    stripped = text.rstrip()
    if len(stripped) > 2 and stripped[0] in _WRAPS and stripped[-1] == stripped[0]:
        return stripped[1:-1]
    return text


def unframed(text: str) -> tuple[str, ...]:
    """The texts of `text` without the framing before (and the quotes around) a tool's message: none
    when it has no framing; the text before each log level's peel, then the fully peeled one."""
    global _last
    last = _last
    if text is last[0]:
        return last[1]
    answer = _NONE
    if (text[:1] in _STARTS or " | " in text[:48] or (text[3:4] == " " and text[:3] in _MONTHS)
            or "> " in text[:108]):
        peeled, before_levels = text, []
        for _ in range(MAX_PEELS):
            found = _FRAME.match(peeled)
            if not found:
                break
            if found.group("level") is not None:
                before_levels.append(peeled)
            peeled = peeled[found.end():]
        candidates = []
        for candidate in (*before_levels, peeled):
            candidate = _unwrap(candidate)
            if candidate and candidate is not text and candidate not in candidates:
                candidates.append(candidate)
        answer = tuple(candidates)
    _last = (text, answer)
    return answer


# What makes a match depend on where the text starts or ends: anchors, word boundaries, lookarounds.
_CONTEXT = re.compile(r"\^|\\[AZbB]|\$|\(\?<?[=!]")


@lru_cache(maxsize=None)
def context_sensitive(source: str) -> bool:
    """Whether a pattern can match a line's unframed text (a suffix of it, maybe without a closing quote)
    and not the line itself: only through an anchor, a word boundary or a lookaround. A pattern without
    any finds in the line every match it finds in a part of it, so the unframed texts need not be tried."""
    return _CONTEXT.search(source.replace("[^", "[")) is not None
