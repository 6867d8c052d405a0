"""The multi-literal prefilter: needles, engines, and equality with the per-line path."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ci_triage.core.logs.classify import classify, find_matches
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import (
    CASE_PARTNERS,
    KEEP_PER_RULE,
    WINDOW,
    Matcher,
    matcher_for,
    pattern_needles,
    relevant_lines,
    rule_needles,
)
from ci_triage.core.logs.rules import builtin_rules, parse_rules
from ci_triage.model import RuleMatch

ENGINES = ["python", pytest.param("hyperscan", marks=pytest.mark.skipif(
    importlib.util.find_spec("hyperscan") is None, reason="hyperscan has no wheel for this platform"))]
STAMP = "2024-01-01T00:00:00.0000000Z "
ROOT = Path(__file__).resolve().parents[2]


def _windowed(rule, text):
    """`Rule.match`, on each WINDOW-character window (overlapping by half) of a longer line."""
    if len(text) <= WINDOW:
        return rule.match(text)
    for lo in range(0, max(len(text) - WINDOW // 2, 1), WINDOW // 2):
        hi = min(lo + WINDOW, len(text))
        for pattern in rule.patterns:
            found = pattern.search(text, lo, hi)
            if found:
                if any(excluded.search(text, lo, hi) for excluded in rule.exclude):
                    break
                return {name: value for name, value in found.groupdict().items() if value is not None}
    return None


def straightforward(lines, rule_set):
    """The per-line semantics the fast path must reproduce: every rule on every line, in priority
    order; the first KEEP_PER_RULE matches of each rule are kept."""
    matches, per_rule = [], {}
    for line in lines:
        for rule in rule_set.rules:
            captures = _windowed(rule, line.text)
            if captures is not None:
                if per_rule.get(rule.id, 0) < KEEP_PER_RULE:
                    per_rule[rule.id] = per_rule.get(rule.id, 0) + 1
                    matches.append(RuleMatch(rule.id, rule.category, rule.retryable, rule.priority, line, captures))
                break
    return matches


def needles_of(source):
    return pattern_needles(re.compile(source))


def test_needles_are_the_literals_every_match_contains():
    assert needles_of(r"ReadTimeoutError\(.*Read timed out") == {("ReadTimeoutError(", False)}
    assert needles_of(r"^FAILED (?P<test>\S+::\S+)") == {("FAILED ", False)}
    # One needle per alternative of a branch; a group's literal counts.
    assert needles_of(r"(?:CUDA|NPU) out of memory") == {(" out of memory", False)}
    assert needles_of(r"(?P<reason>Segmentation fault|Aborted) x") == {("Segmentation fault", False), ("Aborted", False)}
    assert needles_of(r"(?i)no space left") == {("no space left", True)}


def test_patterns_without_a_required_literal_have_no_needles():
    assert needles_of(r"^\d+ \w+$") is None
    assert needles_of(r"(?:abc)?\d+") is None
    assert needles_of(r"(?:timeout|ab)") is None  # "ab" is too short to filter anything


def test_case_partners_table_matches_the_re_module():
    everything = "".join(chr(u) for u in range(128, 0x110000) if not 0xD800 <= u < 0xE000)
    partners: dict[str, str] = {}
    for char in re.findall(r"(?i)[\x00-\x7f]", everything):
        ascii_letter = next(a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch("(?i)" + a, char))
        partners[ascii_letter] = partners.get(ascii_letter, "") + char
    assert {k: "".join(sorted(v)) for k, v in partners.items()} == {k: "".join(sorted(v)) for k, v in CASE_PARTNERS.items()}


def test_every_builtin_rule_has_needles_so_the_fast_path_applies():
    missing = [rule.id for rule in builtin_rules().rules if rule_needles(rule) is None]
    assert not missing, f"rules with no required literal force a regex run on every line: {missing}"


@pytest.mark.parametrize("engine", ENGINES)
def test_each_builtin_example_is_found_and_each_near_miss_is_not(engine):
    rules = builtin_rules()
    for rule in rules.rules:
        for example in rule.examples:
            lines = relevant_lines((STAMP + example + "\n").encode(), rules, engine=engine)
            assert [m.rule_id for m in lines.matches] == [m.rule_id for m in straightforward(list(parse_log(STAMP + example)), rules)]
        for near_miss in rule.near_misses:
            found = relevant_lines(STAMP + near_miss + "\n", rules, engine=engine).matches
            assert rule.id not in {m.rule_id for m in found}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("line", [
    "torch.distributed.\x1b[1mDistNetwork\x1b[0mError: The server socket has failed to listen on any local "
    "network address. port: 1, useIpv6: false, code: -98, name: [::]:1, message: address already in use",
    "\x1b[31mFAIL\x1b[0mED tests/test_a.py::test_x",
    "OSError: [Errno 98] ADDRESS ALREADY IN USE".replace("ADDRESS ALREADY IN USE", "bind() to 0.0.0.0:80 failed (98: addreſſ already in uſe)"),
    # OSC 8 hyperlinks around a file's name (biome's and newer cargo's coloured output), ended by ST and by BEL
    "\x1b]8;;file:///w/src/app.py\x1b\\src/app.py\x1b]8;;\x1b\\:4:1: E302 expected 2 blank lines, found 1",
    "FAILED \x1b]8;;file:///w/tests/test_a.py\x07tests/test_a.py\x1b]8;;\x07::test_x - assert 1 == 2",
])
def test_needles_split_by_colour_codes_are_found(engine, line):
    raw = f"{STAMP}noise\n{STAMP}{line}\r\n{STAMP}more noise\n"
    rules = builtin_rules()
    expected = straightforward(list(parse_log(raw)), rules)
    assert expected, "the example must match on the per-line path"
    assert relevant_lines(raw, rules, engine=engine).matches == expected
    assert relevant_lines(raw.encode(), rules, engine=engine).matches == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_a_line_with_more_needles_than_the_scan_reports_is_checked_against_every_rule(engine):
    # The hyperscan scan stops reporting a line's needles after 16 hits; a rule whose needle
    # comes after those (here port-in-use after 20 "assert") must still be tried on the line. The
    # line must not open with "assert": a line that does is a test's own assertion, no port clash.
    raw = f"{STAMP}noise\n{STAMP}worker: {'assert ' * 20}OSError: [Errno 98] Address already in use\n"
    rules = builtin_rules()
    expected = straightforward(list(parse_log(raw)), rules)
    assert expected, "the line must match on the per-line path"
    assert relevant_lines(raw.encode(), rules, engine=engine).matches == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_classification_from_the_selected_lines_equals_the_full_one(engine):
    body = [f"{STAMP}pip noise {i}" for i in range(900)]
    body[500:503] = [f"{STAMP}Traceback (most recent call last):",
                     f'{STAMP}  File "/home/runner/work/r/r/pkg/mod.py", line 3, in f',
                     f"{STAMP}ModuleNotFoundError: No module named 'veomni'"]
    body.append(f"{STAMP}##[error]Process completed with exit code 1.")
    raw = "\ufeff" + "\n".join(body) + "\n"
    rules = builtin_rules()
    selected = relevant_lines(raw, rules, engine=engine)
    assert len(selected) < 901  # two matches with 400 lines of context each, not every line
    full = classify(list(parse_log(raw)), rules)
    assert classify(selected, rules) == full
    assert full.frames and full.rule_id == "python-import-error"


def test_unknown_failures_keep_their_first_error_line():
    raw = f"{STAMP}ok\n{STAMP}##[error]Something odd\n{STAMP}##[error]Process completed with exit code 2.\n"
    rules = builtin_rules()
    assert classify(relevant_lines(raw, rules), rules) == classify(list(parse_log(raw)), rules)


def test_a_rule_without_needles_is_tried_on_every_line():
    rules = parse_rules('''
[[rule]]
id = "digits"
category = "crash"
patterns = ['^\\d+$']
examples = ["123"]
near_misses = ["a1"]
''')
    raw = f"{STAMP}abc\n{STAMP}42\n"
    assert matcher_for(rules).exhaustive
    assert [m.line.number for m in relevant_lines(raw, rules).matches] == [2]


def test_lines_selected_for_one_rule_set_are_refused_for_another():
    other = parse_rules('''
[[rule]]
id = "boom"
category = "crash"
patterns = ['boom happened']
examples = ["boom happened"]
near_misses = ["boom"]
''')
    lines = relevant_lines(f"{STAMP}boom happened\n", other)
    with pytest.raises(ValueError):
        find_matches(lines, builtin_rules())


def test_list_path_skips_rules_by_needle_but_gives_the_same_matches():
    rules = builtin_rules()
    lines = [line for rule in rules.rules for line in parse_log("\n".join(rule.examples + rule.near_misses))]
    assert Matcher(rules, "python").match_lines(lines) == straightforward(lines, rules)


def test_benchmark_script_runs_on_a_tiny_log():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "classify_throughput.py"), "--size-mb", "1",
                           "--repeat", "1", "--small-count", "5", "--small-kb", "20", "--big-mb", "2"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ratio (ci-triage / grep throughput), in process:" in done.stdout
    assert "whole process" in done.stdout and "peak private memory" in done.stdout
    assert "port_in_use (torch-dist-eaddrinuse)" in done.stdout


def test_benchmark_grep_baseline_leaves_wide_bounds_open_and_keeps_the_rest():
    """grep's DFA spells a bound like {1,500} out (a second per small log); the baseline opens it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("classify_throughput", ROOT / "benchmarks" / "classify_throughput.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.to_ere(r"error.{1,500}failed") == "error.{1,}failed"
    assert module.to_ere(r"code \d{2,4}") == "code [0-9]{2,4}"
    assert module.to_ere(r"x{3,19}y{20,20}") == "x{3,19}y{20,}"


@pytest.mark.parametrize("seed", range(40))
def test_long_line_windows_holding_needles_are_those_a_window_by_window_check_finds(seed):
    """Jumping from needle to needle visits exactly the windows a check of every window would."""
    import random

    from ci_triage.core.logs.matcher import _windows_with_needles

    rng = random.Random(seed)
    needles = re.compile("FAILED |No space left")
    parts = []
    for _ in range(rng.randrange(1, 12)):
        parts.append("x" * rng.randrange(0, 3 * WINDOW))
        parts.append(rng.choice(["FAILED ", "No space left", "FAIL"]))
    text = "".join(parts) + "y" * rng.randrange(WINDOW, 2 * WINDOW)
    step = WINDOW // 2
    expected = [(lo, min(lo + WINDOW, len(text))) for lo in range(0, max(len(text) - step, 1), step)
                if needles.search(text, lo, min(lo + WINDOW, len(text)))]
    assert list(_windows_with_needles(text, needles)) == expected


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("cause", [
    "No Space Left On Device",  # a caseless needle, in another case than the rule's
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "No \u017fpace left on device",  # a non-ASCII letter re.IGNORECASE folds to s
])
def test_a_long_line_is_matched_where_only_its_own_needles_are(engine, cause):
    """On a line longer than WINDOW only the needles the line holds pick windows and patterns (a
    line full of one rule's needles no longer costs every caseless rule a regex crawl through it);
    the answer is the window-by-window check's, whatever the case of the needle."""
    rules = builtin_rules()
    text = "FAILED assert " * (3 * WINDOW // 14) + cause + " x" * WINDOW
    line = next(iter(parse_log(text)))
    expected = straightforward([line], rules)
    assert expected, "the cause must match in the window-by-window check"
    assert relevant_lines(text.encode(), rules, engine=engine).matches == expected


# Found by hypothesis (test_fast_path_equals_the_per_line_path): the lines the scorer reads above an anchor took
# the anchor's step, so a root cause printed before the first `##[group]Run ` was reported in that group's step.
_BEFORE_ANY_STEP = ('2024-01-01T00:00:00.1234567Z     // avoids "Too long with no output (exceeded 10m0s): context '
                    'deadline exceeded" from CircleCi\n2024-01-01T00:00:00.1234567Z ##[group]Run pytest -x')


@pytest.mark.parametrize("engine", ENGINES)
def test_a_root_cause_above_the_first_step_has_no_step_on_the_fast_path(engine):
    rules = builtin_rules()
    fast = classify(relevant_lines(_BEFORE_ANY_STEP, rules, engine=engine), rules)
    assert fast == classify(list(parse_log(_BEFORE_ANY_STEP)), rules)
    assert fast.root_cause.line == 1 and fast.root_cause.step is None


@pytest.mark.parametrize("with_api_steps", [False, True])
def test_context_lines_carry_the_step_parse_log_gives_each_of_them(with_api_steps):
    from datetime import UTC, datetime

    from ci_triage.core.logs.values import Step

    raw = "\n".join([
        "2024-01-01T00:00:01.0000000Z ##[group]Run make setup",
        "2024-01-01T00:00:02.0000000Z setting up",
        "2024-01-01T00:00:03.0000000Z ##[endgroup]",
        "2024-01-01T00:00:04.0000000Z ##[group]Run pytest -x",
        "continuation without a stamp",
        "2024-01-01T00:00:05.0000000Z \rprogress\rFAILED tests/test_a.py::test_b - assert 1 == 2",
    ])
    steps = [Step(1, "Set up job", "completed", "success", datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC), None),
             Step(2, "make setup", "completed", "success", datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC), None),
             Step(3, "pytest", "completed", "failure", datetime(2024, 1, 1, 0, 0, 4, tzinfo=UTC), None)]
    steps = steps if with_api_steps else []
    rules = builtin_rules()
    selected = relevant_lines(raw, rules, steps)
    anchor = next(line for line in selected if line.text.startswith("FAILED"))
    full = [line for line in parse_log(raw, steps)]
    context = selected.context_lines(anchor)
    assert [(line.number, line.text, line.step) for line in context] == [
        (line.number, line.text, line.step) for line in full[:full.index(anchor) + 1]]
    assert len({line.step for line in context}) == 2
