"""Hyperscan prefilters: a rule pattern translated to a bytes regex that matches (at least) every raw
log line the pattern can match, for the few patterns whose literal needles are words every log holds.

Why: the matcher's needles are literals, and a literal of a pattern may be text that ordinary CI output
is full of. The ruff/flake8 patterns' message words (`missing` in `error_on_missing_keys`) and pytype's
`.py", line ` (every traceback frame) made ~100,000 of the 200 MB benchmark log's ~130,000 candidate
lines, each costing Python a few microseconds only to be ruled out. Hyperscan can run such a pattern
itself (on bytes, at C speed), so only the lines that can match reach Python. Only those patterns: a
regex costs hyperscan far more than a literal (all ~1,200 built-in patterns as regexes compile in
~1.2 s and scan ~5x slower than the literal needles), and a pattern that no literal leads (`^[A-Z]{1,5}
\\d{2,4} ...`) costs it more than Python spends on its candidates; those keep their needles.

The translation is a superset, never a miss, of what `pattern.search(text)` finds on any segment text
of a line (`logparse.split_line`: ANSI removed, which the scan sees too; timestamp cut off; split at
`\\r`; UTF-8 decoded with errors="replace", or a str log encoded with "surrogatepass"):
- the top-level sequence (groups spliced in) is cut to the part from its first literal or branch on: a
  contiguous part of a match is in the text too, and the text's bytes are in the line's;
- anchors, `\\b` and look-arounds are dropped (each only narrows); a back-reference is `[^\\n]*`;
- an ASCII literal is its byte (a caseless letter: both cases and the UTF-8 forms of the non-ASCII
  letters `re.IGNORECASE` folds to i, k, s: scan.CASE_PARTNERS); a non-ASCII character, U+FFFD or a
  surrogate is its UTF-8 bytes or, caseless or possibly from invalid bytes, 1-4 bytes >= 0x80;
- a class or category keeps its ASCII members (`\\s`: the ones Python's str `\\s` holds, \\x1c-\\x1f
  too) and adds "1-4 bytes >= 0x80" when it can match a non-ASCII character; a negated one, `.`,
  `\\S`, `\\D`, `\\W` is any character; `\\n` is never matched (a line holds none);
- repeats keep their bounds (a large bound widens to unbounded, a large minimum is lowered); the
  trailing part of the sequence that may repeat is cut to its minimum (fewer reports per line).
The tests check every built-in pattern's translation (with Python's `re` on bytes) against its
examples, with a timestamp, ANSI codes and `\\r` around them.
"""

from __future__ import annotations

import re
from itertools import takewhile
from re import _constants as sre
from re import _parser as sre_parse
from typing import Any

from ci_triage.core.logs.scan import CASE_PARTNERS, Needle

# Needle texts (lowered, without surrounding spaces) that ordinary CI output holds on thousands of harmless
# lines: `error_count=0`, `# error path`, `assert torch.allclose(...)`, `error_on_missing_keys`, `RuntimeError`
# (the throughput benchmark's noise has each; tests/core/test_needle_strength.py).
COMMON_WORDS = frozenset({"error", "errors", "assert", "missing", "warning"})
COMMON_TEXT = ('.py", line ', '", line ')  # a traceback frame's
_ANY = rb"(?:[\x00-\x09\x0b-\x7f]|[\x80-\xff]{1,4})"  # any one character but `\n`, as UTF-8 or invalid bytes
_HIGH = rb"[\x80-\xff]{1,4}"  # a non-ASCII character (or what errors="replace" made U+FFFD of)
_SPACE = (9, 11, 12, 13, 28, 29, 30, 31, 32)  # str `\s` in ASCII, but `\n`
_WORD = tuple(range(48, 58)) + tuple(range(65, 91)) + (95,) + tuple(range(97, 123))
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))
_CAP = 16  # repeat bounds above this are widened (hyperscan's bounded repeats grow with them)


def common(needle: Needle) -> bool:
    text, _caseless = needle
    return text in COMMON_TEXT or text.strip(" ").lower() in COMMON_WORDS


def _byte(code: int) -> bytes:
    return b"\\x%02x" % code


def _partners(letter: str) -> list[bytes]:
    return [b"".join(_byte(b) for b in char.encode()) for char in CASE_PARTNERS.get(letter, "")]


def _alternatives(parts: list[bytes]) -> bytes:
    return parts[0] if len(parts) == 1 else b"(?:" + b"|".join(parts) + b")"


def _literal(code: int, caseless: bool) -> bytes:
    char = chr(code)
    if code < 128:
        if caseless and char.isalpha():
            return _alternatives([b"[" + _byte(ord(char.lower())) + _byte(ord(char.upper())) + b"]",
                                  *_partners(char.lower())])
        return _byte(code)
    if caseless:
        letter = next((ascii_ for ascii_, forms in CASE_PARTNERS.items() if char in forms), None)
        return _literal(ord(letter), True) if letter else _HIGH
    if char == "\ufffd" or 0xD800 <= code <= 0xDFFF:
        return _HIGH
    return b"".join(_byte(b) for b in char.encode())


def _class(items: list, caseless: bool) -> bytes:
    members: set[int] = set()
    high = False
    for op, av in items:
        if op is sre.LITERAL or op is sre.RANGE:
            low, top = (av, av) if op is sre.LITERAL else av
            if top > 127 and caseless:
                return _ANY  # a non-ASCII member may fold to an ASCII letter
            high = high or top > 127
            members.update(range(low, min(top, 127) + 1))
        elif op is sre.CATEGORY and av in (sre.CATEGORY_DIGIT, sre.CATEGORY_SPACE, sre.CATEGORY_WORD):
            members.update({sre.CATEGORY_DIGIT: range(48, 58), sre.CATEGORY_SPACE: _SPACE,
                            sre.CATEGORY_WORD: _WORD}[av])
            high = True
        else:  # NEGATE, \S, \D, \W, anything else: any character
            return _ANY
    partners: list[bytes] = []
    if caseless:
        for code in list(members):
            char = chr(code)
            if char.isalpha():
                members.update((ord(char.lower()), ord(char.upper())))
                partners.extend(_partners(char.lower()))
    members.discard(10)
    parts = [b"[" + b"".join(_byte(code) for code in sorted(members)) + b"]"] if members else []
    parts += [_HIGH] if high else []
    parts += sorted(set(partners))
    return _alternatives(parts) if parts else _ANY


def _sequence(items: list, caseless: bool) -> bytes:
    return b"".join(_node(op, av, caseless) for op, av in items)


def _node(op: Any, av: Any, caseless: bool) -> bytes:
    if op is sre.LITERAL:
        return _literal(av, caseless)
    if op is sre.NOT_LITERAL or op is sre.ANY:
        return _ANY
    if op is sre.IN:
        return _class(av, caseless)
    if op is sre.CATEGORY:
        return _class([(op, av)], caseless)
    if op is sre.SUBPATTERN:
        inner = _sequence(av[3], _caseless(caseless, av))
        return b"(?:" + inner + b")" if inner else b""
    if op is getattr(sre, "ATOMIC_GROUP", None):  # matches a subset of the plain group's matches
        inner = _sequence(av, caseless)
        return b"(?:" + inner + b")" if inner else b""
    if op in _REPEATS:
        low, top, body = av
        inner = _sequence(body, caseless)
        if not inner:
            return b""
        low = min(low, _CAP)
        bounds = b"{%d,}" % low if top is sre.MAXREPEAT or top > _CAP else b"{%d,%d}" % (low, top)
        return b"(?:" + inner + b")" + {b"{0,}": b"*", b"{1,}": b"+", b"{0,1}": b"?"}.get(bounds, bounds)
    if op is sre.BRANCH:
        branches = [_sequence(branch, caseless) for branch in av[1]]
        body = b"(?:" + b"|".join(branch for branch in branches if branch) + b")"
        if not all(branches):
            return body + b"?" if any(branches) else b""
        return body
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        return b""
    if op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
        return rb"[^\n]*"
    raise ValueError(f"no prefilter for {op}")


def _caseless(caseless: bool, av: Any) -> bool:
    _group, add_flags, del_flags, _sub = av
    return (caseless or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE


def _spliced(items: Any, caseless: bool) -> list[tuple[Any, Any, bool]]:
    """The sequence with its (unrepeated) groups spliced in, each item with its case-folding."""
    out: list[tuple[Any, Any, bool]] = []
    for op, av in items:
        if op is sre.SUBPATTERN:
            out.extend(_spliced(av[3], _caseless(caseless, av)))
        else:
            out.append((op, av, caseless))
    return out


def _top_level(pattern: re.Pattern[str]) -> list[tuple[Any, Any, bool]] | None:
    """The pattern's top-level sequence with its groups spliced in (`_spliced`), or None when `re`'s internal parser
    cannot say it."""
    try:
        tree = sre_parse.parse(pattern.pattern, pattern.flags)
        return _spliced(tree, bool(tree.state.flags & re.IGNORECASE))
    except Exception:
        return None


def prefilter_expression(pattern: re.Pattern[str]) -> bytes | None:
    """The hyperscan expression that finds every line `pattern` can match (module docstring), or None
    when hyperscan would scan it slowly (below)."""
    items = _top_level(pattern)
    if items is None:  # the parser is internal: no prefilter, the needles stay
        return None
    first = next((index for index, (op, _, _) in enumerate(items) if op is sre.LITERAL or op is sre.BRANCH), None)
    if first is None:
        return None
    items = items[first:]
    while items:  # cut what may repeat at the end to its minimum
        op, av, caseless = items[-1]
        if op in _REPEATS and av[0] == 0 or op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            items.pop()
            continue
        if op in _REPEATS:
            items[-1] = (sre.MAX_REPEAT, (av[0], av[0], av[2]), caseless)
        break
    try:
        parts = [_node(op, av, caseless) for op, av, caseless in items]
    except ValueError:
        return None
    run = led = 0
    for (op, av, _), part in zip(items, parts):
        if op is sre.BRANCH:  # alternatives that each start with literals lead as their shortest run does
            run = min(len(list(takewhile(lambda item: item[0] is sre.LITERAL, branch))) for branch in av[1])
        else:
            run = run + 1 if op is sre.LITERAL else 0
        led = max(led, run)
        # Any character, repeated without bound (`.*`), with no two literals before it: hyperscan keeps
        # an automaton running from every byte that starts the part before it (lint-diagnostic's
        # `^[A-Z]{1,5}\d{2,4} (?:\[\*\] )?.*(?i:missing|...)` scanned 5x slower than its needles).
        if op in _REPEATS and (av[1] is sre.MAXREPEAT or av[1] > _CAP) and _ANY in part and led < 2:
            return None
    return b"".join(parts) or None


_SIMPLE = (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.CATEGORY)
# A gate's run is cut where its repeats' ranges multiplied would pass this: on an ASCII line (the only lines a gate is
# run on, needles.lacks_all) each item takes one byte, so a start costs at most this many tries per item.
_GATE_SPREAD = 64


def _width_bounded(op: Any, av: Any) -> bool:
    """Whether the item matches a bounded run of characters made of single-character items."""
    if op in _SIMPLE:
        return True
    return (op in _REPEATS and av[1] is not sre.MAXREPEAT and av[1] <= _CAP
            and all(inner_op in _SIMPLE for inner_op, _ in av[2]))


def gate_expression(pattern: re.Pattern[str]) -> bytes | None:
    """A bytes regex of bounded width that every line `pattern` can match holds somewhere, when that says
    more than the pattern's required literals do (a class or a bounded repeat among literals), else None.

    It is the longest run of the top-level sequence whose items each match a bounded number of single
    characters: a contiguous part of a match, so (as for the prefilter) it is in the text and the text's
    bytes are in the line's. A one-character repeat without bound and at least once (`\\d+`) ends a run
    and starts the next with one of its characters (the last and the first it matched). Python's `re`
    runs it on a candidate line's bytes before the line is decoded (matcher.ruled_out), only when the line is
    ASCII (needles.lacks_all): there each item takes one byte, while on non-ASCII bytes a class's "1-4 bytes
    >= 0x80" makes n items try up to 4**n ways to split them (exponential in the run's width). On ASCII bytes
    a start tries at most the product of the run's repeats' ranges, kept under _GATE_SPREAD.
    lint-diagnostic's `^[A-Z]{1,5}\\d{2,4} (?:\\[\\*\\] )?.*(?i:missing|...)` has no literal but the
    caseless words, which harmless lines hold (`error_on_missing_keys`); its gate ` [A-Z]{1,5}[0-9]{2,4} `
    rules them out."""
    items = _top_level(pattern)
    if items is None:
        return None
    runs: list[list[tuple[Any, Any, bool]]] = [[]]
    spread = 1  # the product of the current run's repeats' ranges: what a start may backtrack through
    for op, av, caseless in items:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # dropped (each only narrows), the run goes on
        if _width_bounded(op, av):
            width = av[1] - av[0] + 1 if op in _REPEATS else 1
            if spread * width > _GATE_SPREAD:  # a contiguous part of the run is a gate too
                runs.append([])
                spread = 1
            runs[-1].append((op, av, caseless))
            spread *= width
            continue
        spread = 1
        one = (op in _REPEATS and av[0] >= 1 and len(av[2]) == 1 and av[2][0][0] in _SIMPLE)
        if one:
            runs[-1].append((av[2][0][0], av[2][0][1], caseless))
        runs.append([(av[2][0][0], av[2][0][1], caseless)] if one else [])
    best: bytes | None = None
    best_size = 0
    for run in runs:
        while run and run[-1][0] in _REPEATS and run[-1][1][0] == 0:  # an optional tail only costs time
            run.pop()
        size = sum(1 for op, av, _ in run if op not in _REPEATS or av[0] >= 1)
        if size < 3 or all(op is sre.LITERAL for op, _, _ in run) or size <= best_size:
            continue
        try:
            parts = [_node(op, av, caseless) for op, av, caseless in run]
        except ValueError:
            continue
        if all(part == _ANY for part in parts):
            continue
        best, best_size = b"".join(parts), size
    return best


def prefiltered(pattern: re.Pattern[str], cover: frozenset[Needle] | None) -> bytes | None:
    """`pattern`'s prefilter when its needles include common text (and it has one), else None."""
    if not cover or not any(common(needle) for needle in cover):
        return None
    return prefilter_expression(pattern)
