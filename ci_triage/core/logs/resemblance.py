"""Which failure family a line no rule matched resembles: the category whose rules' examples share its words.

The rules say how the ecosystem words each failure (every rule carries the real lines it was written
from, as `examples`); a wording no rule knows yet usually still shares most of its words with its
family's (`Connection reset by peer while fetching ...`, `npm error code ETIMEDOUT`). A naive Bayes
model over the words of every category's examples, built from the rule set itself, names the family
an unexplained root-cause line most resembles, or nothing when the words do not point one way.

What this is and is not: classify prefers, among the scorer's best lines, the one that resembles a family
(the likelier cause), and names that family beside `unknown` as a hint for the person reading. It is
never the category and never evidence for a rerun: on the held-out corpus split the hint was right for
6 of 13 logs (2026-12-05). Pure; one model per rule set, built on first use.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Words and codes: identifiers (lowercased, and a CamelCase one also by its parts: `ConnectionResetError`
# shares `connection` and `reset` with `connection reset by peer`), and three-digit numbers (HTTP statuses,
# exit codes). Only the first MAX_CHARS of a line are read: bounded work on a line of any length.
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{1,40}|(?<![\d.:])\d{3}(?![\d.:])")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])")
MAX_CHARS = 1000
# Words every family uses (or none means anything by): they would only add noise to the odds.
_STOP = frozenset("""the a an of to in on at for by with from is are was were be been it its this that and or not no
    as into than then but if while when has have had do does did can will would should could may line file
    error errors failed failure exception com org net www example""".split())
# Add-α smoothing, and what the best family must reach to be named.
ALPHA = 0.5
MIN_POSTERIOR = 0.8
MIN_KNOWN_WORDS = 2


def words(text: str) -> list[str]:
    """The words of `text` the model reads (each once, in order)."""
    found: dict[str, None] = {}
    for word in _WORD.findall(text[:MAX_CHARS]):
        parts = [word] if word.isdigit() else [word, *_CAMEL_PART.findall(word)]
        for part in parts:
            lowered = part.lower()
            if lowered not in _STOP and len(lowered) > 1:
                found.setdefault(lowered, None)
    return list(found)


@dataclass(frozen=True)
class Resemblance:
    category: str
    posterior: float  # the model's probability of `category` among the families, given the words
    words: tuple[str, ...]  # the words that spoke most for it, strongest first


@dataclass(frozen=True)
class FamilyModel:
    """Per category, the log-probability of each word of its rules' examples (each example a set of words)."""

    categories: tuple[str, ...]
    counts: dict[str, tuple[int, ...]]  # word -> how many examples of each category hold it
    denominators: tuple[float, ...]  # per category: log(words counted + ALPHA * vocabulary size)
    # word -> its log-probability in each category (same order as `categories`), on first use
    _rows: dict[str, tuple[float, ...]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_examples(cls, examples: Iterable[tuple[str, str]]) -> FamilyModel:
        per_category: dict[str, Counter[str]] = {}
        for category, text in examples:
            per_category.setdefault(category, Counter()).update(words(text))
        categories = tuple(sorted(per_category))
        vocabulary = {word for counter in per_category.values() for word in counter}
        counts = {word: tuple(per_category[c][word] for c in categories) for word in vocabulary}
        denominators = tuple(math.log(sum(per_category[c].values()) + ALPHA * len(vocabulary)) for c in categories)
        return cls(categories, counts, denominators)

    def _row(self, word: str) -> tuple[float, ...]:
        row = self._rows.get(word)
        if row is None:
            row = self._rows[word] = tuple(math.log(n + ALPHA) - d for n, d in zip(self.counts[word], self.denominators))
        return row

    def resemble(self, text: str) -> Resemblance | None:
        """The family `text` resembles, when its known words point to one with MIN_POSTERIOR; else None.

        Every family has the same prior: how many examples a family's rules happen to carry says
        nothing about how likely a failure is to be of that family. A word no example holds says nothing."""
        known = [word for word in words(text) if word in self.counts]
        if len(known) < MIN_KNOWN_WORDS or not self.categories:
            return None
        scores = [sum(column) for column in zip(*(self._row(word) for word in known))]
        best = max(range(len(scores)), key=scores.__getitem__)
        posterior = 1 / sum(math.exp(score - scores[best]) for score in scores)
        if posterior < MIN_POSTERIOR:
            return None
        # The words that favour the family most over the average family (their log-odds).
        def lift(word: str) -> float:
            row = self._row(word)
            return row[best] - sum(row) / len(row)
        strongest = sorted((word for word in known if lift(word) > 0), key=lift, reverse=True)[:3]
        return Resemblance(self.categories[best], round(posterior, 3), tuple(strongest))


_last: list[Any] = [None, None]  # (rule set, its model): hashing a rule set is not free


def family_model(rule_set: Any) -> FamilyModel:
    """The model of `rule_set`'s examples (its `unknown` and boilerplate rules name no family)."""
    if _last[0] is not rule_set:
        _last[:] = [rule_set, FamilyModel.from_examples(
            (rule.category, example) for rule in rule_set.rules
            if rule.category != "unknown" and not rule.boilerplate for example in rule.examples)]
    return _last[1]


def most_resembling(model: FamilyModel, ranked: Iterable[Any], family: str | None = None
                    ) -> tuple[Any, Resemblance] | None:
    """Of the scorer's candidates (best first), the one whose line most resembles a family (`family`, when
    the category is already known), with the resemblance."""
    found = None
    for candidate in ranked:
        resemblance = model.resemble(candidate.line.text)
        if resemblance is None or (family is not None and resemblance.category != family):
            continue
        if found is None or resemblance.posterior > found[1].posterior:
            found = (candidate, resemblance)
    return found
