"""Scoring the classifier on the labelled corpus (tests/corpus): shared by tests/test_corpus.py and
benchmarks/classify_accuracy.py, so the test and the printed figures can never disagree.

An excerpt is classified exactly as a job log is: the bytes go through the fast matcher's candidate
selection (`relevant_lines`) and then `classify`, the same path `ci-triage classify` and the report take.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ci_triage.core.categories import CATEGORIES, NEVER_RETRYABLE
from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import RuleSet, builtin_rules
from ci_triage.model import Classification

CORPUS = Path(__file__).parent / "corpus"
SPLITS = ("tune", "test")
# The corpus labels with the classifier's own categories.
LABEL_CATEGORIES = CATEGORIES
# Failures of the code: an excerpt of these called retryable would waste a runner on a rerun that
# cannot pass. A dependency failure is the exception only when the package index was unreachable.
CODE_CATEGORIES = NEVER_RETRYABLE


@dataclass(frozen=True)
class Excerpt:
    file: str
    category: str
    root_cause_line: int
    split: str
    repository: str
    source: str
    note: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    excerpt: Excerpt
    result: Classification

    @property
    def root_line(self) -> int | None:
        return self.result.root_cause.line if self.result.root_cause else None

    @property
    def category_ok(self) -> bool:
        return self.result.category == self.excerpt.category

    @property
    def root_ok(self) -> bool:
        return self.root_line == self.excerpt.root_cause_line

    @property
    def wrongly_retryable(self) -> bool:
        return (self.excerpt.category in CODE_CATEGORIES and self.result.retryable
                and "index_unreachable" not in self.excerpt.tags)


def load_labels() -> list[Excerpt]:
    document = tomllib.loads((CORPUS / "labels.toml").read_text(encoding="utf-8"))
    return [Excerpt(e["file"], e["category"], e["root_cause_line"], e["split"], e["repository"], e["source"],
                    e["note"], tuple(e.get("tags", ()))) for e in document["excerpt"]]


def score(excerpts: list[Excerpt], rules: RuleSet | None = None) -> list[Scored]:
    rule_set = rules or builtin_rules()
    scored = []
    for excerpt in excerpts:
        raw = (CORPUS / "excerpts" / excerpt.file).read_bytes()
        scored.append(Scored(excerpt, classify(relevant_lines(raw, rule_set), rule_set)))
    return scored


def accuracy(scored: list[Scored]) -> tuple[float, float]:
    if not scored:
        return 0.0, 0.0
    return (sum(s.category_ok for s in scored) / len(scored), sum(s.root_ok for s in scored) / len(scored))


def breakdown(scored: list[Scored], with_misses: bool = True) -> str:
    rows = [f"{'category':<19} {'n':>3}  {'category-ok':>11}  {'root-ok':>7}"]
    counts = Counter(s.excerpt.category for s in scored)
    for category in LABEL_CATEGORIES:
        mine = [s for s in scored if s.excerpt.category == category]
        if not mine:
            continue
        rows.append(f"{category:<19} {counts[category]:>3}  {sum(s.category_ok for s in mine):>11}  "
                    f"{sum(s.root_ok for s in mine):>7}")
    category_rate, root_rate = accuracy(scored)
    rows.append(f"{'all':<19} {len(scored):>3}  {category_rate:>10.1%}  {root_rate:>7.1%}")
    if with_misses:
        misses = [f"  {s.excerpt.file}: got {s.result.category} (rule {s.result.rule_id}) at line {s.root_line}, "
                  f"expected {s.excerpt.category} at line {s.excerpt.root_cause_line}"
                  for s in scored if not (s.category_ok and s.root_ok)]
        if misses:
            rows += ["misses:", *misses]
    return "\n".join(rows)
