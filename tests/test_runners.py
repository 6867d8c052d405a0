"""`ci-triage runners` and `sync` end to end: the installed command in a subprocess on the bundled
fleet reconstruction, and sync against the local fake (conditional re-sync, resume)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import pytest

from ci_triage.demo import fleet

CLI = [sys.executable, "-m", "ci_triage"]
LEAKING = f"{fleet.POOL_LABEL}-{fleet.LEAKING_HOST}"
CLASHING_PAIR = ["NPU vLLM examples / vllm-example (dflash)", "NPU vLLM examples / vllm-example (eagle3)"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY",
                                                           "GITHUB_API_URL", "CI_TRIAGE_STORE")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**env, "CI": "true"}, timeout=300)


@pytest.fixture(scope="module")
def demo_case() -> dict:
    return json.loads(gzip.decompress(fleet.bundled_path().read_bytes()))


@pytest.fixture(scope="module")
def demo_json() -> dict:
    result = run("runners", "--demo", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def test_committed_fleet_case_is_what_the_generator_makes(demo_case):
    assert demo_case == fleet.build_case(), "run `python -m ci_triage.demo.fleet` and commit the result"
    assert demo_case["source"]["kind"] == "reconstruction"


def test_the_leaking_host_is_the_only_sick_one(demo_json):
    assert [h["host"] for h in demo_json["hosts"] if h["sick"]] == [LEAKING]
    assert [r["runner_name"] for r in demo_json["runners"] if r["sick"]] == [f"{LEAKING}-r0"]
    sick = demo_json["hosts"][0]
    assert sick["p_value"] < 1e-6 and sick["infra_failure_rate"] > 5 * sick["pool_infra_failure_rate"]
    assert sick["categories"]["port_in_use"] == sick["infra_failures"]


def test_the_colliding_example_pair_is_the_top_hotspot(demo_json):
    top = demo_json["hotspots"][0]
    assert top["jobs"] == CLASHING_PAIR and top["category"] == "port_in_use"
    assert top["host"] != LEAKING and len(top["ports"]) == top["count"] and len(top["prs"]) >= 2
    assert "RUNNER_NAME" in top["recommendation"]


def test_rerun_figures_match_the_case_attempts(demo_case, demo_json):
    from ci_triage.core.timefmt import parse_iso

    reruns = [r for r in demo_case["runs"] if r["run_attempt"] > 1]
    failed_in = defaultdict(bool)
    minutes = 0.0
    for job in demo_case["jobs"]:
        failed_in[(job["run_id"], job["run_attempt"])] |= job["conclusion"] == "failure"
        if job["run_attempt"] > 1:
            minutes += (parse_iso(job["completed_at"]) - parse_iso(job["started_at"])).total_seconds() / 60
    expected = {
        "requested": len(reruns),
        "automatic": sum(r["triggering_actor"]["login"] == fleet.BOT for r in reruns),
        "manual": sum(r["triggering_actor"]["login"] != fleet.BOT for r in reruns),
        "rescued": sum(not failed_in[(r["id"], r["run_attempt"])] for r in reruns),
        "runner_minutes": round(minutes, 1),
    }
    assert demo_json["reruns"] == expected
    assert expected["requested"] > 10 and 0 < expected["automatic"] < expected["requested"]


def test_the_json_contract_has_every_field(demo_json):
    assert demo_json["schema_version"] == 1 and demo_json["repo"] == fleet.REPO
    assert set(demo_json["window"]) == {"since", "until"}
    runner_fields = {"runner_name", "host", "labels", "jobs", "failures", "infra_failures", "infra_failure_rate",
                     "pool", "pool_infra_failure_rate", "p_value", "sick", "categories"}
    assert all(runner_fields <= set(r) for r in demo_json["runners"])
    assert all(runner_fields - {"runner_name"} <= set(h) for h in demo_json["hosts"])
    assert all({"host", "jobs", "category", "count", "prs", "ports"} <= set(h) for h in demo_json["hotspots"])
    assert set(demo_json["reruns"]) == {"requested", "automatic", "manual", "rescued", "runner_minutes"}
    flaky = demo_json["flaky_jobs"]
    assert flaky and all({"workflow", "name", "runs", "flaky_runs", "rate"} <= set(j) for j in flaky)


def test_markdown_digest_carries_its_marker_and_names_the_sick_host(tmp_path):
    out = tmp_path / "digest.md"
    result = run("runners", "--demo", "--format", "markdown", "--output", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith("<!-- ci-triage:runner-health -->") and f"`{LEAKING}`" in text
    assert "Contention hotspots" in text and "\x1b" not in text


def test_offline_on_an_empty_store_is_empty_not_an_error(tmp_path):
    result = run("runners", "--offline", "--repo", "o/r", "--store", str(tmp_path / "s.sqlite3"), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["runners"] == []


def test_bad_since_is_one_line(tmp_path):
    result = run("runners", "--offline", "--repo", "o/r", "--store", str(tmp_path / "s.sqlite3"), "--since", "soon")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_warm_resync_is_conditional_and_an_interrupted_sync_resumes(demo_case):
    from ci_triage.demo.replay import FakeGitHub
    from ci_triage.github.client import Connection, GitHubClient
    from ci_triage.store import Store
    from ci_triage.sync import sync

    since = fleet.DEMO_NOW - timedelta(days=14)
    with FakeGitHub(demo_case) as fake, tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "s.sqlite3")
        client = GitHubClient(Connection(api_url=fake.base_url, token="t", retries=1, backoff_s=0.01))
        # Interrupted at the 60th run: the first batch of 50 runs is stored whole, the rest is not.
        calls = {"n": 0}
        original = client.job_executions

        def flaky(repo, run_id):
            calls["n"] += 1
            if calls["n"] == 60:
                raise KeyboardInterrupt
            return original(repo, run_id)

        client.job_executions = flaky
        with pytest.raises(KeyboardInterrupt):
            sync(client, store, fleet.REPO, since, logs="none")
        client.job_executions = original
        partly = store.counts()["jobs"]
        assert 0 < partly < len(demo_case["jobs"])
        resumed = sync(client, store, fleet.REPO, since, logs="none")
        assert resumed.runs_fetched == len({r["id"] for r in demo_case["runs"]}) - 50  # whole batches kept
        assert store.counts()["jobs"] == len(demo_case["jobs"])
        cold = fake.rate_limited_requests
        fake.reset_log()
        warm = sync(client, store, fleet.REPO, since, logs="none")
        assert warm.runs_fetched == 0
        served = fake.served()
        assert served and all(r.status == 304 for r in served)
        assert fake.rate_limited_requests - cold <= 0.05 * cold


def test_the_digest_workflow_finds_its_issue_by_the_renderers_marker():
    import yaml

    from ci_triage.core.render.health import DIGEST_MARKER

    workflow = yaml.safe_load((Path(__file__).parent.parent / "workflows" / "runner-health.yml").read_text())
    assert workflow["env"]["MARKER"] == DIGEST_MARKER
    assert workflow["permissions"] == {}
    assert workflow["jobs"]["digest"]["permissions"] == {"actions": "read", "contents": "read", "issues": "write"}
    assert "--format markdown" in json.dumps(workflow)
