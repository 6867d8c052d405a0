"""The pytest plugin, run in a child pytest exactly as another repository would run it."""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

pytest_plugins = ["pytester"]

PLUGIN_MODULE = "ci_triage.contracts.pytest_plugin"
REPO_ROOT = Path(__file__).resolve().parents[2]


def plugin_args() -> list[str]:
    """Load the plugin with -p only while the pytest11 entry point does not load it already:
    pluggy refuses to register one module under two names."""
    registered = any(ep.value == PLUGIN_MODULE for ep in entry_points(group="pytest11"))
    if registered and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return []
    return ["-p", PLUGIN_MODULE]


@pytest.fixture
def run_child(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """A fresh pytest session in this process (a new config and plugin manager each time).
    Other installed plugins are not auto-loaded, which saves a second per run; the last test
    runs a real subprocess with the environment's plugins and entry points."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def run(*args: str | Path) -> pytest.RunResult:
        return pytester.runpytest_inprocess(*plugin_args(), "-p", "no:cacheprovider",
                                            *map(str, args))
    return run


def test_good_checkpoint_becomes_passing_tests(run_child, checkpoints):
    result = run_child("--d2t-checkpoint", checkpoints["good"], "-v")
    # loads + 8 checks + loads_in_vllm + loads_in_sglang + round trip;
    # full_vocab_is_identity is skipped for a reduced draft
    result.assert_outcomes(passed=11, skipped=1)
    result.stdout.fnmatch_lines(["*d2t-contract::loads_in_vllm*PASSED*"])
    result.stdout.fnmatch_lines(["*d2t-contract::engine_ids_in_vocab*PASSED*"])


def test_legacy_checkpoint_fails_the_named_checks(run_child, checkpoints):
    result = run_child("--d2t-checkpoint", checkpoints["legacy_full"])
    # both engines load it (the mapping is wrong, not unloadable)
    result.assert_outcomes(passed=8, failed=4)
    result.stdout.fnmatch_lines([
        "*engine_ids_in_vocab: 32 of 64 engine target ids outside*",
        "*max engine target id = 126 (vocab_size=64)*",
        "FAILED *holds_offsets*",
        "FAILED *reference_round_trip*",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_unreadable_checkpoint_is_one_failing_test(run_child, checkpoints):
    result = run_child("--d2t-checkpoint", checkpoints["not_a_drafter"])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot check: *no d2t tensor*"])


def test_repeatable_and_selectable_by_marker(run_child, pytester, checkpoints):
    pytester.makepyfile(test_unrelated="def test_unrelated(): pass")
    result = run_child("-m", "d2t", "--d2t-checkpoint", checkpoints["good"],
                       "--d2t-checkpoint", checkpoints["sharded_legacy"])
    # 8 contract checks + 2 engine checks + loads + round trip per checkpoint
    result.assert_outcomes(passed=19, failed=4, skipped=1, deselected=1)


def test_without_the_option_nothing_is_added(run_child, pytester):
    pytester.makepyfile(test_unrelated="def test_unrelated(): pass")
    run_child().assert_outcomes(passed=1)


def test_size_options_reach_the_loader(run_child, pytester):
    np.savez(pytester.path / "mapping.npz", d2t=np.zeros(8, np.int64))
    result = run_child("--d2t-checkpoint", "mapping.npz", "--d2t-vocab-size", "8")
    # no t2d: the t2d shape check, the two t2d checks and the round trip are skipped; a lone
    # mapping file is no engine checkpoint, so both engine checks are skipped too
    result.assert_outcomes(passed=6, skipped=6)


def test_round_trip_fixture_for_producers(run_child, pytester):
    pytester.makepyfile(test_producer="""
        def good_generator(used_tokens):
            used = sorted(set(used_tokens))
            return [token - i for i, token in enumerate(used)]

        def legacy_generator(used_tokens):
            return sorted(set(used_tokens))

        def test_good(d2t_round_trip):
            d2t_round_trip(good_generator([21, 3, 9, 17]), [3, 9, 17, 21], 32)

        def test_legacy(d2t_round_trip):
            d2t_round_trip(legacy_generator([21, 3, 9, 17]), [3, 9, 17, 21], 32)
    """)
    result = run_child()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*draft id 1 stores 9, the generator emits 8*"])


def test_plugin_works_in_a_real_subprocess(pytester, monkeypatch, checkpoints):
    # The child must import ci_triage even before the package is installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    result = pytester.runpytest_subprocess(
        *plugin_args(), "-p", "no:cacheprovider", "--d2t-checkpoint", checkpoints["legacy_reduced"])
    result.assert_outcomes(passed=7, failed=4, skipped=1)
