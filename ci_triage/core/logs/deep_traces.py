"""The header of a JVM stack trace deeper than the scorer's window.

The scorer reads CONTEXT_LINES above each anchor (the step's exit line). The JVM prints up to
MaxJavaStackTraceDepth (1024 by default) frames of an uncaught exception's trace, and a
`java.lang.StackOverflowError` always fills them: `Exception in thread "main" java.lang.StackOverflowError`
then sits a thousand lines above the exit line, and the window holds nothing but `at` frames (sweep s10c,
OpenJDK 17). When the window above an anchor opens inside such a run of frames, the run is followed up to
the line that heads it (bounded by MAX_TRACE_LINES), and that line is scored with the others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.values import LogLine

# the JVM's default MaxJavaStackTraceDepth, plus its `... N more` and `Caused by:` lines
MAX_TRACE_LINES = 1024 + 64
# a JVM frame as printStackTrace writes it (`\tat pkg.Class.method(File.java:12)`, a module prefix, `Native Method`)
_JAVA_FRAME = re.compile(r"^\s*at (?:[\w.$-]+(?:@[\w.-]+)?/)*[\w$.<>]+\([^()]*\)\s*$")


def is_java_frame(text: str) -> bool:
    return bool(_JAVA_FRAME.match(text)) or any(_JAVA_FRAME.match(peeled) for peeled in unframed(text))


def trace_header(context: Callable[[LogLine, int], Sequence[LogLine]], anchor: LogLine, window: int) -> LogLine | None:
    """The line heading the JVM trace that the `window` lines ending with `anchor` open inside, if they do.

    `context(line, count)` gives the `count` lines ending with `line`, in log order."""
    near = context(anchor, window)
    if len(near) < window or not is_java_frame(near[0].text):
        return None
    far = context(anchor, window + MAX_TRACE_LINES)
    above = far[:len(far) - len(near)]
    for line in reversed(above):
        if not is_java_frame(line.text):
            return line if line.text.strip() else None
    return None
