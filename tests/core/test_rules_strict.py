"""Strict rule files: unknown keys and wrong types are errors; hazardous regexes are refused or bounded."""

import time

import pytest

from ci_triage.core.logs import regex_guard
from ci_triage.core.logs.budget import classify_within
from ci_triage.core.logs.regex_guard import hazard, linear_engine
from ci_triage.core.logs.rules import builtin_rules, merge_rule_sets, parse_rules
from ci_triage.errors import ConfigError

RULE = """
[[rule]]
id = "mine"
category = "network"
{extra}
patterns = [{pattern}]
examples = ["{example}"]
near_misses = ["nothing to see"]
"""


def _rules(extra: str = "retryable = true", pattern: str = "'proxy unreachable'", example: str = "proxy unreachable",
           **kwargs):
    return parse_rules(RULE.format(extra=extra, pattern=pattern, example=example), origin="mine.toml", **kwargs)


def test_a_misspelled_key_is_an_error_with_a_did_you_mean():
    with pytest.raises(ConfigError) as caught:
        _rules("retryabel = true")
    assert "unknown key 'retryabel'" in str(caught.value)
    assert caught.value.hint == "Did you mean 'retryable'?"


def test_a_misspelled_top_level_key_is_an_error():
    with pytest.raises(ConfigError, match="unknown key 'rules'"):
        parse_rules('version = 1\n[[rules]]\nid = "x"\n', origin="mine.toml")


@pytest.mark.parametrize("extra, message", [
    ('retryable = "no"', "'retryable' must be true or false, not str 'no'"),
    ("retryable = 1", "'retryable' must be true or false, not int 1"),
    ('boilerplate = "yes"', "'boilerplate' must be true or false"),
    ('description = ["a"]', "'description' must be a string"),
    ('exclude = "x"', "'exclude' must be an array of strings"),
])
def test_values_are_typed(extra, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        _rules(extra)


def test_array_items_are_typed():
    with pytest.raises(ConfigError, match=r"'patterns\[1\]' must be a string, not int 3"):
        _rules(pattern="'a', 3")


def test_a_version_must_be_an_integer():
    with pytest.raises(ConfigError, match="'version' must be an integer"):
        parse_rules('version = true\n' + RULE.format(extra="", pattern="'abc'", example="abc"), origin="x")


def test_a_category_typo_gets_a_did_you_mean():
    with pytest.raises(ConfigError) as caught:
        parse_rules(RULE.format(extra="", pattern="'abc'", example="abc").replace('"network"', '"netwrok"'), origin="x")
    assert caught.value.hint == "Did you mean 'network'?"


@pytest.mark.parametrize("category", ["compile_error", "lint_failure", "dependency", "test_failure"])
def test_never_retryable_categories_refuse_retryable_rules(category):
    text = RULE.format(extra="retryable = true", pattern="'abc'", example="abc").replace('"network"', f'"{category}"')
    with pytest.raises(ConfigError, match="never retryable"):
        parse_rules(text, origin="x")


# Hostile patterns: each is refused at load, with its reason, quickly. The first two are the issue's;
# (\w+\s?)+ unreachable$ takes Python's re ~18 s on a 28-character line that almost matches.
HOSTILE = [r"(\w+\s?)+ unreachable$", r"(a+)+$", r"(a|ab)*c", r"(.*a){20}", r"([a-z]+)*$", r"(x+x+)+y",
           r"((a+)?)+b", r"(?:\S+,)+\S+$"]


@pytest.mark.parametrize("pattern", HOSTILE)
def test_hostile_patterns_are_refused_at_load_with_the_reason(pattern):
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        _rules(pattern=repr(pattern).replace("\\\\", "\\"), example="x")
    elapsed = time.perf_counter() - started
    assert "is refused" in str(caught.value) and "backtracking" in str(caught.value)
    assert elapsed < 0.05, f"refusing {pattern} took {elapsed:.3f} s"


@pytest.mark.parametrize("pattern", [r"(?:\d+\.)+\d+", r"(?:\d+\.){3}\d+", r"(?:[^,]+,)+x", r"(?:foo|bar)+",
                                     r"\s*\S+", r"(?:(?:ab)+c)+", r"(?>a+)+$"])
def test_safe_repetitions_are_accepted(pattern):
    assert hazard(pattern) is None


@pytest.mark.skipif(regex_guard.linear_engine_name() is None, reason="google-re2 has no wheel for this platform")
def test_rules_the_project_did_not_write_run_on_re2_in_linear_time():
    rules = _rules(pattern=r"'(?P<host>\w+) unreachable'", example="proxy unreachable")
    assert rules.rules[0].engine == "re2"
    assert builtin_rules().rules[0].engine == "re"  # ours keep Python's semantics
    # RE2 on the pattern itself (were it let through): linear, so the 28-character line and a
    # 4,096-character one are both fast. Python's re takes ~18 s on the first.
    compiled = linear_engine(r"(\w+\s?)+ unreachable$")
    for line in ("a" * 27 + "!", "word " * 800 + "!"):
        started = time.perf_counter()
        assert compiled.search(line) is None
        assert time.perf_counter() - started < 0.05


def test_re2_refuses_what_it_cannot_run_and_python_takes_it():
    rules = _rules(pattern=r"'(?<=proxy )unreachable'", example="proxy unreachable")
    assert rules.rules[0].engine == "re"
    assert rules.rules[0].match("proxy unreachable") == {}


def test_a_log_that_overruns_the_budget_is_unknown_with_a_note():
    ticks = iter(range(1_000_000))
    log = "".join(f"2024-01-01T00:00:00.0000000Z proxy unreachable {n}\n" for n in range(200))
    result = classify_within(log, _rules(), seconds=5, clock=lambda: float(next(ticks)))
    assert result.category == "unknown" and result.root_cause is None
    assert result.captures["note"].startswith("not classified: matching stopped after 5.0 s")


def test_within_the_budget_the_result_is_the_plain_classification():
    log = "2024-01-01T00:00:00.0000000Z proxy unreachable\n"
    result = classify_within(log, _rules(), seconds=5, clock=time.monotonic)
    assert result.category == "network" and result.rule_id == "mine"


def test_a_repository_file_adds_to_the_builtin_rules_first():
    merged = merge_rule_sets(builtin_rules(), _rules())
    assert merged.rules[0].id == "mine" and len(merged.rules) == len(builtin_rules().rules) + 1
