"""Score the classifier on the second held-out set, benchmarks/validation (see its README).

    python benchmarks/classify_validation.py [--misses]

Prints category and root-cause-line accuracy per category and overall, and how many logs of never-retryable
categories came out retryable. The set is for measuring only: no rule is ever written from it.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_triage.core.categories import NEVER_RETRYABLE  # noqa: E402
from ci_triage.core.logs.classify import classify  # noqa: E402
from ci_triage.core.logs.matcher import relevant_lines  # noqa: E402
from ci_triage.core.logs.rules import builtin_rules  # noqa: E402

SET = Path(__file__).resolve().parent / "validation"


def main() -> None:
    labels = json.loads((SET / "labels.json").read_text(encoding="utf-8"))
    rules = builtin_rules()
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # n, category ok, root ok, wrongly retryable
    misses = []
    for name, label in labels.items():
        found = classify(relevant_lines((SET / "logs" / f"{name}.log").read_bytes(), rules), rules)
        line = found.root_cause.line if found.root_cause else None
        row = per[label["category"]]
        category_ok, root_ok = found.category == label["category"], line == label["root_line"]
        row[0] += 1
        row[1] += category_ok
        row[2] += root_ok
        row[3] += label["category"] in NEVER_RETRYABLE and found.retryable
        if not (category_ok and root_ok):
            misses.append(f"  {name}: got {found.category} at line {line}, labelled {label['category']} "
                          f"at line {label['root_line']}")
    print(f"{'category':<19} {'n':>3}  {'category-ok':>11}  {'root-ok':>7}")
    for category in sorted(per):
        n, category_ok, root_ok, _ = per[category]
        print(f"{category:<19} {n:>3}  {category_ok:>11}  {root_ok:>7}")
    total = [sum(row[i] for row in per.values()) for i in range(4)]
    print(f"{'all':<19} {total[0]:>3}  {total[1] / total[0]:>10.1%}  {total[2] / total[0]:>7.1%}")
    never = sum(per[c][0] for c in NEVER_RETRYABLE if c in per)
    print(f"code failures called retryable: {total[3]} of {never}")
    if "--misses" in sys.argv:
        print("misses:", *misses, sep="\n")


if __name__ == "__main__":
    main()
