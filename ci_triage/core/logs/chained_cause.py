"""A network error that ends a chain of Python tracebacks, and the socket error that began the chain.

Python prints a chained exception cause first: urllib3 wraps the socket's own error (`ConnectionRefusedError: [Errno
111] Connection refused`, `TimeoutError: timed out`, `ConnectionResetError: [Errno 104] ...`, `socket.gaierror`, an
`ssl.SSLCertVerificationError`) in `NewConnectionError`, `ReadTimeoutError` or `ProtocolError`, then `MaxRetryError`,
and requests or botocore raise their own exception from that, each printed below a `The above exception was the
direct cause of the following exception:` (or `During handling of the above exception, ...`) separator. The network
rules match the wrapper, whose line names the remote host (a bare `ConnectionRefusedError` does not, and may be the
job's own server); the corpus convention is that the chain's first printed error is the root cause (pip's
`TimeoutError` above the chained traceback it caused). So, when a network rule's line ends such a chain, the walk goes
up over each traceback's body to the separator and takes the error above it, as long as that error is one of the
socket and TLS errors urllib3, http.client and the ssl module raise; any other line stops it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_triage.core.logs.relevant import context_lines
from ci_triage.core.logs.values import LogLine

# How far above the wrapper the chain may start: three chained tracebacks of botocore run to about a hundred lines.
_REACH = 200
_SEPARATOR = re.compile(r"^(?:The above exception was the direct cause of the following exception:"
                        r"|During handling of the above exception, another exception occurred:)\s*$")
# A traceback's body: its header, its frames and source lines (indented), blank lines.
_BODY = re.compile(r"^(?:Traceback \(most recent call last\):\s*$|\s+\S|\s*$)")
# The errors a chain of network wrappers starts with: the socket's and the ssl module's, http.client's, and urllib3's
# own (pip's vendored copy too) when a later wrapper (requests, botocore) is the line the rule matched.
_CAUSE = re.compile(r"^(?:ConnectionRefusedError|ConnectionResetError|ConnectionAbortedError|BrokenPipeError"
                    r"|TimeoutError|OSError|socket\.(?:gaierror|herror|timeout)|ssl\.SSL\w*Error"
                    r"|http\.client\.\w+|(?:pip\._vendor\.)?urllib3\.exceptions\.\w+): \S")


def chained_cause(lines: Sequence[LogLine], wrapper: LogLine) -> LogLine | None:
    """The first error of the traceback chain `wrapper` ends, when an earlier one of the socket family began it."""
    above = context_lines(lines, wrapper, _REACH)
    if not above or above[-1].number != wrapper.number:
        return None
    cause = None
    position = len(above) - 1
    while True:
        j = position - 1
        while j >= 0 and _BODY.match(above[j].text) and not _SEPARATOR.match(above[j].text):
            j -= 1
        if j < 0 or not _SEPARATOR.match(above[j].text):
            break
        j -= 1
        while j >= 0 and not above[j].text.strip():
            j -= 1
        if j < 0 or not _CAUSE.match(above[j].text):
            break
        cause, position = above[j], j
    return cause
