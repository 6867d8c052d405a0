"""Accuracy of the built-in rules on the labelled corpus of real CI log excerpts (tests/corpus).

The corpus is split by source repository into `tune` (rules may be written from it) and `test` (held
out: no rule or rule example is ever written from it; see tests/corpus/README.md). The figures that
matter are the test split's. `benchmarks/classify_accuracy.py` prints them per category.

ACCEPTANCE is the bar the classifier is built to (category >= 95 %, root-cause line >= 90 % on the
test split). FLOOR is what the built-in rules measurably reach today on each split: a ratchet, so
accuracy cannot silently regress. Raise FLOOR when the rules improve; never lower it to pass a rule change
(it is re-measured, and may go down, only when the corpus itself changes; the commit says so).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.corpus_eval import (
    CONTAMINATED,
    CORPUS,
    LABEL_CATEGORIES,
    SPLITS,
    accuracy,
    breakdown,
    expected_split,
    first_corpus_repositories,
    load_labels,
    score,
)

ACCEPTANCE = {"category": 0.95, "root_cause": 0.90}
# Re-measured 2026-12-03 after the test split was decontaminated (13 excerpts of repositories rule writers had
# seen moved to tune) and 71 fresh excerpts were added: the data changed, not the rules, so the floors went
# down (tune 99.6 %/99.3 % -> 96.4 %/94.8 %, test 81.9 %/81.9 % -> 80.3 %/80.3 %, same built-in rules).
# Re-measured 2026-12-03 (issue 10 item 2, the rules helper): 5 test excerpts of 4 repositories its searches
# surfaced moved to tune (CONTAMINATED) and 4 new tune excerpts were added; with the same rules that split measured
# test 81.2 %/81.2 %; the rewritten rule families then measured tune 99.4 %/98.1 % (cascades 97.5 %), test
# 86.1 %/84.3 % (`python benchmarks/classify_accuracy.py`). Round 2 the same day: 2 lint test excerpts whose notes a
# grep printed moved to tune (CONTAMINATED); tune 99.4 %/98.1 %, test 88.2 %/86.9 % (221 excerpts).
# 2026-12-05 (fifth round): 47 test excerpts moved to tune (CONTAMINATED), 88 rule-blind ones joined test; on
# the final 363 test excerpts the rules before the round measured 92.3 %/89.5 %, after it 92.6 %/89.3 %; tune 541,
# 100.0 %/99.1 %.
# 2026-12-05 (sixth round, no rule changed): a log that never says a step failed is anchored at its end, and
# of the scorer's five best lines the one resembling a family of rules' examples is the root cause; test
# 92.6 %/89.3 % -> 92.6 %/91.7 % (no parameter was chosen from the test split), tune unchanged.
# 2026-12-05 (no rule changed): a blind audit of the test labels (corpus README, "The label audit") changed
# 7 categories and 6 root lines that broke the documented conventions; test 92.6 %/91.7 % -> 94.2 %/93.4 %.
# 2026-12-06: seven validation sweeps of fresh logs widened the rules, pip's retry notice yields to a later code
# failure, and the fast path gives context lines their own step; test 94.2 %/93.4 % -> 94.2 %/93.7 % (measured once,
# after the merge), tune unchanged.
# 2026-12-06 (second round): fifteen more sweeps (1,024 fresh logs), steps that passed or ran after the failed one no
# longer give the cause, more CI systems' framing; test 94.2 %/93.7 % -> 94.8 %/94.2 % (measured once, after the
# merges), tune unchanged. Category is still short of the acceptance figure (95 %).
# 2026-12-06 (fifth and sixth rounds of sweeps, fourteen sweeps, 1,400 fresh logs): frameworks outside pytest, CI systems'
# framing, ML interplay, builds and packaging, noisy whole-job logs, accelerator/memory/disk wording, imports and
# resolution beyond pip, timeouts; test 94.8 %/94.2 % -> 95.0 %/94.5 % (344 and 342 of 362; measured after the
# merges, and three more times after the review's fixes: the same counts), tune unchanged. The test floor is now the acceptance figure for category: one excerpt lost fails it.
FLOOR = {
    "tune": {"category": 0.99, "root_cause": 0.99},
    "test": {"category": 0.95, "root_cause": 0.94},
    "tune cascades": {"root_cause": 0.97},
}
MIN_TEST_SHARE = 0.40
MAX_EXCERPT_BYTES = 10_000

LABELS = load_labels()


@pytest.fixture(scope="module")
def scored():
    return {split: score([e for e in LABELS if e.split == split]) for split in SPLITS}


def test_labels_are_complete_and_the_split_is_by_repository():
    files = {path.name for path in (CORPUS / "excerpts").glob("*.log")}
    assert {excerpt.file for excerpt in LABELS} == files, "every excerpt has exactly one label"
    for excerpt in LABELS:
        assert excerpt.category in LABEL_CATEGORIES, excerpt.file
        assert excerpt.split in SPLITS, excerpt.file
        assert excerpt.source.startswith("https://"), excerpt.file
        assert excerpt.note and excerpt.repository, excerpt.file
        data = (CORPUS / "excerpts" / excerpt.file).read_bytes()
        assert len(data) < MAX_EXCERPT_BYTES, excerpt.file
        assert 1 <= excerpt.root_cause_line <= data.count(b"\n") + 1, excerpt.file
    by_split = {split: {e.repository.lower() for e in LABELS if e.split == split} for split in SPLITS}
    assert not by_split["tune"] & by_split["test"], "a repository's excerpts all sit in one split"
    counts = Counter(e.split for e in LABELS)
    assert counts["test"] / len(LABELS) >= MIN_TEST_SHARE, counts


def test_every_repository_sits_in_the_split_the_rule_gives_it():
    """The split is fixed by the repository's name (README), not chosen per excerpt; the only exception
    is a repository a rule writer has seen (CONTAMINATED), which is `tune`."""
    first = first_corpus_repositories(LABELS)
    assert len([e for e in LABELS if e.repository.lower() in first]) >= 76
    wrong = [(e.file, e.repository, e.split) for e in LABELS if e.split != expected_split(e.repository, first)]
    assert wrong == []
    assert CONTAMINATED.keys() <= {e.repository.lower() for e in LABELS}, "an exception names a corpus repository"
    assert all(reason for reason in CONTAMINATED.values())


def test_no_rule_file_cites_a_test_repository():
    """A rule or example taken from a held-out repository's threads would make its figures a tuning
    measure: such a repository must move to CONTAMINATED (and so to `tune`), never stay in `test`."""
    test_repositories = {e.repository.lower() for e in LABELS if e.split == "test"}
    rules = Path(__file__).resolve().parent.parent / "ci_triage" / "rules"
    cited = {(match.lower().rstrip("."), path.name) for path in rules.rglob("*.toml")
             for match in re.findall(r"github\.com/([\w.-]+/[\w.-]+)", path.read_text(encoding="utf-8"))}
    assert [(repository, name) for repository, name in sorted(cited) if repository in test_repositories] == []


@pytest.mark.parametrize("split", SPLITS)
def test_accuracy_holds_its_floor(scored, split, capsys):
    category_rate, root_rate = accuracy(scored[split])
    # Which test excerpts miss is never printed, not even when the floor fails: a rule writer reading the
    # failure would learn the held-out split (two sweep helpers saw ten names that way on 2026-12-06).
    # Nor are the test split's figures printed on a pass: sweep helpers run this test after each rule change, and a
    # figure that moves with their changes is feedback from the held-out split (benchmarks/classify_accuracy.py prints
    # them, for the measurement made once at the end of a round).
    report = f"{split} split:\n{breakdown(scored[split], with_misses=split == 'tune')}" if split == "tune" else (
        f"test split below its floor ({FLOOR[split]}); measure with `python benchmarks/classify_accuracy.py`")
    if split == "tune":
        with capsys.disabled():
            print("\n" + report.split("misses:")[0])
    assert category_rate >= FLOOR[split]["category"], report
    assert root_rate >= FLOOR[split]["root_cause"], report


def test_code_failures_are_never_called_retryable(scored):
    wrong = [s.excerpt.file if split == "tune" else f"a {split} excerpt" for split in SPLITS for s in scored[split]
             if s.wrongly_retryable]
    assert wrong == []


def test_cascades_point_at_their_first_cause(scored):
    """Excerpts where louder downstream errors follow the cause must still point at the cause."""
    cascades = [s for s in scored["tune"] if "cascade" in s.excerpt.tags]
    right = sum(s.root_ok for s in cascades)
    assert right >= len(cascades) * FLOOR["tune cascades"]["root_cause"], [s.excerpt.file for s in cascades if not s.root_ok]
