"""Score the classifier on the second held-out set, benchmarks/validation (see its README).

    python benchmarks/classify_validation.py [--misses]

Prints category and root-cause-line accuracy per category and overall, and how many logs of never-retryable
categories came out retryable, with the corpus's own scoring code (tests/corpus_eval.py). The set is for
measuring only: no rule is ever written from it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.corpus_eval import Excerpt, accuracy, breakdown, score  # noqa: E402

SET = Path(__file__).resolve().parent / "validation"


def load() -> list[Excerpt]:
    labels = json.loads((SET / "labels.json").read_text(encoding="utf-8"))
    return [Excerpt(f"{name}.log", label["category"], label["root_line"], "validation", "", "", label["why"], ())
            for name, label in labels.items()]


def main() -> None:
    scored = score(load(), directory=SET / "logs")
    print(breakdown(scored, with_misses="--misses" in sys.argv))
    category_rate, root_rate = accuracy(scored)
    print(f"category {category_rate:.1%}  root-cause line {root_rate:.1%}  code failures called retryable: "
          f"{sum(s.wrongly_retryable for s in scored)}")


if __name__ == "__main__":
    main()
