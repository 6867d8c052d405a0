"""Property: a pattern's gate (prefilter.gate_expression) never rules out a line the pattern can match.

Lines are built from the rules' own examples with mutations (inserted ASCII/non-ASCII/case-partner
characters, invalid UTF-8 bytes, case swaps, deletions, framing, a runner timestamp, `\\r` progress);
the truth is what the matcher would find: the pattern on any `\\r` segment of the line (logparse.split_line,
errors="replace") or on one of its unframed texts (framing.unframed). The matcher's own answer with and
without gates is compared too.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_triage.core.logs.framing import unframed
from ci_triage.core.logs.logparse import _STAMP_PREFIX, split_line
from ci_triage.core.logs.prefilter import gate_expression
from ci_triage.core.logs.rules import builtin_rules

STAMP = b"2024-01-01T00:00:00.0000000Z "
INSERTS = list("aZk09 _-:./()[]\"'\t") + ["\u0130", "\u0131", "\u212a", "\u017f", "\u00e9", "\u00c9", "\ufffd",
                                            "\uff10", "\u0663", "\u00a0", "\x1c", "\u2019", "\U0001f600"]
INVALID = [b"\x80", b"\xff", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3", b"\xed\xa0\x80"]
FRAMES = ["", "##[error]", "[rank0]: ", "  ", "ERROR: ", "#8 12.34 ", "web-1  | ", "> ", "12\t"]


@lru_cache(maxsize=1)
def gated() -> list[tuple[str, re.Pattern[str], tuple[str, ...], re.Pattern[bytes]]]:
    out = []
    for rule in builtin_rules().rules:
        for pattern in rule.patterns:
            expression = gate_expression(pattern)
            if expression is not None and rule.examples:
                out.append((rule.id, pattern, rule.examples, re.compile(expression)))
    return out


def mutate(text: str, edits: list[tuple[int, int, int]]) -> bytes:
    """Apply (kind, position, choice) edits to the example; invalid bytes go in after encoding."""
    chars = list(text)
    raw_inserts: list[tuple[int, bytes]] = []
    for kind, position, choice in edits:
        at = position % (len(chars) + 1)
        if kind == 0:
            chars.insert(at, INSERTS[choice % len(INSERTS)])
        elif kind == 1 and chars:
            del chars[min(at, len(chars) - 1)]
        elif kind == 2 and chars:
            index = min(at, len(chars) - 1)
            chars[index] = chars[index].swapcase()
        elif kind == 3:
            raw_inserts.append((at, INVALID[choice % len(INVALID)]))
        elif kind == 4 and chars:  # replace a character by its case partner or a look-alike
            index = min(at, len(chars) - 1)
            swap = {"i": "\u0130", "I": "\u0131", "k": "\u212a", "K": "\u212a", "s": "\u017f", "S": "\u017f",
                    "0": "\uff10", "1": "\u0661", " ": "\u00a0"}
            chars[index] = swap.get(chars[index], chars[index])
    pieces = [char.encode("utf-8", "surrogatepass") for char in chars]
    for at, raw in sorted(raw_inserts, reverse=True):
        pieces.insert(min(at, len(pieces)), raw)
    return b"".join(pieces)


def matches_line(pattern: re.Pattern[str], line: bytes) -> bool:
    _stamp, segments = split_line(line)
    return any(pattern.search(text) or any(pattern.search(bare) for bare in unframed(text)) for text in segments)


def gate_holds(gate: re.Pattern[bytes], line: bytes) -> bool:
    found = _STAMP_PREFIX.match(line)
    return gate.search(line[found.end():] if found else line) is not None


@lru_cache(maxsize=2)
def _matcher(gated_patterns: int):
    from ci_triage.core.logs.matcher import Matcher

    return Matcher(builtin_rules(), "python")


edit = st.tuples(st.integers(0, 4), st.integers(0, 400), st.integers(0, 40))


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.lists(edit, max_size=6), st.sampled_from(FRAMES), st.booleans(), st.booleans())
def test_gate_never_rules_out_a_matching_line(data, edits, frame, stamped, progress):
    rule_id, pattern, examples, gate = data.draw(st.sampled_from(gated()))
    example = data.draw(st.sampled_from(examples))
    line = frame.encode() + mutate(example, edits)
    if progress:
        line = b"50%\r" + line
    if stamped:
        line = STAMP + line
    if matches_line(pattern, line):
        assert gate_holds(gate, line), (rule_id, pattern.pattern, line)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.lists(st.tuples(st.lists(edit, max_size=4), st.sampled_from(FRAMES), st.booleans()),
                           min_size=1, max_size=12))
def test_the_matchers_answer_is_the_same_with_and_without_gates(data, specs):
    from ci_triage.core.logs import matcher as matcher_module

    lines = []
    for edits, frame, progress in specs:
        _rule_id, _pattern, examples, _gate = data.draw(st.sampled_from(gated()))
        line = frame.encode() + mutate(data.draw(st.sampled_from(examples)), edits)
        lines.append(STAMP + (b"50%\r" if progress else b"") + line)
    log = b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n"
    answers = []
    saved = matcher_module.GATED_PATTERNS
    try:
        for gated_patterns in (saved, 0):  # each matcher caches its checks made under its own setting
            matcher_module.GATED_PATTERNS = gated_patterns
            found = _matcher(gated_patterns).relevant_lines(log, ())
            answers.append([(m.rule_id, m.line.number, m.captures) for m in found.matches])
    finally:
        matcher_module.GATED_PATTERNS = saved
    assert answers[0] == answers[1]


def test_a_gate_never_backtracks_through_non_ascii_bytes():
    """A gate's non-ASCII character is 1-4 bytes >= 0x80: n of them in a row could split such bytes 4**n ways.
    `code=\\d{16}:` took minutes on one line of 26 such bytes; gates run on ASCII lines only (needles.lacks_all)."""
    import time

    from ci_triage.core.logs.needles import lacks_all

    gate = re.compile(gate_expression(re.compile(r"code=\d{16}:")))
    line = b"code=" + b"\xe2\x82" * 40 + b" ...:"
    started = time.perf_counter()
    assert not lacks_all(((b"code=", b":"),), line, (gate,))  # not ruled out: the line is decoded and matched
    assert time.perf_counter() - started < 0.5
