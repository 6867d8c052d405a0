"""Small text helpers every renderer and the comment state share: clipping, and making log text safe
to show.

A job log is written by whoever wrote the PR. Shown raw, its escape sequences act on the reader's
terminal (OSC 52 writes the clipboard, OSC 0 sets the title, OSC 8 makes a link whose target is not its
text, CSI moves the cursor to overwrite what was printed) and bidi overrides make text read differently
from what it is (CVE-2021-42574, "Trojan Source"). `sanitize` removes whole escape sequences and makes
every other control character visible; `shown` also redacts credentials and clips, for one line of log
text on its way out. Sequences: ECMA-48 (5th ed.) sections 5.3-5.6 (CSI, OSC, DCS, SOS, PM, APC and
their C1 forms); bidi controls: Unicode UAX #9, section 2.
"""

from __future__ import annotations

import re


def clip(text: str, limit: int) -> str:
    """At most `limit` characters; a cut is shown with an ellipsis, never silent."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_words(text: str, limit: int) -> str:
    """Like `clip`, but the cut falls between words: never inside a number (port 35191 must not read
    as 3519…) or a word, unless one word fills more than half the room."""
    if len(text) <= limit:
        return text
    keep = limit - 1
    if keep > 0 and text[keep - 1].isalnum() and text[keep].isalnum():
        start = keep
        while start > 0 and text[start - 1].isalnum():
            start -= 1
        if start >= limit // 2:
            keep = start
    return text[:keep].rstrip() + "…"


# Complete sequences only, and with bounded bodies: an unterminated OSC is not allowed to swallow the
# rest of the line (its ESC is made visible instead), and the scan stays linear.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]{0,64}[ -/]{0,8}[@-~]"  # CSI: colours, cursor moves, erase
    r"|(?:\x1b[\]P_^X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)"  # OSC DCS SOS PM APC
    # other escape sequences (charset selection, keypad modes, RIS); not the introducers above, so an
    # unterminated OSC keeps its visible ESC
    r"|\x1b[ -/]{0,4}[0-OQ-WYZ\\`a-~]"
)
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _visible_table(keep_newlines: bool) -> dict[int, str]:
    # C0 as the Unicode control pictures (U+2400 + code), DEL as U+2421, C1 and bidi controls named.
    table = {code: chr(0x2400 + code) for code in range(0x20) if code != 0x09}
    table[0x7F] = "\u2421"
    table.update({code: f"<U+{code:04X}>" for code in range(0x80, 0xA0)})
    table.update({ord(char): f"<U+{ord(char):04X}>" for char in _BIDI})
    if keep_newlines:
        del table[0x0A]
    return table


_VISIBLE_LINE = _visible_table(keep_newlines=False)
_VISIBLE_BLOCK = _visible_table(keep_newlines=True)


def sanitize(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with escape sequences removed and other control and bidi characters made visible.

    Tabs stay; newlines stay only with `keep_newlines` (a document, not one line); `\\r\\n` is a newline.
    """
    if keep_newlines:
        text = text.replace("\r\n", "\n")
    return _SEQUENCE.sub("", text).translate(_VISIBLE_BLOCK if keep_newlines else _VISIBLE_LINE)


# How far past the display limit a line is still read, so a credential straddling the cut is recognised
# whole before the cut (a private-key block is the longest pattern, 16 KiB).
_REDACT_MARGIN = 20_000


def shown(text: str, limit: int | None = None, *, keep_newlines: bool = False, words: bool = False) -> str:
    """Log (or other untrusted) text as it may leave the process: sanitised, redacted, then clipped.

    Clipping is for display only; matching and the rerun decision use the full original line.
    `words`: cut between words (`clip_words`), for text a reader reads rather than a field.
    """
    from ci_triage.core.redact import redact  # its patterns compile on first use, not at `--help`

    if limit is not None and len(text) > limit + _REDACT_MARGIN:
        text = text[: limit + _REDACT_MARGIN]
    text = redact(sanitize(text, keep_newlines=keep_newlines))
    if limit is None:
        return text
    return clip_words(text, limit) if words else clip(text, limit)


def shown_document(text: str) -> str:
    """A whole rendered document (Markdown, an output value) on its way out: newlines kept."""
    from ci_triage.core.redact import redact

    return redact(sanitize(text, keep_newlines=True))


def shown_tree(value: object) -> object:
    """Every string inside nested dicts and lists as `shown_document` makes it (dict keys are ours)."""
    if isinstance(value, str):
        return shown_document(value)
    if isinstance(value, dict):
        return {key: shown_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [shown_tree(item) for item in value]
    return value
