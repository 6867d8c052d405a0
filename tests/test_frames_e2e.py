"""End to end: a PR changes `pkg/sampling/top_p.py` and its own unit test fails with pytest's short
traceback through that file (`pkg/sampling/top_p.py:22: in top_p_filter`). The installed CLI, replaying
the case against the local fake GitHub, calls it `pr_related` and names the deciding frame (issue 13).

Before frames of every format were read, only Python's `File "...", line N, in f` counted: the report
said "None of the PR's 1 changed file(s) is on this job's code path" and `needs_review`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ci_triage.demo import logs as logtext
from ci_triage.demo import payloads as gh
from ci_triage.demo.logs import LogBuilder
from ci_triage.github.case import CASE_FORMAT, CASE_VERSION
from tests.test_cli_e2e import run

REPO = "acme-ml/sampler"
DAY = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
CHANGED = "pkg/sampling/top_p.py"

# pytest's output with `--tb=short` (the layout of pytest's own terminal reporter: FAILURES section,
# `path:line: in function` entries, `E` lines, short test summary).
PYTEST_SHORT = """\
============================= test session starts ==============================
platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0
rootdir: /home/runner/work/sampler/sampler
configfile: pyproject.toml
collected 14 items

tests/test_top_k.py ..........                                           [ 71%]
tests/test_top_p.py ..F.                                                 [100%]

=================================== FAILURES ===================================
_____________________________ test_keeps_top_token _____________________________
tests/test_top_p.py:31: in test_keeps_top_token
    kept = top_p_filter(probs, p=0.0)
pkg/sampling/top_p.py:22: in top_p_filter
    cutoff = sorted_probs[mask][0]
E   IndexError: index 0 is out of bounds for axis 0 with size 0
=========================== short test summary info ============================
FAILED tests/test_top_p.py::test_keeps_top_token - IndexError: index 0 is out of bounds for axis 0 with size 0
========================= 1 failed, 13 passed in 0.84s ========================="""


def t(minutes: float) -> datetime:
    return DAY + timedelta(minutes=minutes)


def _log(start: datetime, end: datetime, runner: str, *, failing: bool) -> LogBuilder:
    log = LogBuilder(start)
    logtext.set_up_job(log, runner_name=runner, machine="fv-az1234-567", job_name="unit-tests", repo=REPO,
                       hosted=True)
    log.begin("Run pytest")
    log.write("##[group]Run python -m pytest -q --tb=short\n##[endgroup]")
    log.advance_to(end - timedelta(seconds=5))
    if failing:
        log.write(PYTEST_SHORT)
        log.write("##[error]Process completed with exit code 1.", after_s=0.2)
        log.end("failure")
    else:
        log.write("14 passed in 0.81s")
        log.end()
    return log


def build_case() -> dict[str, Any]:
    org = gh.user("acme-ml", 900, "Organization")
    repo = gh.repository(REPO, 88001, org, created=t(-9000), pushed=t(0))
    wf = gh.workflow(REPO, 6001, "Unit tests", ".github/workflows/unit.yml", t(-9000))
    author = gh.user("dev1", 1001)
    fork = gh.repository("dev1/sampler", 88002, author, fork=True, created=t(-100), pushed=t(0))
    head_sha = gh.sha_of("sampler-11")
    pull = gh.pull_request(repo, 11, 9_011, title="top-p: faster cutoff", author=author, head_repo=fork,
                           head_ref="faster-top-p", head_sha=head_sha, base_sha=gh.sha_of("base"), created=t(-1),
                           updated=t(-1))
    run_ = gh.workflow_run(repo, wf, 61_000, run_number=1, attempt=1, event="pull_request", head_branch="faster-top-p",
                           head_sha=head_sha, head_repo=fork, pulls=[], actor=author, title="top-p: faster cutoff",
                           status="completed", conclusion="failure", created=t(-1), started=t(-1), updated=t(4))
    runner = "GitHub Actions 1000000123"
    log = _log(t(0), t(3), runner, failing=True)
    job = gh.job(run_, 71_000, name="unit-tests", status="completed", conclusion="failure", created=t(-1),
                 started=t(0), completed=t(3), labels=["ubuntu-latest"], runner_id=123, runner_name=runner,
                 runner_group="GitHub Actions", steps=log.steps)
    return {"format": CASE_FORMAT, "version": CASE_VERSION, "source": {"kind": "test"}, "repository": repo,
            "pulls": [pull], "pull_files": {"11": [gh.changed_file(REPO, head_sha, CHANGED, additions=9, deletions=4)]},
            "workflows": [wf], "runs": [run_], "jobs": [job], "logs": {"71000": log.text()}, "annotations": {},
            "files": {}}


@pytest.fixture(scope="module")
def case_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("case") / "sampler.case.json"
    path.write_text(json.dumps(build_case()), encoding="utf-8")
    return path


def test_pytest_short_traceback_through_the_changed_file_is_pr_related(case_path):
    result = run("report", "--replay", str(case_path), "--pr", "11", "--format", "json")
    assert result.returncode in (0, 1, 10), result.stderr
    [job] = json.loads(result.stdout)["failed_jobs"]
    assert job["category"] == "test_failure"
    assert job["relatedness"] == "related" and job["related_changed_files"] == [CHANGED]
    assert job["verdict"] == "pr_related" and job["rerun_recommended"] is False
    assert job["related_by"] == f"frame {CHANGED}:22 in top_p_filter"
    assert [(f["path"], f["line"], f["function"]) for f in job["frames"]] == [
        ("tests/test_top_p.py", 31, "test_keeps_top_token"), (CHANGED, 22, "top_p_filter")]
    evidence = " | ".join(job["evidence"])
    assert "is on this job's code path" not in evidence
    assert f"decided by the frame {CHANGED}:22 in top_p_filter" in evidence


def test_markdown_and_terminal_name_the_deciding_frame(case_path):
    markdown = run("report", "--replay", str(case_path), "--pr", "11", "--format", "markdown")
    assert markdown.returncode in (0, 1, 10), markdown.stderr
    assert f"**Related by:** frame {CHANGED}:22 in top_p_filter" in markdown.stdout
    table = run("report", "--replay", str(case_path), "--pr", "11", env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert table.returncode in (0, 1, 10), table.stderr
    assert "decided by" in table.stdout and f"{CHANGED}:22 in top_p_filter" in table.stdout
    assert "pr_related" in table.stdout
