"""The second held-out set (benchmarks/validation): complete labels, and no rule written from it."""

import json
import re
import subprocess
import sys
from pathlib import Path

from ci_triage.core.logs.rules import builtin_rules

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "benchmarks" / "validation"
_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z ")


def test_every_log_has_one_label_with_a_line_inside_it():
    labels = json.loads((SET / "labels.json").read_text(encoding="utf-8"))
    logs = {path.stem: path for path in (SET / "logs").glob("*.log")}
    assert set(labels) == set(logs)
    for name, label in labels.items():
        lines = logs[name].read_bytes().count(b"\n") + 1
        assert 1 <= label["root_line"] <= lines or label["category"] == "unknown", name


def test_no_rule_example_is_a_line_of_the_set():
    """Examples and near misses are where a rule written from these logs would show: none may be one of their
    lines (short lines, which any log may hold, aside), but those the rules held when the set was made (the
    tools' fixed messages, which both quote: known_overlap.json)."""
    lines = set()
    for path in (SET / "logs").glob("*.log"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = _STAMP.sub("", line).strip()
            if len(line) >= 40:
                lines.add(line)
    known = set(json.loads((SET / "known_overlap.json").read_text(encoding="utf-8"))["examples"])
    quoted = [text for rule in builtin_rules().rules for text in rule.examples + rule.near_misses
              if text.strip() in lines and text not in known]
    assert quoted == []


def test_the_scoring_script_runs():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "classify_validation.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "code failures called retryable" in done.stdout
