"""clippy's findings: the rule matches the notes under a finding, the root cause is the finding's header above them."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules

STAMP = "2026-12-06T09:20:00.0000000Z "
# output of cargo clippy 1.95.0 -- -D warnings, run 2026-12-06 (sweep s9b), in a GitHub Actions step
CLIPPY = [
    "##[group]Run cargo clippy -- -D warnings",
    "cargo clippy -- -D warnings",
    "##[endgroup]",
    "    Checking widget v0.1.0 (/home/runner/work/widget/widget)",
    "error: unneeded `return` statement",
    " --> src/main.rs:1:33",
    "  |",
    "1 | fn add(a: i32, b: i32) -> i32 { return a+b; }",
    "  |                                 ^^^^^^^^^^",
    "  |",
    "  = help: for further information visit https://rust-lang.github.io/rust-clippy/rust-1.95.0/index.html#needless_return",
    "  = note: `-D clippy::needless-return` implied by `-D warnings`",
    "  = help: to override `-D warnings` add `#[allow(clippy::needless_return)]`",
    "",
    "error: length comparison to zero",
    " --> src/main.rs:4:8",
    "  |",
    "4 |     if v.len() == 0 { println!(\"empty\"); }",
    "  |        ^^^^^^^^^^^^ help: using `is_empty` is clearer and more explicit: `v.is_empty()`",
    "  |",
    "  = help: for further information visit https://rust-lang.github.io/rust-clippy/rust-1.95.0/index.html#len_zero",
    "",
    "error: could not compile `widget` (bin \"widget\") due to 2 previous errors",
    "##[error]Process completed with exit code 101.",
]


def _raw(lines: list[str]) -> str:
    return "".join(STAMP + line + "\n" for line in lines)


def test_clippy_root_cause_is_the_findings_header_not_its_note():
    rules = builtin_rules()
    for result in (classify(list(parse_log(_raw(CLIPPY))), rules),
                   classify(relevant_lines(_raw(CLIPPY).encode(), rules), rules)):
        assert result.category == "lint_failure"
        assert result.rule_id == "clippy-lint"
        assert result.root_cause.line == 5
        assert result.root_cause.text == "error: unneeded `return` statement"


def test_a_note_with_no_header_above_its_body_stays_the_root_cause():
    # a paste that kept only the notes: nothing but the diagnostic's body above the note, then a line of another kind
    lines = ["Run cargo clippy", "  |",
             "  = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#needless_borrow",
             "error: could not compile `app` (lib) due to 1 previous error"]
    result = classify(list(parse_log(_raw(lines))), builtin_rules())
    assert result.rule_id == "clippy-lint"
    assert result.root_cause.line == 3


# output of ty check (astral ty, pip) on a file with an unused `type: ignore` and a wrong return type, generated on this
# machine (sweep s12b), in a GitLab job
TY = [
    "$ ty check src",
    "warning[unused-type-ignore-comment]: Unused blanket `type: ignore` directive",
    " --> src/extra/ign.py:1:14",
    "  |",
    "1 | import json  # type: ignore",
    "  |              ^^^^^^^^^^^^^^",
    "help: Remove the unused suppression comment",
    "",
    "error[invalid-explicit-return]: Return type does not match returned value",
    " --> src/extra/ign.py:4:12",
    "  |",
    "3 | def f(x: int) -> str:",
    "  |                  --- Expected `str` because of return type",
    "4 |     return x  # type: ignore[return-value]",
    "  |            ^ expected `str`, found `int`",
    "",
    "Found 2 diagnostics",
    "ERROR: Job failed: exit code 1",
]


def test_ty_warning_location_is_no_cause_and_the_errors_header_is_the_root():
    rules = builtin_rules()
    raw = "".join(line + "\n" for line in TY)
    for result in (classify(list(parse_log(raw)), rules), classify(relevant_lines(raw.encode(), rules), rules)):
        assert result.category == "lint_failure"
        assert result.root_cause.text == "error[invalid-explicit-return]: Return type does not match returned value"
