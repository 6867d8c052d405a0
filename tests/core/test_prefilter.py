"""Hyperscan prefilters (core/logs/prefilter.py) find every line their pattern matches: the built-in
patterns' examples, and the Unicode corners where a str regex and a bytes scan could disagree."""

from __future__ import annotations

import re

import pytest

from ci_triage.core.logs.matcher import Matcher, relevant_lines
from ci_triage.core.logs.needles import pattern_needles
from ci_triage.core.logs.prefilter import common, prefilter_expression, prefiltered
from ci_triage.core.logs.rules import builtin_rules

STAMP = b"2024-01-01T00:00:00.0000000Z "


def _scan_ids(expressions: list[bytes], line: bytes) -> set[int]:
    hyperscan = pytest.importorskip("hyperscan")
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions),
                     flags=[hyperscan.HS_FLAG_PREFILTER] * len(expressions))
    found: set[int] = set()
    database.scan(line, match_event_handler=lambda index, *_: found.add(index))
    return found


def test_every_translatable_builtin_pattern_finds_its_examples():
    """Not only the patterns prefiltered today: every pattern the translation takes, so a pattern that
    gains a common needle later is covered (its examples as log lines: stamped, after a `\\r` segment)."""
    hyperscan = pytest.importorskip("hyperscan")
    cases = []
    for rule in builtin_rules().rules:
        for pattern in rule.patterns:
            expression = prefilter_expression(pattern)
            if expression is not None:
                cases.append((rule.id, pattern, expression, [e for e in rule.examples if pattern.search(e)]))
    assert len(cases) > 500
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=[expression for _, _, expression, _ in cases], ids=list(range(len(cases))),
                     elements=len(cases), flags=[hyperscan.HS_FLAG_PREFILTER] * len(cases))
    for index, (rule_id, pattern, _, examples) in enumerate(cases):
        for example in examples:
            for line in (example.encode(), STAMP + example.encode(), STAMP + b"progress 10%\r" + example.encode()):
                found: set[int] = set()
                database.scan(line, match_event_handler=lambda hit, *_: found.add(hit))
                assert index in found, (rule_id, pattern.pattern, example)


@pytest.mark.parametrize("source, text", [
    (r"(?i)kelvin scale", "\u212aelvin scale"),  # the Kelvin sign folds to k
    (r"(?i)\bMISSING\b", "m\u0131ss\u0130ng"),  # dotless i and dotted I fold to i
    (r"(?i)[a-z]+ error", "\u017fome error"),  # the long s folds to s, inside a class too
    (r"\d+ tests? failed", "\u0663 tests failed"),  # Arabic-Indic three is \d
    (r"\w+\.py:\d+: error", "caf\u00e9.py:3: error"),
    (r"\s+at line \d+", "\u00a0at line 4"),  # no-break space is \s
    (r"x.y error", "x\ufffdy error"),  # also what errors="replace" makes of an invalid byte
    (r"caf\u00e9 fails", "caf\u00e9 fails"),
    (r"^(?:FAILURES|ERRORS)!$", "FAILURES!"),
    (r"(?P<q>['\"])quoted(?P=q) value", "'quoted' value"),  # a back-reference
    (r"(?<!no )missing key", "a missing key"),
    (r"abc(?:de){2,40}f failed", "abc" + "de" * 30 + "f failed"),  # a large bound, widened
])
def test_unicode_and_syntax_corners(source, text):
    pattern = re.compile(source)
    assert pattern.search(text)
    expression = prefilter_expression(pattern)
    assert expression is not None
    for line in (text.encode(), STAMP + text.encode()):
        assert _scan_ids([expression], line) == {0}, (source, expression)
    if text == "x\ufffdy error":
        assert _scan_ids([expression], STAMP + b"x\xffy error") == {0}


def test_what_is_prefiltered():
    """Only patterns with a needle of common text, and not one that no literal leads (it costs hyperscan more
    than Python spends on its candidates)."""
    assert common(("missing", True)) and common((" error ", False)) and common(('.py", line ', False))
    assert not common((": error: ", False)) and not common(("[ERROR] ", False))
    assert prefilter_expression(re.compile(r"^(?P<code>[A-Z]{1,5}\d{2,4}) (?:\[\*\] )?.*(?i:missing)")) is None
    rules = {rule.id: rule for rule in builtin_rules().rules}
    pytype = next(p for p in rules["lint-diagnostic"].patterns if p.pattern.startswith('^File "'))
    assert prefiltered(pytype, pattern_needles(pytype)) is not None


def test_the_prefiltered_scan_classifies_as_the_needle_scan():
    pytest.importorskip("hyperscan")
    rules = builtin_rules()
    native = Matcher(rules, "hyperscan")
    assert native.prefilters and len(native.patterns_of_needle) == len(native.needles) + len(native.prefilters)
    log = "\n".join([
        "2024-01-01T00:00:00.0000000Z WARNING [config.py:1890] error_on_missing_keys is deprecated",
        '2024-01-01T00:00:00.0000000Z   File "/usr/lib/python3.11/site.py", line 1736, in _call',
        '2024-01-01T00:00:00.0000000Z File "src/app.py", line 12, in main: bad return type [bad-return-type]',
        "2024-01-01T00:00:00.0000000Z src/app.py:3:1: F401 [*] `os` imported but unused",
        "2024-01-01T00:00:00.0000000Z \x1b[31msrc/app.py:4:1: E302 expected 2 blank lines, found 1\x1b[0m",
        "2024-01-01T00:00:00.0000000Z ##[error]Process completed with exit code 1.",
    ]) + "\n"
    found = relevant_lines(log.encode(), rules, (), "hyperscan")
    expected = relevant_lines(log.encode(), rules, (), "python")
    assert [(m.rule_id, m.line.number, m.captures) for m in found.matches] == \
        [(m.rule_id, m.line.number, m.captures) for m in expected.matches]
    assert {m.line.number for m in found.matches} >= {3, 4, 5}


def test_every_builtin_pattern_gate_finds_its_examples_and_their_unframed_lines():
    """A pattern's gate (prefilter.gate_expression) is a superset: every line the pattern matches, as it is
    or unframed (framing.py), holds a match of the gate, stamped or after a `\\r` segment too."""
    from ci_triage.core.logs.framing import unframed
    from ci_triage.core.logs.prefilter import gate_expression

    gated = 0
    for rule in builtin_rules().rules:
        for pattern in rule.patterns:
            expression = gate_expression(pattern)
            if expression is None:
                continue
            gated += 1
            gate = re.compile(expression)
            for example in rule.examples:
                if not any(pattern.search(text) for text in (example, *unframed(example))):
                    continue
                for line in (example.encode(), STAMP + example.encode(), STAMP + b"progress 10%\r" + example.encode()):
                    assert gate.search(line), (rule.id, pattern.pattern, example)
    assert gated > 500


@pytest.mark.parametrize("source, gate_holds, gate_lacks", [
    # lint-diagnostic's shape: no literal but caseless words, which harmless lines hold
    (r"^(?P<code>[A-Z]{1,5}\d{2,4}) (?:\[\*\] )?(?P<e>.*(?i:missing|unused))", "F401 os imported but unused",
     "WARNING [config.py:1890] error_on_missing_keys is deprecated"),
    # a one-character repeat without bound joins two runs by one of its characters
    (r"^\s+\d+:\d+ +[A-Z]{1,5}\d{2,4} .*(?i:unused)", "  12:4  F401 'os' imported but unused", "unused: 1:2 x"),
    (r"(?i)^error\[E\d{4}\]: ", "ERROR[E0425]: cannot find value", "error[E042]: no"),
])
def test_gate_expression_shapes(source, gate_holds, gate_lacks):
    from ci_triage.core.logs.prefilter import gate_expression

    pattern = re.compile(source)
    gate = re.compile(gate_expression(pattern))
    assert pattern.search(gate_holds) and gate.search(gate_holds.encode())
    assert not gate.search(gate_lacks.encode())


def test_no_gate_where_it_would_say_no_more_than_the_literals():
    from ci_triage.core.logs.prefilter import gate_expression

    assert gate_expression(re.compile(r"Traceback \(most recent call last\):")) is None  # literals only
    assert gate_expression(re.compile(r"^.*\d+.*$")) is None  # no bounded run of three
