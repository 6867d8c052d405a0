"""The installed command under GitHub faults and with bad local paths: one line on stderr, no rerun,
no API call wasted, no file damaged. Live mode against the local fake (GITHUB_API_URL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_triage.demo.replay import FakeGitHub
from tests.conftest import DEMO_REPO

CLI = [sys.executable, "-m", "ci_triage"]


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY",
                                                            "GITHUB_API_URL", "CI_TRIAGE_STORE")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**base, **env}, timeout=120)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode not in (0, 70), result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ci-triage: error: ") and "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture
def live(demo_case, tmp_path):
    with FakeGitHub(demo_case) as fake:
        yield fake, {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": "secret-token-0123456789",
                     "CI_TRIAGE_STORE": str(tmp_path / "store.sqlite3"), "XDG_CACHE_HOME": str(tmp_path)}


@pytest.mark.parametrize("status", [403, 429])
def test_report_stops_on_a_limit_an_hour_away_with_one_line(live, status: int) -> None:
    fake, env = live
    fake.inject_primary_limit("GET", r"/actions/runs$", 3600, times=99, status=status)
    line = one_error_line(run("report", "--pr", "67", "--repo", DEMO_REPO, "--max-wait", "120", env=env))
    assert "wait budget" in line and "secret-token" not in line


def test_triage_apply_past_the_budget_reruns_nothing(live, demo_case) -> None:
    fake, env = live
    run_67 = next(r for r in demo_case["runs"] if r["conclusion"] == "failure"
                  and r["head_sha"] == next(p for p in demo_case["pulls"] if p["number"] == 67)["head"]["sha"])
    fake.inject_primary_limit("GET", r"/actions/jobs/\d+/logs$", 3600, times=99)
    result = run("triage", "--run-id", str(run_67["id"]), "--repo", DEMO_REPO, "--apply", "--max-wait", "60",
                 env={**env, "CI_TRIAGE_WRITE_INTERVAL": "0"})
    line = one_error_line(result)
    assert "wait budget" in line and "needs_review comment" in line
    assert not [r for r in fake.served(method="POST") if "rerun" in r.path]
    # The PR hears it: one sticky comment saying needs_review, with the reason and nothing rerun.
    posted = [r for r in fake.served(method="POST") if r.path.endswith("/comments")]
    assert len(posted) == 1
    body = posted[0].body["body"]
    assert "<!-- ci-triage:sticky -->" in body and "`needs_review`" in body and "rate limit" in body


def test_triage_past_the_budget_with_github_refusing_writes_too_says_so_in_one_line(live, demo_case) -> None:
    fake, env = live
    run_67 = next(r for r in demo_case["runs"] if r["conclusion"] == "failure"
                  and r["head_sha"] == next(p for p in demo_case["pulls"] if p["number"] == 67)["head"]["sha"])
    fake.inject_primary_limit("GET", r"/actions/jobs/\d+/logs$", 3600, times=99)
    fake.inject_primary_limit("GET", r"/issues/\d+/comments$", 3600, times=99)
    result = run("triage", "--run-id", str(run_67["id"]), "--repo", DEMO_REPO, "--apply", "--max-wait", "60",
                 env={**env, "CI_TRIAGE_WRITE_INTERVAL": "0"})
    assert "refused the needs_review comment" in one_error_line(result)
    assert fake.served(method="POST") == [] and fake.served(method="PATCH") == []


def test_report_on_truncated_json_is_never_an_internal_error(live) -> None:
    from tests.fault_proxy import FaultProxy

    fake, env = live
    with FaultProxy(fake) as proxy:
        # A 200 whose JSON body is cut short, every time: one clear line, not "internal error: JSONDecodeError".
        proxy.add("cut_json", "GET", r"/pulls/67$", times=99)
        result = run("report", "--pr", "67", "--repo", DEMO_REPO, "--max-wait", "0",
                     env={**env, "GITHUB_API_URL": proxy.api_url})
    line = one_error_line(result)
    assert "could not be decoded" in line and "internal error" not in line


def test_report_on_answers_lacking_fields_is_never_an_internal_error(live) -> None:
    fake, env = live
    fake.inject("GET", r"/pulls/67$", 200, times=99, body={"number": 67})  # valid JSON, not a pull request
    line = one_error_line(run("report", "--pr", "67", "--repo", DEMO_REPO, "--max-wait", "0", env=env))
    assert "internal error" not in line


# --- record ---------------------------------------------------------------------------------------

def test_record_into_a_missing_folder_fails_before_any_api_call(live, tmp_path) -> None:
    fake, env = live
    line = one_error_line(run("record", "--pr", "67", "--repo", DEMO_REPO,
                              "--output", str(tmp_path / "no" / "case.json.gz"), env=env))
    assert "does not exist" in line
    assert fake.served() == []


def test_record_refuses_to_overwrite_without_force(live, tmp_path) -> None:
    fake, env = live
    target = tmp_path / "case.json.gz"
    target.write_bytes(b"precious")
    line = one_error_line(run("record", "--pr", "67", "--repo", DEMO_REPO, "--output", str(target), env=env))
    assert "already exists" in line and "--force" in line
    assert target.read_bytes() == b"precious" and fake.served() == []
    result = run("record", "--pr", "67", "--repo", DEMO_REPO, "--output", str(target), "--force", env=env)
    assert result.returncode == 0, result.stderr
    assert target.read_bytes()[:2] == b"\x1f\x8b"


def test_a_store_in_a_missing_folder_is_an_error(live, tmp_path) -> None:
    fake, env = live
    missing = tmp_path / "nope" / "store.sqlite3"
    line = one_error_line(run("report", "--pr", "67", "--repo", DEMO_REPO, "--store", str(missing), env=env))
    assert "does not exist" in line and not (tmp_path / "nope").exists()


def test_a_foreign_sqlite_store_is_left_alone(live, tmp_path) -> None:
    import sqlite3

    fake, env = live
    foreign: Path = tmp_path / "app.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE t (x)")
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.close()
    before = foreign.read_bytes()
    line = one_error_line(run("report", "--pr", "67", "--repo", DEMO_REPO, "--store", str(foreign), env=env))
    assert "not a ci-triage store" in line and foreign.read_bytes() == before


def test_retry_messages_show_only_with_ci_triage_debug(live) -> None:
    fake, env = live
    fake.inject_secondary_limit("GET", r"/pulls/67$", 1, times=1)
    quiet = run("report", "--pr", "67", "--repo", DEMO_REPO, "--format", "json", env=env)
    assert quiet.returncode in (0, 10) and quiet.stderr == ""
    fake.inject_secondary_limit("GET", r"/pulls/67$", 1, times=1)
    loud = run("report", "--pr", "67", "--repo", DEMO_REPO, "--format", "json", env={**env, "CI_TRIAGE_DEBUG": "1"})
    assert loud.returncode in (0, 10)
    assert "ci-triage: debug:" in loud.stderr and "retrying in" in loud.stderr
    assert "secret-token" not in loud.stderr
