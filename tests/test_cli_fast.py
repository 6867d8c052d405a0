"""`ci-triage classify` without typer (cli/fast.py) answers exactly as the typer command does, and
imports none of the heavy libraries (issue 10.7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_triage.cli.fast import parse_classify

STAMP = "2024-01-01T00:00:00.0000000Z "
LOG = (f"{STAMP}Collecting torch\n{STAMP}\x1b[31mOSError: [Errno 98] Address already in use\x1b[0m\n"
       f"{STAMP}##[error]Process completed with exit code 1.\n")
RULES = """version = 1
[[rule]]
id = "own-flake"
category = "network"
retryable = true
patterns = ['flaky thing happened']
examples = ['flaky thing happened here']
near_misses = ['a steady thing']
"""
TYPER = "import sys; from ci_triage.cli.root import app; sys.argv[0] = 'ci-triage'; app()"


@pytest.mark.parametrize(("argv", "parsed"), [
    (["classify", "a.log"], (["a.log"], "table", None, False)),
    (["classify", "--format", "json", "a", "b"], (["a", "b"], "json", None, False)),
    (["classify", "a", "--format=table", "-", "b"], (["a", "-", "b"], "table", None, False)),
    (["classify", "--rules", "r.toml", "--no-builtin", "a"], (["a"], "table", Path("r.toml"), True)),
    (["classify", "--", "--format", "-x"], (["--format", "-x"], "table", None, False)),
])
def test_plain_calls_are_parsed_as_typer_parses_them(argv, parsed):
    assert parse_classify(argv) == parsed


@pytest.mark.parametrize("argv", [
    [], ["report"], ["classify"], ["classify", "--help"], ["classify", "a", "--help"], ["classify", "-x", "a"],
    ["classify", "--format", "xml", "a"], ["classify", "--format", "JSON", "a"], ["classify", "--format"],
    ["classify", "--format", "json", "--format", "table", "a"], ["classify", "--no-builtin=1", "a"],
    ["classify", "--rules", "", "a"], ["classify", "--rules", "--no-builtin", "a"], ["classify", "--form", "json", "a"],
    ["--version", "classify", "a"],
])
def test_anything_else_is_left_to_typer(argv):
    assert parse_classify(argv) is None


def _run(prefix: list[str], argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100"}
    env.pop("CI_TRIAGE_DEBUG", None)
    return subprocess.run([sys.executable, *prefix, *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)


@pytest.mark.parametrize("argv", [
    ["classify", "--format", "json", "job.log", "empty.log"],
    ["classify", "job.log", "empty.log"],
    ["classify", "--format", "json", "--rules", "rules.toml", "job.log"],
    ["classify", "--format=json", "--rules", "rules.toml", "--no-builtin", "job.log"],
    ["classify", "missing.log"],
    ["classify", "folder"],
    ["classify", "--no-builtin", "job.log"],
    ["classify", "--rules", "missing.toml", "job.log"],
    ["classify", "--rules", "bad.toml", "job.log"],
])
def test_the_fast_path_prints_what_the_typer_command_prints(tmp_path, argv):
    (tmp_path / "job.log").write_text(LOG)
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "rules.toml").write_text(RULES)
    (tmp_path / "bad.toml").write_text(RULES.replace("category", "categroy"))
    (tmp_path / "folder").mkdir()
    fast = _run(["-m", "ci_triage"], argv, tmp_path)
    slow = _run(["-c", TYPER], argv, tmp_path)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)


def test_classify_imports_no_heavy_library(tmp_path):
    (tmp_path / "job.log").write_text(LOG)
    probe = ("import sys; from ci_triage.cli.fast import run_fast; "
             "assert run_fast(['classify', '--format', 'json', sys.argv[1]]); "
             "print(sorted(m for m in ('typer', 'pydantic', 'click', 'numpy', 'pandas', 'github', 'httpx', "
             "'matplotlib', 'rich') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "job.log")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "[]"
    assert '"category": "port_in_use"' in done.stdout
