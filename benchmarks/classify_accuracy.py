"""Classifier accuracy per category on each split of the labelled corpus (tests/corpus).

    python benchmarks/classify_accuracy.py [--misses] [--split tune|test]
        --misses lists the tune split's misses only; --split scores one split (rule writers iterate
        on `--split tune`, so the held-out figures are read once, after a change, not climbed on)

The `test` split is held out: its figures are the ones to quote. The bar (issue 10): category >= 95 %,
root-cause line >= 90 %, and no code failure called retryable. tests/test_corpus.py holds the figures
to their recorded floor with the same scoring code (tests/corpus_eval.py).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.corpus_eval import SPLITS, accuracy, breakdown, load_labels, score  # noqa: E402


def main() -> None:
    labels = load_labels()
    misses = "--misses" in sys.argv
    only = sys.argv[sys.argv.index("--split") + 1] if "--split" in sys.argv[:-1] else None
    if only is not None and only not in SPLITS:
        sys.exit(f"error: --split takes one of {', '.join(SPLITS)}, not {only!r}")
    for split in SPLITS if only is None else (only,):
        started = time.perf_counter()
        scored = score([e for e in labels if e.split == split])
        elapsed = time.perf_counter() - started
        category_rate, root_rate = accuracy(scored)
        retryable = sum(s.wrongly_retryable for s in scored)
        print(f"== {split} split: {len(scored)} excerpts from {len({s.excerpt.repository for s in scored})} "
              f"repositories, classified in {elapsed:.2f} s")
        # Misses are listed for the tune split only: the test split's excerpts are never read to write
        # rules, so naming which ones fail would only invite it.
        print(breakdown(scored, with_misses=misses and split == "tune"))
        print(f"category {category_rate:.1%}  root-cause line {root_rate:.1%}  code failures called retryable: "
              f"{retryable}\n")


if __name__ == "__main__":
    main()
