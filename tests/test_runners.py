"""`ci-triage runners` and `sync` end to end: the installed command in a subprocess on the bundled
fleet reconstruction, and sync against the local fake (conditional re-sync, resume)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import struct
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


HOSTILE_RUNNER = '<img src=x onerror=alert(1)>\x1b]8;;https://evil.example\x07$x^2$"-r0'


def test_html_page_embeds_the_trends_picture_and_names_the_sick_host(tmp_path):
    page, picture = tmp_path / "health.html", tmp_path / "trends.png"
    result = run("runners", "--demo", "--format", "html", "--output", str(page), "--png", str(picture))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [str(picture), str(page)] and result.stderr == ""
    text = page.read_text(encoding="utf-8")
    png = picture.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert f'src="data:image/png;base64,{base64.b64encode(png).decode()}"' in text  # the same picture, inline
    width, height = struct.unpack(">II", png[16:24])
    assert 1000 < width < 3000 and 500 < height < 1500
    assert f"<code>{LEAKING}</code>" in text and "Contention hotspots" in text
    assert "<script" not in text and "http://" not in text and "https://" not in text
    # Every day of the window has a row: fourteen days and the header.
    assert text.count("<tr><td>") >= 14


def test_html_escapes_a_hostile_runner_name(tmp_path):
    import sqlite3
    from html.parser import HTMLParser

    store = tmp_path / "s.sqlite3"
    result = run("sync", "--demo", "--store", str(store), "--logs", "failed")
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(store) as db:
        changed = db.execute("UPDATE jobs SET runner_name = ?, data = json_set(data, '$.runner_name', ?) "
                             "WHERE runner_name = ?", (HOSTILE_RUNNER, HOSTILE_RUNNER, f"{LEAKING}-r0")).rowcount
    assert changed > 50
    page = tmp_path / "health.html"
    result = run("runners", "--offline", "--repo", fleet.REPO, "--store", str(store), "--since", "2026-05-12",
                 "--host-pattern", r"^(?P<host>.+)-r\d+$", "--format", "html", "--output", str(page))
    assert result.returncode == 0, result.stderr
    text = page.read_text(encoding="utf-8")

    class Page(HTMLParser):
        tags: list[str] = []
        data: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

        def handle_data(self, data):
            self.data.append(data)

    parser = Page()
    parser.feed(text)
    assert "\x1b" not in text and "\x07" not in text
    assert parser.tags.count("img") == 1 and "a" not in parser.tags  # only the picture; no injected tag or link
    shown_text = "".join(parser.data)
    assert '<img src=x onerror=alert(1)>' in shown_text and "$x^2$" in shown_text  # as text, in the tables


def test_html_without_matplotlib_is_one_line_before_any_work(tmp_path):
    store = tmp_path / "s.sqlite3"
    assert run("runners", "--offline", "--repo", "o/r", "--store", str(tmp_path / "other.sqlite3")).returncode == 0
    assert (tmp_path / "other.sqlite3").exists()  # with matplotlib the store is opened (created) ...
    blocked = ("import sys; sys.modules['matplotlib'] = None; "
               f"sys.argv = ['ci-triage', 'runners', '--offline', '--repo', 'o/r', '--store', {str(store)!r}, "
               "'--format', 'html']; "
               "from ci_triage.cli import main; main()")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "CI_TRIAGE_STORE")}
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120,
                            env={**env, "CI": "true"})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "matplotlib" in result.stderr and "ci-triage[charts]" in result.stderr
    assert not store.exists()  # ... without it, the command stops before opening the store


def test_the_digest_workflow_keeps_the_html_page_as_an_artifact():
    import yaml

    workflow = yaml.safe_load((Path(__file__).parent.parent / "workflows" / "runner-health.yml").read_text())
    steps = workflow["jobs"]["digest"]["steps"]
    page = next(s for s in steps if "--format html" in s.get("run", ""))
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert steps.index(page) < steps.index(upload)
    assert upload["uses"] == "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02"  # v4.6.2
    assert upload["with"]["path"].endswith("runner-health.html") and upload["with"]["if-no-files-found"] == "error"
    assert any("matplotlib" in s.get("run", "") for s in steps[: steps.index(page)])
