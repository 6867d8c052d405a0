"""A network rule's line inside a multi-line exception report, and the report's head above it.

Two clients print one failure over several lines, and the network rules match the line that says why, which is not
the first: grpcio's `_InactiveRpcError` prints `status = StatusCode.UNAVAILABLE` and then `details = "errors resolving
host:443: ..."` (the rule matches the details, which tell a remote target from the job's own server); Java prints the
exception it threw first and its causes below (`Exception in thread "main" java.net.ConnectException`, its frames,
then `Caused by: java.nio.channels.UnresolvedAddressException`: java.net.http.HttpClient's bare ConnectException over
a name that did not resolve). The corpus convention is the report's first line: the status line, the exception the
program died of. So, once a network rule has named the log, the root moves up to that head: to the `status =` line
right above grpc's details, and over a Java trace's frames and `Caused by:` lines to its first exception, when that
is itself one of Java's I/O exceptions (java.net, java.nio.channels, java.io); any other head (a framework's wrapper)
leaves the matched line the root. uv prints its error the same way, the verdict first and its causes indented below
(`error: Failed to download `flash-attn @ https://...``, then `  cause: Request failed after 3 retries`, `  cause: error
sending request for url (...)`, `  cause: dns error`; uv < 0.5 wrote `Caused by:`): the rule matches a cause, and the
root moves up over the causes to uv's `error:` line, as for the other network clients whose own first error is the
root (sweep s13c).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import context_lines
from ci_triage.core.logs.scorer import bare
from ci_triage.core.logs.values import LogLine

# (pytest's `E` then one space, the rest the `\s*`'s: `E\s+` then `\s*` split a long run of spaces every way, quadratic
# in its length, when the line was not grpc's)
_GRPC_DETAILS = re.compile(r'^(?:E\s)?\s*details = "')
_GRPC_STATUS = re.compile(r"^(?:E\s)?\s*status = StatusCode\.\w+\s*$")
_JAVA_CAUSE = re.compile(r"^\s*Caused by: [\w.$]+(?::|\s*$)")
# a Java trace's body between its head and a cause: frames, elided frames, other causes
_JAVA_BODY = re.compile(r"^\s*(?:at [\w.$/<>]+\(.*\)\s*$|\.\.\. \d+ more\s*$|Caused by: [\w.$]+(?::|\s*$))")
_JAVA_IO_HEAD = re.compile(r'^(?:Exception in thread "[^"]*" )?java\.(?:net|nio\.channels|io)\.[\w.$]+(?::|\s*$)')
_REACH = 200  # lines of a Java trace between its head and the cause
_UV_CAUSE = re.compile(r"^\s*(?:cause|Caused by): \S")
_UV_ERROR = re.compile(r"^(?:error|×): \S")
_UV_REACH = 20  # causes in uv's chain


def report_head(lines: Sequence[LogLine], matched: LogLine) -> LogLine | None:
    """The first line of the exception report whose line `matched` is, when the report's head is the same failure."""
    text = bare(matched.text)
    if _GRPC_DETAILS.match(text):
        above = context_lines(lines, matched, 2)
        if len(above) == 2 and _GRPC_STATUS.match(bare(above[0].text)):
            return above[0]
        return None
    if not _JAVA_CAUSE.match(text):
        return _uv_error(lines, matched) if _UV_CAUSE.match(text) else None
    above = context_lines(lines, matched, _REACH)
    j = len(above) - 2
    while j >= 0 and _JAVA_BODY.match(bare(above[j].text)):
        j -= 1
    if j >= 0 and _JAVA_IO_HEAD.match(bare(above[j].text).strip()):
        return above[j]
    return None


def _uv_error(lines: Sequence[LogLine], matched: LogLine) -> LogLine | None:
    above = context_lines(lines, matched, _UV_REACH)
    j = len(above) - 2
    while j >= 0 and _UV_CAUSE.match(bare(above[j].text)):
        j -= 1
    return above[j] if j >= 0 and _UV_ERROR.match(bare(above[j].text)) else None
