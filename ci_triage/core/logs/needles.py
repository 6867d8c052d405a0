"""Needles: literal text that every match of a rule pattern must contain.

Each pattern is parsed with `re`'s own parser; a literal run gives its longest usable piece, a
branch gives one needle per alternative (all of them or none), a repeat taken at least once gives its
body's. A pattern with no needle of at least _MIN_NEEDLE characters has none (its rule is then tried
on every line). See matcher.py for why a needle is found whenever the normalised text holds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from re import (
    _constants as sre,  # the parser's node types; part of re since Python 3.11
)
from re import _parser as sre_parse

from ci_triage.core.logs.logparse import _STAMP_PREFIX
from ci_triage.core.logs.regex_guard import KNOWN_NEEDLES, KNOWN_REQUIRED, parsed
from ci_triage.core.logs.rules import Rule
from ci_triage.core.logs.scan import Needle

_MIN_NEEDLE = 3  # shorter literals hit nearly every line; such a rule is checked on every line
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))


def _usable(char: str, caseless: bool) -> bool:
    if char in "\n\ufffd" or "\ud800" <= char <= "\udfff":
        return False
    return not caseless or char.isascii()


def _literal_cover(text: str, caseless: bool) -> frozenset[Needle]:
    """The longest usable piece of a literal run, as a one-needle cover (or an empty one)."""
    pieces, piece = [], []
    for char in text:
        if _usable(char, caseless):
            piece.append(char)
        else:
            pieces.append("".join(piece))
            piece = []
    pieces.append("".join(piece))
    best = max(pieces, key=len)
    return frozenset({(best, caseless)}) if best else frozenset()


def _score(cover: frozenset[Needle]) -> tuple[int, int]:
    return min(len(text) for text, _ in cover), -len(cover)


def _joined_cover(run: str, branches: Iterable, caseless: bool) -> frozenset[Needle] | None:
    """One needle per alternative: `run` followed by the literal the alternative starts with (None
    when an alternative starts with no literal)."""
    cover: set[Needle] = set()
    for branch in branches:
        leading = []
        for op, av in branch:
            if op is not sre.LITERAL:
                break
            leading.append(chr(av))
        if not leading:
            return None
        piece = _literal_cover(run + "".join(leading), caseless)
        if not piece or min(len(text) for text, _ in piece) < _MIN_NEEDLE:
            return None
        cover |= piece
    return frozenset(cover) or None


def _cover(items: Iterable[tuple], caseless: bool, required: list[str] | None = None) -> frozenset[Needle] | None:
    """Needles at least one of which every match of this parsed sequence contains, or None. When
    `required` is given, the case-sensitive literals every match contains (each of them) are added to it."""
    candidates: list[frozenset[Needle]] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            cover = _literal_cover("".join(run), caseless)
            candidates.append(cover)
            if required is not None and not caseless:
                required.extend(text for text, _ in cover)
            run.clear()

    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        previous_run = "".join(run)
        end_run()
        found: frozenset[Needle] | None = None
        if op is sre.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            inner = (caseless or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
            found = _cover(sub, inner, required)
        elif op in _REPEATS:
            low, _high, sub = av
            if low >= 1:
                found = _cover(sub, caseless, required)
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            found = _cover(av, caseless, required)
        elif op is sre.BRANCH:
            alternatives = [_cover(branch, caseless) for branch in av[1]]
            if all(alternatives):
                found = frozenset().union(*alternatives)
            if previous_run:
                # re's parser factors a shared prefix out of a branch (`( \.\.\. FAIL| \.\.\. ERROR)` becomes
                # ' ... ' then FAIL|ERROR): the run just before the branch joined to each alternative's own
                # leading literal is in every match, and far rarer than the run alone.
                joined = _joined_cover(previous_run, av[1], caseless)
                if joined and (not found or _score(joined) > _score(found)):
                    found = joined
        if found:
            candidates.append(found)
    end_run()
    candidates = [c for c in candidates if c]
    return max(candidates, key=_score) if candidates else None


# (source, flags) -> needles, and -> required literals, as `pattern_needles` and `pattern_required` found
# them in an earlier process (the shell's rule cache, ci_triage/rules_cache.py, and the shipped index of
# the built-in rules fill them); held in regex_guard, which the rule loader imports without a cycle.
_KNOWN: dict[tuple[str, int], frozenset[Needle] | None] = KNOWN_NEEDLES
_REQUIRED: dict[tuple[str, int], tuple[str, ...]] = KNOWN_REQUIRED


def pattern_needles(pattern: re.Pattern[str]) -> frozenset[Needle] | None:
    """Needles one of which is in every text `pattern` finds a match in; None if none is known."""
    key = (pattern.pattern, pattern.flags)
    if key in _KNOWN:
        return _KNOWN[key]
    return _pattern_needles(pattern)


def pattern_required(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Case-sensitive literals (any length) that every text `pattern` finds a match in contains, all of
    them: the matcher rules a candidate line out with `in` on its bytes before decoding it."""
    key = (pattern.pattern, pattern.flags)
    if key in _REQUIRED:
        return _REQUIRED[key]
    return _analyse(pattern)[1]


def lacks_all(required: tuple[tuple[bytes, ...], ...], line: bytes, gates: tuple = ()) -> bool:
    """Whether `line` (a physical line's bytes, ANSI removed) lacks one literal of each tuple of
    `required` (each a pattern's required literals), or holds no match of that pattern's gate (a bytes
    regex in `gates` at the same index, when given and not None): then none of those patterns can match
    any text of that line. Its timestamp is not looked in: `split_line` cuts it off the text (`:` is in
    every one)."""
    stamp = _STAMP_PREFIX.match(line)
    if stamp is not None:
        line = line[stamp.end():]
    for index, literals in enumerate(required):
        for literal in literals:
            if literal not in line:
                break
        else:
            gate = gates[index] if gates else None
            # A gate runs on an ASCII line only: on other bytes its non-ASCII characters (1-4 bytes each) make it
            # backtrack exponentially (prefilter.gate_expression).
            if gate is None or not line.isascii() or gate.search(line) is not None:
                return False  # this pattern may match
    return True


def _pattern_needles(pattern: re.Pattern[str]) -> frozenset[Needle] | None:
    return _analyse(pattern)[0]


def _analyse(pattern: re.Pattern[str]) -> tuple[frozenset[Needle] | None, tuple[str, ...]]:
    """(needles, required literals) of `pattern`, from its parse tree."""
    try:
        tree = parsed(pattern.pattern)  # the tree the hazard check read, when the flags are all inline
        if (tree.state.flags | re.UNICODE) != (pattern.flags | re.UNICODE):
            tree = sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # the parser is internal; a pattern it cannot take is checked on every line
        return None, ()
    required: list[str] = []
    cover = _cover(tree, bool(tree.state.flags & re.IGNORECASE), required)
    literals = tuple(sorted(set(required), key=lambda text: (-len(text), text)))
    if not cover or _score(cover)[0] < _MIN_NEEDLE:
        return None, literals
    return cover, literals


def rule_needles(rule: Rule) -> frozenset[Needle] | None:
    covers = [pattern_needles(pattern) for pattern in rule.patterns]
    if not all(covers):
        return None
    return frozenset().union(*covers)


def _needle_regex(needles: Iterable[Needle]) -> re.Pattern[str]:
    alternatives = sorted(f"(?i:{re.escape(text)})" if caseless else re.escape(text) for text, caseless in needles)
    return re.compile("|".join(alternatives))
