"""Accuracy of the built-in rules on the labelled corpus of real CI log excerpts (tests/corpus).

Each excerpt is quoted from a public CI log or an issue that pasted one; labels.toml gives its true
category and the 1-based line of its root cause. The thresholds are the acceptance bar of issue 3:
category accuracy >= 95 %, root-cause line accuracy >= 90 %, and no test_failure or import_error
excerpt may come out retryable (those are the PR's fault; retrying them wastes a runner).
"""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_triage.core.categories import CATEGORIES, NEVER_RETRYABLE
from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules
from ci_triage.model import Classification

CORPUS = Path(__file__).parent / "corpus"
MIN_CATEGORY_ACCURACY = 0.95
MIN_ROOT_CAUSE_ACCURACY = 0.90
MIN_PER_CATEGORY = 3
# Categories this corpus cannot cover yet: issue 10 added dependency/compile_error/lint_failure and
# relabelled the old "unknown" excerpts into them; the larger corpus being collected covers them.
NOT_YET_COVERED = frozenset({"dependency", "compile_error", "lint_failure", "unknown"})
MAX_EXCERPT_BYTES = 10_000


@dataclass(frozen=True)
class Excerpt:
    file: str
    category: str
    root_cause_line: int
    source: str
    note: str
    tags: tuple[str, ...]


def _load_labels() -> list[Excerpt]:
    document = tomllib.loads((CORPUS / "labels.toml").read_text(encoding="utf-8"))
    return [
        Excerpt(entry["file"], entry["category"], entry["root_cause_line"], entry["source"], entry["note"],
                tuple(entry.get("tags", ())))
        for entry in document["excerpt"]
    ]


LABELS = _load_labels()


def _classify(excerpt: Excerpt) -> Classification:
    raw = (CORPUS / "excerpts" / excerpt.file).read_bytes().decode("utf-8", errors="replace")
    return classify(list(parse_log(raw)), builtin_rules())


@pytest.fixture(scope="module")
def results() -> list[tuple[Excerpt, Classification]]:
    return [(excerpt, _classify(excerpt)) for excerpt in LABELS]


def test_labels_are_complete_and_every_category_is_covered():
    files = {path.name for path in (CORPUS / "excerpts").glob("*.log")}
    assert {excerpt.file for excerpt in LABELS} == files, "every excerpt has exactly one label"
    assert len(LABELS) >= 60
    for excerpt in LABELS:
        assert excerpt.category in CATEGORIES, excerpt.file
        assert excerpt.source.startswith("https://"), excerpt.file
        assert excerpt.note, excerpt.file
        data = (CORPUS / "excerpts" / excerpt.file).read_bytes()
        assert len(data) < MAX_EXCERPT_BYTES, excerpt.file
        assert 1 <= excerpt.root_cause_line <= data.count(b"\n") + 1, excerpt.file
    counts = Counter(excerpt.category for excerpt in LABELS)
    assert all(counts[category] >= MIN_PER_CATEGORY for category in CATEGORIES
               if category not in NOT_YET_COVERED), counts
    tags = Counter(tag for excerpt in LABELS for tag in excerpt.tags)
    assert tags["cascade"] >= 5 and tags["harmless_error"] >= 5, tags


def _breakdown(results: list[tuple[Excerpt, Classification]]) -> str:
    rows = ["category            n  category-ok  root-ok"]
    for category in CATEGORIES:
        mine = [(e, c) for e, c in results if e.category == category]
        category_ok = sum(c.category == e.category for e, c in mine)
        root_ok = sum(_root_line(c) == e.root_cause_line for e, c in mine)
        rows.append(f"{category:<18} {len(mine):>2}  {category_ok:>11}  {root_ok:>7}")
    misses = [
        f"  {e.file}: got {c.category} (rule {c.rule_id}) at line {_root_line(c)}, "
        f"expected {e.category} at line {e.root_cause_line}"
        for e, c in results
        if c.category != e.category or _root_line(c) != e.root_cause_line
    ]
    return "\n".join(rows + (["misses:"] + misses if misses else []))


def _root_line(classification: Classification) -> int | None:
    return classification.root_cause.line if classification.root_cause else None


def test_category_and_root_cause_accuracy(results, capsys):
    total = len(results)
    category_accuracy = sum(c.category == e.category for e, c in results) / total
    root_accuracy = sum(_root_line(c) == e.root_cause_line for e, c in results) / total
    report = (f"corpus: {total} excerpts, category accuracy {category_accuracy:.1%}, "
              f"root-cause line accuracy {root_accuracy:.1%}\n{_breakdown(results)}")
    with capsys.disabled():
        print("\n" + report)
    assert category_accuracy >= MIN_CATEGORY_ACCURACY, report
    assert root_accuracy >= MIN_ROOT_CAUSE_ACCURACY, report


def test_pr_caused_failures_are_never_retryable(results):
    wrongly_retryable = [e.file for e, c in results if e.category in NEVER_RETRYABLE and c.retryable]
    assert wrongly_retryable == []


def test_cascades_point_at_their_first_cause(results):
    """Excerpts where louder downstream errors follow the cause; each must still point at the cause."""
    cascades = [(e, c) for e, c in results if "cascade" in e.tags]
    wrong = [e.file for e, c in cascades if _root_line(c) != e.root_cause_line]
    # Held to the same bar as the whole corpus, so one hard cascade does not hide the others.
    assert len(wrong) <= len(cascades) * (1 - MIN_ROOT_CAUSE_ACCURACY), wrong
