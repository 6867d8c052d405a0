"""Load and validate a classification rule set (TOML), compile its patterns once.

Pure: takes the TOML text, returns values. Reading the built-in file from the package is the only
I/O here and happens through importlib.resources on request.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from ci_triage.core import limits
from ci_triage.core.logs.cache_hook import BUILTIN_CACHE as _BUILTIN_CACHE
from ci_triage.core.logs.framing import context_sensitive, unframed
from ci_triage.core.categories import CATEGORIES, NEVER_RETRYABLE
from ci_triage.core.logs.regex_guard import check_budget, compile_pattern, hazard, linear_engine
from ci_triage.errors import ConfigError


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    retryable: bool
    priority: int  # 0 is the highest: the position in the rule file
    description: str
    patterns: tuple[re.Pattern[str], ...]  # Python's compiled patterns: the matcher reads their literals
    exclude: tuple[re.Pattern[str], ...]
    examples: tuple[str, ...]
    near_misses: tuple[str, ...]
    boilerplate: bool = False
    # What actually searches each line, pattern by pattern: RE2 (linear time) for rules the project did
    # not write when it is installed, else the Python pattern itself. Not part of a rule's identity.
    searchers: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    exclude_searchers: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    engine: str = "re"  # "re" or "re2": which engine `searchers` are

    def match(self, text: str) -> dict[str, str] | None:
        """Captures of the first pattern that matches `text` (as it is, or without its framing: a rank
        prefix, `##[error]`, indentation; see framing.py), or None."""
        check_budget(self.id)
        return self._search(text, range(len(self.patterns)))

    def match_patterns(self, text: str, indices: Iterable[int]) -> dict[str, str] | None:
        """`match` when only the patterns at `indices` (ascending) can match `text`: the matcher
        knows which patterns' literals the line holds, and the others cannot match it."""
        check_budget(self.id)
        return self._search(text, indices)

    @cached_property
    def _context_sensitive(self) -> tuple[bool, ...]:
        """Per pattern: whether it can match a line's unframed text and not the line (framing.py)."""
        return tuple(context_sensitive(pattern.pattern) for pattern in self.patterns)

    def _search(self, text: str, indices: Iterable[int]) -> dict[str, str] | None:
        searchers = self.searchers or self.patterns
        sensitive = self._context_sensitive
        bare: tuple[str, ...] | None = None  # found only when a pattern needs it
        for index in indices:
            pattern = searchers[index]
            found = pattern.search(text)
            if found is None and sensitive[index]:
                if bare is None:
                    bare = unframed(text)
                if bare:
                    found = next((f for f in map(pattern.search, bare) if f), None)
            if found:
                excludes = self.exclude_searchers or self.exclude
                candidates = (text, *(unframed(text) if bare is None else bare))
                if any(excluded.search(candidate) for excluded in excludes for candidate in candidates):
                    return None
                return {name: value for name, value in found.groupdict().items() if value is not None}
        return None


@dataclass(frozen=True)
class RuleSet:
    version: int
    rules: tuple[Rule, ...]


# The schema of a rule file: every key and the type its value must have. Anything else is an error
# (with a did-you-mean), so `retryabel = true` cannot load as "not retryable".
_TOP_KEYS = {"version": int, "rule": list}
_RULE_KEYS: dict[str, type | tuple[type, type]] = {
    "id": str, "category": str, "retryable": bool, "description": str, "patterns": (list, str),
    "exclude": (list, str), "examples": (list, str), "near_misses": (list, str), "boilerplate": bool,
}
_TYPE_NAMES = {int: "an integer", list: "an array", str: "a string", bool: "true or false"}


def _unknown_key(origin: str, where: str, key: str, known: Iterable[str]) -> ConfigError:
    import difflib  # only for an error's did-you-mean: not on every load

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    hint = f"Did you mean '{close[0]}'?" if close else f"Known keys: {', '.join(known)}."
    return ConfigError(f"{origin}: {where}unknown key '{key}'", hint=hint)


def _typed(origin: str, where: str, key: str, value: Any, expected: type | tuple[type, type]) -> Any:
    kind, item = expected if isinstance(expected, tuple) else (expected, None)
    # bool is an int in Python; `version = true` is not a version.
    wrong = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
    if not wrong and item is not None:
        bad = next((i for i, element in enumerate(value) if not isinstance(element, item)), None)
        if bad is not None:
            raise ConfigError(f"{origin}: {where}'{key}[{bad}]' must be {_TYPE_NAMES[item]}, "
                              f"not {type(value[bad]).__name__} {value[bad]!r}")
    if wrong:
        shown = f"{type(value).__name__} {value!r}"
        what = f"{_TYPE_NAMES[kind]} of strings" if item is not None else _TYPE_NAMES[kind]
        raise ConfigError(f"{origin}: {where}'{key}' must be {what}, not {shown}")
    return value


def _compile(origin: str, rule_id: str, source: str, linear: bool) -> tuple[re.Pattern[str], Any, str]:
    """(Python pattern, what searches with it, engine name); refuses patterns that can hang."""
    too_long = limits.pattern_problem(source) if linear else None  # before re.compile, which is not linear in it
    if too_long:
        raise ConfigError(f"{origin}: rule {rule_id!r}: a pattern {too_long}")
    try:
        compiled = compile_pattern(source)  # one parse, shared with hazard() and the needles
    except re.error as exc:
        raise ConfigError(f"{origin}: rule {rule_id!r}: pattern {source!r} does not compile: {exc}") from None
    reason = hazard(source)
    if reason:
        raise ConfigError(f"{origin}: rule {rule_id!r}: pattern {source!r} is refused: {reason}",
                          hint="Make the repeated part unambiguous (e.g. `[\\w\\s]+` for `(\\w+\\s?)+`), "
                               "or use a possessive quantifier or atomic group.")
    searcher = linear_engine(source) if linear else None
    return (compiled, searcher, "re2") if searcher is not None else (compiled, compiled, "re")


def _rule(origin: str, index: int, entry: Any, linear: bool) -> Rule:
    if not isinstance(entry, dict):
        raise ConfigError(f"{origin}: rule #{index + 1} must be a table ([[rule]])")
    rule_id = entry.get("id")
    if not isinstance(rule_id, str) or not rule_id:
        raise ConfigError(f"{origin}: rule #{index + 1} has no id")
    where = f"rule {rule_id!r}: "
    for key, value in entry.items():
        if key not in _RULE_KEYS:
            raise _unknown_key(origin, where, key, _RULE_KEYS)
        _typed(origin, where, key, value, _RULE_KEYS[key])
    category = entry.get("category")
    if category not in CATEGORIES:
        import difflib

        close = difflib.get_close_matches(str(category), CATEGORIES, n=1, cutoff=0.6)
        raise ConfigError(f"{origin}: {where}unknown category {category!r}",
                          hint=f"Did you mean '{close[0]}'?" if close else f"Use one of: {', '.join(CATEGORIES)}.")
    retryable = entry.get("retryable", False)
    if retryable and category in NEVER_RETRYABLE:
        raise ConfigError(f"{origin}: {where}category {category} is never retryable")
    patterns = entry.get("patterns") or []
    if not patterns:
        raise ConfigError(f"{origin}: {where}has no patterns")
    examples = tuple(entry.get("examples") or ())
    near_misses = tuple(entry.get("near_misses") or ())
    if not examples or not near_misses:
        raise ConfigError(f"{origin}: {where}needs at least one example and one near miss")
    compiled = [_compile(origin, rule_id, source, linear) for source in patterns]
    excluded = [_compile(origin, rule_id, source, linear) for source in entry.get("exclude") or ()]
    engines = {engine for _, _, engine in compiled + excluded}
    return Rule(
        id=rule_id,
        category=category,
        retryable=retryable,
        priority=index,
        description=entry.get("description", ""),
        patterns=tuple(p for p, _, _ in compiled),
        exclude=tuple(p for p, _, _ in excluded),
        examples=examples,
        near_misses=near_misses,
        boilerplate=entry.get("boilerplate", False),
        searchers=tuple(s for _, s, _ in compiled),
        exclude_searchers=tuple(s for _, s, _ in excluded),
        engine="re2" if engines == {"re2"} else "re",
    )


def parse_rules(text: str, origin: str = "rules", *, trusted: bool = False) -> RuleSet:
    """Parse a rule file strictly: unknown keys, wrong types, bad or hazardous regexes are errors.

    `trusted` is for the project's own built-in rules; any other file (a repository's, `--rules`)
    runs on RE2's linear-time engine where RE2 is installed and can take the pattern.
    """
    problem = None if trusted else limits.toml_problem(text)  # before tomllib, quadratic in dotted-key parts
    if problem:
        raise ConfigError(f"{origin}: {problem}")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: not valid TOML: {exc}") from None
    for key, value in document.items():
        if key not in _TOP_KEYS:
            raise _unknown_key(origin, "", key, _TOP_KEYS)
        _typed(origin, "", key, value, _TOP_KEYS[key])
    entries = document.get("rule", [])
    if not entries:
        raise ConfigError(f"{origin}: no [[rule]] entries")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        rule = _rule(origin, index, entry, linear=not trusted)
        if rule.id in seen:
            raise ConfigError(f"{origin}: rule {rule.id!r} is defined twice")
        seen.add(rule.id)
        rules.append(rule)
    return RuleSet(version=document.get("version", 1), rules=tuple(rules))


def check_examples(rule_set: RuleSet) -> list[str]:
    """Problems with the rules' own examples: each must match its rule, each near miss must not."""
    problems = []
    for rule in rule_set.rules:
        for example in rule.examples:
            if rule.match(example) is None:
                problems.append(f"rule {rule.id!r}: example does not match: {example!r}")
        for near_miss in rule.near_misses:
            if rule.match(near_miss) is not None:
                problems.append(f"rule {rule.id!r}: near miss matches: {near_miss!r}")
    return problems


def _builtin_folder() -> Any:
    # The package's folder (ci_triage/rules/builtin) read directly where it is one: importlib.resources
    # costs ~10 ms of imports at every start.
    folder = Path(__file__).resolve().parent.parent.parent / "rules" / "builtin"
    if not folder.is_dir():
        from importlib import resources

        folder = resources.files("ci_triage.rules").joinpath("builtin")
    return folder


def builtin_files() -> list[tuple[str, bytes]]:
    """(name, bytes) of each built-in rule file, in priority (name) order."""
    folder = _builtin_folder()
    return [(entry.name, entry.read_bytes()) for entry in
            sorted((entry for entry in folder.iterdir() if entry.name.endswith(".toml")), key=lambda e: e.name)]


# --- the shipped index of the built-in rules ---------------------------------------------------
# ci_triage/rules/builtin/index.json, written by `python -m ci_triage.rules_index --write` from the rule
# files (tests/test_rules_index.py fails when it is not what they give): every rule's fields and, per
# pattern, its flags, the hazard check's verdict, its needles and required literals: the parse results
# that are the same on every Python and machine (no `re` code, no hyperscan database). A start-up whose
# rule files have the digest the index names builds the rule set from it, without parsing TOML or any
# pattern; patterns are compiled on first use (regex_guard.LazyPattern). Any other digest, format or a
# damaged index means parsing, as without one.
INDEX_NAME = "index.json"
INDEX_FORMAT = 1
_INDEX_USED: list[dict | None] = [None]  # the index document `indexed_builtin` last built a rule set from


def files_digest(files: list[tuple[str, bytes]]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def read_index() -> dict | None:
    import json

    try:
        return json.loads(_builtin_folder().joinpath(INDEX_NAME).read_bytes())
    except (OSError, ValueError):
        return None


def indexed_builtin(files: list[tuple[str, bytes]], document: dict | None = None) -> RuleSet | None:
    """The built-in rule set `files` make, from the shipped index, or None when it is not theirs."""
    document = read_index() if document is None else document
    if not isinstance(document, dict) or document.get("format") != INDEX_FORMAT:
        return None
    if document.get("files") != files_digest(files):
        return None
    try:
        rule_set = _from_index(document)
    except Exception:  # an index we cannot read as written: parse instead
        return None
    _INDEX_USED[0] = document  # the shell's rule cache keeps it (marshal reads faster than json)
    return rule_set


def _from_index(document: dict) -> RuleSet:
    """The rule set an index document describes (its digest checked by the caller)."""
    from ci_triage.core.logs.regex_guard import KNOWN_NEEDLES, KNOWN_REQUIRED, LazyPattern

    patterns, known, required = [], {}, {}
    for source, flags, verdict, needles, literals in document["patterns"]:
        if verdict != "safe" or not isinstance(source, str) or not isinstance(flags, int):
            raise ValueError("not a checked pattern")
        patterns.append(LazyPattern(source, flags))
        key = (source, flags)
        known[key] = None if needles is None else frozenset((text, bool(caseless)) for text, caseless in needles)
        required[key] = tuple(literals)
    rules = []
    for index, entry in enumerate(document["rules"]):
        own = tuple(patterns[i] for i in entry["patterns"])
        excluded = tuple(patterns[i] for i in entry["exclude"])
        if entry["category"] not in CATEGORIES or not own:
            raise ValueError("not a checked rule")
        rules.append(Rule(id=entry["id"], category=entry["category"], retryable=entry["retryable"], priority=index,
                          description=entry["description"], patterns=own, exclude=excluded,
                          examples=tuple(entry["examples"]), near_misses=tuple(entry["near_misses"]),
                          boilerplate=entry["boilerplate"], searchers=own, exclude_searchers=excluded, engine="re"))
    KNOWN_NEEDLES.update(known)  # what core/logs/needles.py would find by parsing each pattern
    KNOWN_REQUIRED.update(required)
    return RuleSet(version=document["version"], rules=tuple(rules))


def parse_builtin(files: list[tuple[str, bytes]]) -> RuleSet:
    """The rule set the built-in files make: one file per family, name order is priority order
    across files, as file order is within one."""
    parts = [parse_rules(data.decode("utf-8"), origin=f"built-in rules ({name})", trusted=True)
             for name, data in files]
    rules = [rule for part in parts for rule in part.rules]
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise ConfigError(f"built-in rules: rule id {rule.id!r} is defined twice")
        seen.add(rule.id)
    return RuleSet(version=max(part.version for part in parts),
                   rules=tuple(replace(rule, priority=index) for index, rule in enumerate(rules)))


@cache
def builtin_rules() -> RuleSet:
    """The built-in rules: one file per family under ci_triage/rules/builtin/, loaded in name order
    (`parse_builtin`), or their cached form when the shell registered a cache and it holds these files,
    or else the shipped index's form when it was made from these files (`indexed_builtin`)."""
    files = builtin_files()
    for load, _ in _BUILTIN_CACHE:
        try:
            cached = load(files)
        except Exception:  # a cache never breaks loading: the files are parsed instead
            cached = None
        if cached is not None:
            return cached
    rule_set = indexed_builtin(files) or parse_builtin(files)
    for _, store in _BUILTIN_CACHE:
        try:
            store(files, rule_set)
        except Exception:
            pass
    return rule_set


def merge_rule_sets(base: RuleSet, extra: RuleSet) -> RuleSet:
    """A repository's own rules on top of the built-in ones.

    The repository knows its failures best, so its rules come first (highest priority); one with
    the id of a built-in rule replaces it.
    """
    replaced = {rule.id for rule in extra.rules}
    ordered = [*extra.rules, *(rule for rule in base.rules if rule.id not in replaced)]
    return RuleSet(version=max(base.version, extra.version),
                   rules=tuple(replace(rule, priority=index) for index, rule in enumerate(ordered)))
