"""Property tests: random and adversarial job logs through the parser and the matcher.

No exception may escape, nothing may take pathologically long, and the fast path (one scan of the
whole log, then regexes on the lines holding a needle) must equal the straightforward per-line path.
"""

import importlib.util
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules
from tests.core.test_matcher import straightforward

ENGINES = ["python", pytest.param("hyperscan", marks=pytest.mark.skipif(
    importlib.util.find_spec("hyperscan") is None, reason="hyperscan has no wheel for this platform"))]
RULES = builtin_rules()
SNIPPETS = sorted({text for rule in RULES.rules for text in rule.examples + rule.near_misses} | {
    "##[group]Run pytest -x", "##[endgroup]", "##[error]Process completed with exit code 1.", "##[warning]slow",
    "Traceback (most recent call last):", '  File "/home/runner/work/r/r/m.py", line 1, in f', "",
    "Requirement already satisfied: torch", "error_count=0", "E   assert 1 == 2",
})
JUNK = st.sampled_from(["\x1b[31m", "\x1b[0m", "\x1b[36;1m", "\r", "\x1b", "\ufffd", "\ufeff", "é", "\t", "\x00"])
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def stamped_line(draw):
    text = draw(st.sampled_from(SNIPPETS))
    if draw(st.booleans()) and text:  # cut the line open and put junk inside, or mangle it slightly
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.one_of(JUNK, st.text(max_size=3))) + text[at:]
    prefix = draw(st.sampled_from(["2024-01-01T00:00:0%d.1234567Z " % draw(st.integers(0, 9)), ""]))
    return prefix + text + draw(st.sampled_from(["", "\r"]))


logs = st.lists(stamped_line(), max_size=40).map(lambda lines: "\n".join(lines)) | st.text(max_size=300)


def as_raw(text: str, data) -> str | bytes:
    if data.draw(st.booleans(), label="as bytes"):
        raw = text.encode("utf-8", "surrogatepass")
        if data.draw(st.booleans(), label="corrupt"):
            at = data.draw(st.integers(0, len(raw)))
            raw = raw[:at] + data.draw(st.binary(max_size=4)) + raw[at:]
        return raw
    return text


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(text=logs, data=st.data())
def test_fast_path_equals_the_per_line_path(engine, text, data):
    raw = as_raw(text, data)
    reference_text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    full = list(parse_log(reference_text))
    selected = relevant_lines(raw, RULES, engine=engine)
    assert selected.matches == straightforward(full, RULES)
    assert classify(selected, RULES) == classify(full, RULES)


@SETTINGS
@given(data=st.binary(max_size=500) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_bytes_parse_like_their_replacement_decoding(data):
    assert list(parse_log(data)) == list(parse_log(data.decode("utf-8", "replace")))


@SETTINGS
@given(text=st.text(max_size=300))
def test_any_str_parses_and_keeps_line_numbers(text):
    lines = list(parse_log(text))
    physical = text.removeprefix("\ufeff").split("\n")
    if physical[-1] == "":
        physical.pop()
    # Every physical line has one LogLine per `\r`-separated segment (at least one), in order.
    numbers = [line.number for line in lines]
    assert numbers == sorted(numbers) and sorted(set(numbers)) == list(range(1, len(physical) + 1))
    assert all("\n" not in line.text and "\r" not in line.text for line in lines)


def _timed(raw, engine="auto"):
    started = time.perf_counter()
    lines = relevant_lines(raw, RULES, engine=engine)
    classify(lines, RULES)
    return time.perf_counter() - started


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name, raw", ids=lambda value: value if isinstance(value, str) else "", argvalues=[
    ("10 MB line, no newline", b"x" * 10_000_000),
    ("10 MB line of needles", b"FAILED assert " * 700_000),
    ("only ANSI codes", b"\x1b[31m\x1b[0m" * 1_000_000),
    ("carriage returns only", b"progress 50%\r" * 700_000),
    ("binary junk", bytes(range(256)) * 40_000),
    ("invalid UTF-8", b"\xff\xfe\xc3(" * 2_500_000),
])
def test_adversarial_logs_finish_quickly(engine, name, raw):
    # A hang guard, not a speed target (that lives in benchmarks/classify_throughput.py): quiet, the
    # worst of these takes ~5 s on 2 cores; a backtracking blow-up or a per-window rescan takes minutes.
    assert _timed(raw, engine) < 30, name


def test_a_huge_line_keeps_its_number_and_the_lines_after_it():
    raw = b"2024-01-01T00:00:00.0000000Z " + b"y" * 5_000_000 + b"\nFAILED tests/a.py::test_b\n"
    lines = relevant_lines(raw, RULES)
    assert [(m.line.number, m.rule_id) for m in lines.matches] == [(2, "pytest-failed-test")]
    assert lines.matches[0].line.timestamp == "2024-01-01T00:00:00.0000000Z"
