"""Keep rule regexes from hanging the classifier: refuse the shapes that backtrack exponentially,
run rules the project did not write on a linear-time engine, and bound the time spent per log.

Three layers, because each covers what the others cannot:
- `hazard` reads a pattern's parse tree (`re`'s own parser) and names the shapes Python's
  backtracking engine takes exponential time on: an unbounded quantifier inside another with
  nothing fixed between the iterations (`(a+)+$`, `(\\w+\\s?)+ unreachable$`), and an unbounded
  repetition of alternatives that can start alike (`(a|ab)*c`). Every rule file is held to it,
  built-in ones too, so the refusal does not depend on which engine a machine has.
- `linear_engine` compiles a pattern with RE2 (the `google-re2` wheel) when it is installed and the
  pattern is in RE2's syntax (no look-around, no back-reference): its matching time is linear in
  the line, whatever the pattern. Repository and `--rules` files use it; the built-in rules are
  ours, tested, and keep Python's semantics.
- `Budget` is a per-log deadline that `Rule.match` checks before each regex: polynomial
  backtracking that the static check lets through (`.*.*.*x` on a long line) ends in
  `BudgetExceeded`, which the caller turns into an `unknown` classification with a note. The clock
  is passed in: this module stays pure.
"""

from __future__ import annotations

import _sre  # re's C engine: what re._compiler.compile hands the compiled code to
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from re import _compiler as sre_compile  # part of re since Python 3.11, like matcher's _parser
from re import _constants as sre
from re import _parser as sre_parse
from typing import Any

_UNBOUNDED = sre.MAXREPEAT
# A bounded repeat this large backtracks like an unbounded one.
_LARGE = 64
_BACKTRACKING = (sre.MAX_REPEAT, sre.MIN_REPEAT)  # POSSESSIVE_REPEAT never gives characters back


def _is_unbounded(op: Any, av: Any) -> bool:
    return op in _BACKTRACKING and (av[1] is _UNBOUNDED or av[1] >= _LARGE)


def _repeats(op: Any, av: Any) -> bool:
    """A quantifier that can run its body more than once: `(.*a){20}` is as bad as `(.*a)+`."""
    return op in _BACKTRACKING and (av[1] is _UNBOUNDED or av[1] >= 2)


def _unwrap(items: list) -> list:
    while len(items) == 1 and items[0][0] is sre.SUBPATTERN:
        items = list(items[0][1][3])
    return items


_CHAR_ITEMS = (sre.IN, sre.ANY, sre.LITERAL, sre.NOT_LITERAL, sre.CATEGORY)


def _char_items(items: list) -> bool:
    """Whether a parsed sequence is a run of character-matching items (`\\w`, `[a-z]`, `.`, `x`)."""
    return bool(items) and all(op in _CHAR_ITEMS for op, _ in items)


def _matches_char(state: Any, items: list, flags: int, char: str) -> bool:
    try:
        compiled = sre_compile.compile(sre_parse.SubPattern(state, list(items)), flags)
    except Exception:  # an internal API: when in doubt, assume the worst
        return True
    return compiled.fullmatch(char) is not None


def _separated(state: Any, body: list, inner: list, flags: int) -> bool:
    """Whether every iteration of `body` holds a fixed character that no character of the inner
    repeated run can match: then each iteration's split is forced and nothing is retried."""
    if not _char_items(inner):
        return False
    for op, av in body:
        if op is sre.LITERAL and not any(_matches_char(state, [item], flags, chr(av)) for item in inner):
            return True
    return False


def _first_literal(items: list) -> int | None:
    for op, av in items:
        if op is sre.LITERAL:
            return av
        if op is sre.SUBPATTERN:
            return _first_literal(list(av[3]))
        return None
    return None


def _walk(items: list, state: Any, flags: int, outer: list | None) -> str | None:
    for op, av in items:
        if op in _BACKTRACKING or op is getattr(sre, "POSSESSIVE_REPEAT", None):
            body = _unwrap(list(av[2]))
            unbounded = _is_unbounded(op, av)
            if unbounded and outer is not None:
                if not _separated(state, outer, body, flags):
                    return ("an unbounded quantifier inside another unbounded quantifier, with nothing fixed "
                            "between the iterations: exponential backtracking on a line that almost matches")
            if unbounded:
                branch = next((av2 for op2, av2 in body if op2 is sre.BRANCH), None)
                if branch is not None:
                    firsts = [_first_literal(list(alternative)) for alternative in branch[1]]
                    if None in firsts or len(set(firsts)) < len(firsts):
                        return ("an unbounded repetition of alternatives that can start alike: exponential "
                                "backtracking when they overlap")
            found = _walk(body, state, flags, body if _repeats(op, av) else outer)
            if found:
                return found
        elif op is sre.SUBPATTERN:
            found = _walk(list(av[3]), state, flags, outer)
            if found:
                return found
        elif op is sre.BRANCH:
            for alternative in av[1]:
                found = _walk(list(alternative), state, flags, outer)
                if found:
                    return found
        # ATOMIC_GROUP: never backtracks into itself; nothing inside can blow up from outside.
    return None


@lru_cache(maxsize=4096)
def parsed(source: str) -> Any:
    """`re`'s parse tree of `source` (no flags passed), kept: loading a rule set reads each pattern's
    tree twice (here and for the matcher's needles), and parsing is most of what loading costs.
    Its readers only read it."""
    return sre_parse.parse(source)


# Parse results known without parsing (the built-in rules' shipped index, the shell's rule cache):
# (source, flags) -> needles, and -> required literals, which core/logs/needles.py reads first.
KNOWN_NEEDLES: dict[tuple[str, int], Any] = {}
KNOWN_REQUIRED: dict[tuple[str, int], tuple[str, ...]] = {}

_FROM_TREE: list[bool] = []  # [whether compile_pattern may compile from the shared tree], decided once


def _compile_tree(source: str, tree: Any) -> re.Pattern[str]:
    """What `re.compile(source)` does after parsing (re._compiler.compile), on a tree parsed already."""
    code = sre_compile._code(tree, 0)
    groupindex = tree.state.groupdict
    indexgroup: list[str | None] = [None] * tree.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return _sre.compile(source, tree.state.flags, code, tree.state.groups - 1, groupindex, tuple(indexgroup))


def compile_pattern(source: str) -> re.Pattern[str]:
    """`re.compile(source)`, from the parse tree `hazard` and the matcher's needles read too, so a rule
    set's patterns are parsed once. Where this Python's internals differ (checked on first use: the
    pattern must equal re.compile's), it is re.compile itself. Raises re.error as re.compile does."""
    if not _FROM_TREE:
        try:
            _FROM_TREE.append(_compile_tree(r"(?P<a>x)\d+(?i:y)", parsed(r"(?P<a>x)\d+(?i:y)"))
                              == re.compile(r"(?P<a>x)\d+(?i:y)"))
        except Exception:  # an internal API changed
            _FROM_TREE.append(False)
    if not _FROM_TREE[0]:
        return re.compile(source)
    return _compile_tree(source, parsed(source))


def hazard(source: str) -> str | None:
    """Why `source` can take exponential time in Python's `re`, or None when no such shape is found."""
    try:
        tree = parsed(source)
    except Exception:  # the caller reports compile errors itself
        return None
    return _walk(list(tree.data), tree.state, tree.state.flags, None)


# RE2 is a library outside the core: the shell's `ci_triage.engines` (loaded by the package's
# __init__) registers it here; whether its wheel imports is asked on first use, not at start-up.
_LINEAR: dict[str, tuple[Callable[[], bool], Callable[[str], Any]]] = {}


def register_linear_engine(name: str, available: Callable[[], bool], compile_pattern: Callable[[str], Any]) -> None:
    """`compile_pattern(source)` gives a compiled linear-time pattern, or raises when it cannot take it."""
    _LINEAR.clear()
    _LINEAR[name] = (available, compile_pattern)


def linear_engine_name() -> str | None:
    """The linear-time engine rule files we did not write run on, or None when none is installed."""
    return next((name for name, (available, _) in _LINEAR.items() if available()), None)


def linear_engine(source: str) -> Any | None:
    """`source` compiled by the linear-time engine (RE2), or None when there is none or it cannot take
    it (look-around, back-references, Python-only escapes)."""
    for available, compile_pattern in _LINEAR.values():
        if available():
            try:
                return compile_pattern(source)
            except Exception:
                return None
    return None


# --- the per-log budget -----------------------------------------------------------------------

class BudgetExceeded(Exception):
    def __init__(self, seconds: float, rule_id: str) -> None:
        super().__init__(f"matching stopped after {seconds:.1f} s (last rule tried: {rule_id})")
        self.seconds = seconds
        self.rule_id = rule_id


class Budget:
    """A deadline on the time the rules spend on one log; `clock` is a monotonic clock in seconds."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.clock = clock
        self.deadline = clock() + seconds

    def check(self, rule_id: str) -> None:
        if self.clock() > self.deadline:
            raise BudgetExceeded(self.seconds, rule_id)


_ACTIVE: ContextVar[Budget | None] = ContextVar("ci_triage_match_budget", default=None)


def check_budget(rule_id: str) -> None:
    budget = _ACTIVE.get()
    if budget is not None:
        budget.check(rule_id)


@contextmanager
def within(budget: Budget | None) -> Iterator[None]:
    """Matching inside this block raises BudgetExceeded once `budget` runs out."""
    token = _ACTIVE.set(budget)
    try:
        yield
    finally:
        _ACTIVE.reset(token)



# --- patterns compiled on first use -----------------------------------------------------------

_BOUND = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
          "groupindex", "groups")


class LazyPattern:
    """A pattern known by its source and flags (the built-in rules' shipped index), compiled by
    `re.compile` the first time anything but `pattern`/`flags` is asked of it: a classification
    compiles only the few patterns whose needles its log holds. After that, its `search` (and the
    rest) are the compiled pattern's own bound methods, so matching costs what it costs on a
    `re.Pattern`. Equal to the `re.Pattern` of the same source and flags."""

    def __init__(self, source: str, flags: int) -> None:
        self.pattern = source
        self.flags = flags

    def compiled(self) -> re.Pattern[str]:
        found = self.__dict__.get("_compiled")
        if found is None:
            found = re.compile(self.pattern)
            if found.flags != self.flags:  # an index made for another source: never match wrongly
                raise ValueError(f"pattern {self.pattern!r}: flags {found.flags}, index says {self.flags}")
            self.__dict__["_compiled"] = found
            for name in _BOUND:
                self.__dict__[name] = getattr(found, name)
        return found

    def __getattr__(self, name: str) -> Any:  # only for attributes not set yet
        if name.startswith("__") or name == "_compiled":
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyPattern, re.Pattern)):
            return self.pattern == other.pattern and self.flags == other.flags
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))

    def __repr__(self) -> str:
        return repr(self.compiled())

    def __reduce__(self) -> tuple:
        return LazyPattern, (self.pattern, self.flags)
