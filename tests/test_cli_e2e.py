"""The installed `ci-triage` command in a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DEMO_REPO

CLI = [sys.executable, "-m", "ci_triage"]


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY",
                                                            "GITHUB_API_URL", "CI_TRIAGE_STORE")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**base, **(env or {})},
                          timeout=timeout)


def test_installed_console_script_runs_the_demo():
    script = Path(sys.executable).with_name("ci-triage")
    assert script.exists(), "pip install . should put ci-triage next to the interpreter"
    result = subprocess.run([str(script), "report", "--pr", "67", "--demo"], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "COLUMNS": "120"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for expected in ("PR #67", "port_in_use", "35191", "infra_flake", "rerun recommended", "#66", "#68",
                     "EADDRINUSE"):
        assert expected in out
    assert result.stderr == ""


@pytest.mark.parametrize("pr, verdict, rerun", [
    (66, "infra_flake", True), (67, "infra_flake", True), (68, "infra_flake", True), (70, "infra_flake", True),
    (71, "broken_base", False), (72, "pr_related", False),
])
def test_demo_verdicts_as_json(pr, verdict, rerun):
    result = run("report", "--pr", str(pr), "--demo", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["repo"] == DEMO_REPO and report["pr"] == pr
    [job] = report["failed_jobs"]
    assert job["verdict"] == verdict
    assert job["rerun_recommended"] is rerun
    for key in ("run_id", "run_attempt", "job_id", "workflow", "name", "conclusion", "started_at", "completed_at",
                "runner_name", "labels", "category", "retryable", "root_cause", "captures", "overlapping_jobs",
                "related_changed_files", "evidence"):
        assert key in job
    assert job["started_at"].endswith("Z") and set(job["root_cause"]) >= {"line", "text", "step"}


def test_json_contract_for_pr_67():
    report = json.loads(run("report", "--pr", "67", "--demo", "--format", "json").stdout)
    [job] = report["failed_jobs"]
    assert job["category"] == "port_in_use" and job["retryable"] is True
    assert job["captures"]["port"] == "35191" and job["captures"]["errno"] == "-98"
    assert "code: -98" in job["root_cause"]["text"] and job["root_cause"]["step"] == "Run example script"
    assert {o["pr"] for o in job["overlapping_jobs"]} >= {66, 68}
    assert all(o["overlap_s"] > 0 for o in job["overlapping_jobs"])
    assert any("Died at 12.2 min" in e for e in job["evidence"])


def test_markdown_is_a_pr_comment():
    result = run("report", "--pr", "70", "--demo", "--format", "markdown")
    assert result.returncode == 0
    assert result.stdout.startswith("## ci-triage: PR #70")
    assert "`infra_flake`" in result.stdout and "39403" in result.stdout


def test_record_then_replay_offline(fake, tmp_path):
    """`record` against a live API (the fake stands in for GitHub), then `--replay` gives the same report."""
    case = tmp_path / "case.json.gz"
    env = {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": "secret-token-value", "CI_TRIAGE_STORE":
           str(tmp_path / "live.sqlite3")}
    recorded = run("record", "--pr", "68", "--repo", DEMO_REPO, "--output", str(case), env=env)
    assert recorded.returncode == 0, recorded.stderr
    live = run("report", "--pr", "68", "--repo", DEMO_REPO, "--format", "json", env=env)
    replayed = run("report", "--pr", "68", "--replay", str(case), "--format", "json")
    assert live.returncode == replayed.returncode == 0, replayed.stderr
    strip = lambda text: json.loads(text.replace(fake.base_url, "<base>").__str__())  # noqa: E731
    live_report, replay_report = strip(live.stdout), json.loads(replayed.stdout)
    assert [j["verdict"] for j in live_report["failed_jobs"]] == [j["verdict"] for j in replay_report["failed_jobs"]]
    assert live_report["failed_jobs"][0]["evidence"][1:] == replay_report["failed_jobs"][0]["evidence"][1:]
    assert "secret-token-value" not in case.read_bytes().decode("latin-1")


# --- bad input: one clear line on stderr, non-zero exit, no traceback, nothing lost ------------

def _assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ci-triage: error: ")
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_unknown_pr(fake):
    result = run("report", "--pr", "9999", "--repo", DEMO_REPO, env={"GITHUB_API_URL": fake.base_url,
                                                                     "GITHUB_TOKEN": "t"})
    _assert_one_line_error(result, "#9999", "not found")


def test_unknown_repo(fake):
    result = run("report", "--pr", "1", "--repo", "nobody/nothing", env={"GITHUB_API_URL": fake.base_url,
                                                                         "GITHUB_TOKEN": "t"})
    _assert_one_line_error(result, "nobody/nothing", "not found")


def test_malformed_repo():
    _assert_one_line_error(run("report", "--pr", "1", "--repo", "no-slash", env={"GITHUB_TOKEN": "t"}), "OWNER/NAME")


def test_no_token_in_live_mode():
    _assert_one_line_error(run("report", "--pr", "67", "--repo", DEMO_REPO), "no GitHub token", "GITHUB_TOKEN")


def test_unreachable_api():
    result = run("report", "--pr", "67", "--repo", DEMO_REPO,
                 env={"GITHUB_API_URL": "http://127.0.0.1:9", "GITHUB_TOKEN": "very-secret-token"})
    _assert_one_line_error(result, "cannot reach the GitHub API")
    assert "very-secret-token" not in result.stderr


def test_bad_token_is_reported_without_printing_it(demo_case):
    from ci_triage.demo.replay import FakeGitHub

    with FakeGitHub(demo_case, token="the-right-one") as strict:
        result = run("report", "--pr", "67", "--repo", DEMO_REPO,
                     env={"GITHUB_API_URL": strict.base_url, "GITHUB_TOKEN": "wrong-token-123"})
    _assert_one_line_error(result, "401")
    assert "wrong-token-123" not in result.stderr


def test_corrupt_store_is_left_intact(tmp_path):
    store = tmp_path / "store.sqlite3"
    content = b"SQLite format 3\x00" + b"\xff" * 4000
    store.write_bytes(content)
    result = run("report", "--pr", "67", "--demo", "--store", str(store))
    _assert_one_line_error(result, str(store))
    assert store.read_bytes() == content


def test_unreadable_case_file(tmp_path):
    case = tmp_path / "case.json"
    case.write_text("{not json")
    _assert_one_line_error(run("report", "--pr", "67", "--replay", str(case)), "cannot be read")
    _assert_one_line_error(run("report", "--pr", "67", "--replay", str(tmp_path / "missing.json")), "does not exist")


def test_demo_pr_without_failures():
    result = run("report", "--pr", "63", "--demo", "--format", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["failed_jobs"] == []


def test_store_keeps_its_data_across_reports(tmp_path):
    store = tmp_path / "store.sqlite3"
    assert run("report", "--pr", "67", "--demo", "--store", str(store), "--format", "json").returncode == 0
    import sqlite3

    count = sqlite3.connect(store).execute("SELECT count(*) FROM logs").fetchone()[0]
    assert count >= 1
    # A failing command afterwards does not touch what is stored.
    _assert_one_line_error(run("report", "--pr", "9999", "--demo", "--store", str(store)), "not found")
    assert sqlite3.connect(store).execute("SELECT count(*) FROM logs").fetchone()[0] == count


def test_help_is_fast_and_lists_the_commands():
    result = run("--help")
    assert result.returncode == 0
    for command in ("report", "record", "rules", "d2t"):
        assert command in result.stdout
    # Heavy libraries stay unimported until a command needs them.
    probe = subprocess.run([sys.executable, "-c", "import sys, ci_triage.cli; "
                            "print(sorted(m for m in ('github', 'httpx', 'pandas', 'numpy') if m in sys.modules))"],
                           capture_output=True, text=True)
    assert probe.stdout.strip() == "[]"


SEED_TABLE = {66: ("eagle3", "36693", "possibly_related"), 67: ("eagle3", "35191", "possibly_related"),
              68: ("dspark", "38527", "unrelated"), 70: ("dflash", "39403", "unrelated")}


@pytest.mark.parametrize("pr", sorted(SEED_TABLE))
def test_demo_evidence_is_the_seeds_argument(pr):
    """Each failed example job carries the evidence the seed's author assembled by hand."""
    example, port, relatedness = SEED_TABLE[pr]
    report = json.loads(run("report", "--pr", str(pr), "--demo", "--format", "json").stdout)
    [job] = report["failed_jobs"]
    evidence = " | ".join(job["evidence"])
    assert job["name"] == f"vllm-example ({example})"
    assert (job["category"], job["captures"]["port"], job["captures"]["errno"]) == ("port_in_use", port, "-98")
    assert "EADDRINUSE" in evidence
    # The overlapping jobs of other PRs on the same runners.
    others = {o["pr"] for o in job["overlapping_jobs"] if o["pr"] not in (None, pr)}
    assert others and set(job["in_flight_prs"]) == others
    assert any(o["same_host"] and o["pr"] not in (None, pr) for o in job["overlapping_jobs"])
    # Died at engine start-up: ~12 minutes against ~17 for successful runs.
    assert "Died at 12.2 min" in evidence and "take 17." in evidence
    # Jobs that started after the queue drained passed; the same failure hit other PRs.
    assert "after it ended passed" in evidence and "same fingerprint" in evidence
    assert job["relatedness"] == relatedness
    if relatedness == "unrelated":
        assert job["related_changed_files"] == [] and "is on this job's code path" in evidence
    else:
        assert job["related_changed_files"] and "the failing stack never enters them" in evidence
    assert (job["verdict"], job["rerun_recommended"]) == ("infra_flake", True)
