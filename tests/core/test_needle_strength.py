"""The built-in rules' needles keep the scan selective: on the throughput benchmark's noise (what a
vLLM-on-NPU job prints while installing and testing, with the words `error`, `missing`, `warning` in
harmless places), only a small share of lines are candidates that Python's `re` must look at. A rule whose
only needle is a bare common word (`error`) made 24% of lines candidates and halved classify's speed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ci_triage.core.logs.matcher import Matcher
from ci_triage.core.logs.rules import builtin_rules

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from classify_throughput import generate_log  # noqa: E402

MAX_CANDIDATE_SHARE = 0.15  # measured 0.075 after the needle fix of 2026-12-03; 0.24 before it


def test_few_noise_lines_are_candidates(tmp_path):
    path = tmp_path / "noise.log"
    generate_log(path, 3_000_000)
    data = path.read_bytes()
    pytest.importorskip("hyperscan")  # the pure-Python scanner reports coarser candidates by design
    matcher = Matcher(builtin_rules(), "hyperscan")
    candidates = sum(1 for _ in matcher.candidates(data, 0, len(data)))
    share = candidates / data.count(b"\n")
    assert share < MAX_CANDIDATE_SHARE, f"{share:.1%} of noise lines are candidates"


MAX_DECODED_SHARE = 0.06  # measured 0.028 with the required-literal check of 2026-12-04 (0.074 without it)


def test_few_noise_lines_are_decoded(tmp_path):
    """Of the candidates, the lines that hold none of the required literals of any pattern they could
    match are not decoded: on the noise log, `.py", line ` frames and `error` words mostly."""
    from ci_triage.core.logs.matcher import WINDOW
    from ci_triage.core.logs.needles import lacks_all

    path = tmp_path / "noise.log"
    generate_log(path, 3_000_000)
    data = path.read_bytes()
    pytest.importorskip("hyperscan")
    matcher = Matcher(builtin_rules(), "hyperscan")
    decoded = 0
    for start, end, needles in matcher.candidates(data, 0, len(data)):
        plan = matcher._plan(needles)
        if plan and end - start <= WINDOW and matcher.marker_ids.isdisjoint(needles):
            check = matcher.ruled_out(plan)
            if check is not None and lacks_all(check[0], data[start:end], check[1]):
                continue
        decoded += 1
    share = decoded / data.count(b"\n")
    assert share < MAX_DECODED_SHARE, f"{share:.1%} of noise lines are decoded"


def test_every_example_holds_the_required_literals_of_a_pattern_that_matches_it():
    """The required literals are exact: a line a pattern matches holds all of them (with a timestamp
    in front too, which the check skips). A pattern may match the line's unframed text (framing.py), a
    suffix of the line, so the line holds its literals as well."""
    from ci_triage.core.logs.framing import unframed
    from ci_triage.core.logs.needles import lacks_all, pattern_required

    for rule in builtin_rules().rules:
        for example in rule.examples:
            matching = [pattern for pattern in rule.patterns
                        if any(pattern.search(text) for text in (example, *unframed(example)))]
            assert matching, (rule.id, example)
            for pattern in matching:
                required = (tuple(text.encode() for text in pattern_required(pattern)),)
                for line in (example.encode(), b"2024-01-01T00:00:00.0000000Z " + example.encode()):
                    assert not lacks_all(required, line), (rule.id, pattern.pattern, example)


@pytest.mark.parametrize("source, required", [
    (r"foo(?:bar|baz)qux(?!neg)", ("fooba", "qux")),  # re factors the branches (fooba[rz]); no look-ahead
    (r"(?i)abc(?-i:DEF)", ("DEF",)),  # caseless literals are not required as bytes
    (r"a(?:xyz)+b", ("xyz", "a", "b")),
    (r"a(?:xyz)*b", ("a", "b")),
    (r"(?P<x>left) \d+ (?:right)?", ("left", " ")),  # not an optional part
])
def test_required_literals(source, required):
    import re

    from ci_triage.core.logs.needles import _analyse

    assert set(_analyse(re.compile(source))[1]) == set(required)
