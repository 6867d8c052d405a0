"""Issue 10.5: no cap on matches, `\r` segments are lines, a line of any length is read.

Each test builds a log whose real cause the classifier used to miss (at b3c93e9), and checks the
fast path (`relevant_lines`, both scan engines) and the per-line path (`parse_log`) agree on it.
"""

import importlib.util

import pytest

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules

ENGINES = ["python", pytest.param("hyperscan", marks=pytest.mark.skipif(
    importlib.util.find_spec("hyperscan") is None, reason="hyperscan has no wheel for this platform"))]
STAMP = "2024-01-01T00:00:00.0000000Z "
RULES = builtin_rules()


def both_paths(raw: str, engine: str):
    fast = classify(relevant_lines(raw.encode(), RULES, engine=engine), RULES)
    full = classify(list(parse_log(raw)), RULES)
    assert fast == full
    return fast


@pytest.mark.parametrize("engine", ENGINES)
def test_many_test_failures_do_not_hide_a_later_full_disk(engine):
    lines = [f"{STAMP}FAILED tests/test_{i}.py::test_case - assert 0" for i in range(2100)]
    lines.append(f"{STAMP}OSError: [Errno 28] No space left on device")
    result = both_paths("\n".join(lines) + "\n", engine)
    assert (result.category, result.retryable, result.root_cause.line) == ("disk_full", True, 2101)
    assert len(result.failed_tests) == 1000  # a bounded number of matches per rule is kept


@pytest.mark.parametrize("engine", ENGINES)
def test_an_oom_after_a_long_progress_bar_on_one_physical_line_is_found(engine):
    bar = "".join(f"Epoch 1: {i:3d}%|{'#' * (i // 10):<10}| {i}/100 [00:{i:02d}<00:00, 3.2it/s]\r" for i in range(101))
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    raw = f"{STAMP}start\n{STAMP}{bar}{oom}\n{STAMP}##[error]Process completed with exit code 1.\n"
    assert len(bar) > 4096
    result = both_paths(raw, engine)
    assert (result.category, result.root_cause.line, result.root_cause.text) == ("accelerator_oom", 2, oom)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_line_anchored_rule_matches_a_carriage_return_segment(engine):
    raw = f"{STAMP}collecting 10%\rcollecting 90%\rFAILED tests/test_a.py::test_x - assert 0\n"
    result = both_paths(raw, engine)
    assert (result.category, result.failed_tests) == ("test_failure", ("tests/test_a.py::test_x",))
    assert result.root_cause.text == "FAILED tests/test_a.py::test_x - assert 0"


@pytest.mark.parametrize("engine", ENGINES)
def test_text_past_4096_characters_of_a_line_is_read(engine):
    raw = f"{STAMP}{'x' * 10_000} No space left on device\n"
    assert both_paths(raw, engine).category == "disk_full"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_match_across_a_window_boundary_is_found(engine):
    # The needle straddles the 4096th character: windows overlap by half.
    raw = f"{STAMP}{'x' * 4085} No space left on device and then a lot more {'y' * 9000}\n"
    assert both_paths(raw, engine).category == "disk_full"


def test_segments_keep_their_physical_line_number():
    lines = list(parse_log(f"{STAMP}a\rb\r\n{STAMP}c\n"))
    assert [(line.number, line.text) for line in lines] == [(1, "a"), (1, "b"), (2, "c")]
