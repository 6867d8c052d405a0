"""Load and validate a classification rule set (TOML), compile its patterns once.

Pure: takes the TOML text, returns values. Reading the built-in file from the package is the only
I/O here and happens through importlib.resources on request.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources

from ci_triage.core.categories import CATEGORIES, NEVER_RETRYABLE
from ci_triage.errors import ConfigError


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    retryable: bool
    priority: int  # 0 is the highest: the position in the rule file
    description: str
    patterns: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    examples: tuple[str, ...]
    near_misses: tuple[str, ...]
    boilerplate: bool = False

    def match(self, text: str) -> dict[str, str] | None:
        """Captures of the first pattern that matches `text`, or None."""
        for pattern in self.patterns:
            found = pattern.search(text)
            if found:
                if any(excluded.search(text) for excluded in self.exclude):
                    return None
                return {name: value for name, value in found.groupdict().items() if value is not None}
        return None


@dataclass(frozen=True)
class RuleSet:
    version: int
    rules: tuple[Rule, ...]


def _compile(rule_id: str, source: str) -> re.Pattern[str]:
    try:
        return re.compile(source)
    except re.error as exc:
        raise ConfigError(f"rule {rule_id!r}: pattern {source!r} does not compile: {exc}") from None


def parse_rules(text: str, origin: str = "rules") -> RuleSet:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: not valid TOML: {exc}") from None
    entries = document.get("rule", [])
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{origin}: no [[rule]] entries")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        rule_id = entry.get("id")
        if not isinstance(rule_id, str) or not rule_id:
            raise ConfigError(f"{origin}: rule #{index + 1} has no id")
        if rule_id in seen:
            raise ConfigError(f"{origin}: rule {rule_id!r} is defined twice")
        seen.add(rule_id)
        category = entry.get("category")
        if category not in CATEGORIES:
            raise ConfigError(
                f"{origin}: rule {rule_id!r}: unknown category {category!r}",
                hint=f"Use one of: {', '.join(CATEGORIES)}.",
            )
        retryable = bool(entry.get("retryable", False))
        if retryable and category in NEVER_RETRYABLE:
            raise ConfigError(f"{origin}: rule {rule_id!r}: category {category} is never retryable")
        patterns = entry.get("patterns") or []
        if not patterns:
            raise ConfigError(f"{origin}: rule {rule_id!r} has no patterns")
        examples = tuple(entry.get("examples") or ())
        near_misses = tuple(entry.get("near_misses") or ())
        if not examples or not near_misses:
            raise ConfigError(f"{origin}: rule {rule_id!r} needs at least one example and one near miss")
        rules.append(
            Rule(
                id=rule_id,
                category=category,
                retryable=retryable,
                priority=index,
                description=str(entry.get("description", "")),
                patterns=tuple(_compile(rule_id, p) for p in patterns),
                exclude=tuple(_compile(rule_id, p) for p in entry.get("exclude") or ()),
                examples=examples,
                near_misses=near_misses,
                boilerplate=bool(entry.get("boilerplate", False)),
            )
        )
    return RuleSet(version=int(document.get("version", 1)), rules=tuple(rules))


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


@cache
def builtin_rules() -> RuleSet:
    text = resources.files("ci_triage.rules").joinpath("builtin.toml").read_text(encoding="utf-8")
    return parse_rules(text, origin="built-in rules")


def merge_rule_sets(base: RuleSet, extra: RuleSet) -> RuleSet:
    """A repository's own rules on top of the built-in ones.

    The repository knows its failures best, so its rules come first (highest priority); one with
    the id of a built-in rule replaces it.
    """
    replaced = {rule.id for rule in extra.rules}
    ordered = [*extra.rules, *(rule for rule in base.rules if rule.id not in replaced)]
    return RuleSet(version=max(base.version, extra.version),
                   rules=tuple(replace(rule, priority=index) for index, rule in enumerate(ordered)))
