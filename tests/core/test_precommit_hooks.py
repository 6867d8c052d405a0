"""pre-commit: the first failed hook's own output is the root, though a later hook's finding matches a stronger rule."""

from tests.core.both_paths import classify_both

STAMP = "2026-12-06T16:20:00.0000000Z "
# output of pre-commit 4.7.0 run --all-files with local hooks (a pygrep hook, black as a system hook, a `language: fail`
# hook), generated on this machine (sweep s12b), in a GitHub Actions step
HOOKS = [
    "##[group]Run pre-commit run --all-files",
    "pre-commit run --all-files",
    "##[endgroup]",
    "forbid print statements..................................................Failed",
    "- hook id: no-print",
    "- exit code: 1",
    "",
    'src/ledger/__init__.py:1:print("debug")',
    "",
    "black....................................................................Failed",
    "- hook id: black",
    "- files were modified by this hook",
    "",
    "reformatted tests/test_accounts.py",
    "",
    "All done! ✨ 🍰 ✨",
    "1 file reformatted, 1 file left unchanged.",
    "",
    "##[error]Process completed with exit code 1.",
]


def _raw(lines: list[str]) -> str:
    return "".join(STAMP + line + "\n" for line in lines)


def test_first_failed_hooks_output_is_the_root():
    result = classify_both(_raw(HOOKS))
    assert result.category == "lint_failure"
    assert result.root_cause.text == 'src/ledger/__init__.py:1:print("debug")'


def test_a_hook_that_printed_nothing_is_named_by_its_verdict():
    lines = HOOKS[:6] + [""] + HOOKS[9:]  # the pygrep hook's output dropped
    result = classify_both(_raw(lines))
    assert result.root_cause.text.startswith("forbid print statements....")


def test_a_finding_a_rule_knows_in_the_first_hook_stays_the_root():
    lines = HOOKS[:7] + ["src/ledger/__init__.py:1:1: F401 'os' imported but unused"] + HOOKS[8:]
    result = classify_both(_raw(lines))
    assert result.root_cause.text == "src/ledger/__init__.py:1:1: F401 'os' imported but unused"


def test_passed_hooks_above_do_not_count():
    lines = HOOKS[:3] + ["check yaml...............................................................Passed",
                         "trim trailing whitespace.................................................Passed"] + HOOKS[9:]
    result = classify_both(_raw(lines))
    assert result.root_cause.text == "reformatted tests/test_accounts.py"


def test_a_long_run_of_dots_is_read_in_linear_time():
    # the verdict's pattern tried every split of a run of dots between its `.*?` and its `\.{3,}`: a hook's output line
    # of 10,000 dots took 1.5 s, four times as long as one of 5,000
    import time

    def seconds(size):
        lines = HOOKS[:7] + ['src/ledger/__init__.py:1:print("' + "." * size + '")'] + HOOKS[8:]
        started = time.perf_counter()
        result = classify_both(_raw(lines))
        return time.perf_counter() - started, result

    seconds(1)  # the rules compiled
    small, result = seconds(20000)
    large, _ = seconds(80000)
    assert result.root_cause.text.startswith('src/ledger/__init__.py:1:print("...')
    assert large < 8 * small + 0.5  # four times the line: sixteen times the work before
