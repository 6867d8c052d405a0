"""A second repository, unlike the demo in names, runner layout and timings.

GPU hosts run two runner processes each (`ghr-h100-a01-s0`, `-s1`, described by the repository's
host_pattern). PR #301's job dies of CUDA OOM while PR #302's job holds memory on the same host: an
infra flake. PR #303 hard-codes the rendezvous port in the launcher it changes, and its job dies with
EADDRINUSE inside that launcher: its own fault, although another PR's job overlapped it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ci_triage.demo import logs as logtext
from ci_triage.demo import payloads as gh
from ci_triage.demo.logs import LogBuilder
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.case import CASE_FORMAT, CASE_VERSION
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.model import Relatedness, Verdict
from ci_triage.service import Triage
from ci_triage.store import Store

REPO = "acme-ml/serve-bench"
DAY = datetime(2026, 10, 3, 21, 0, tzinfo=UTC)
WORKDIR = "/opt/runner/_work/serve-bench/serve-bench"
SITE = "/opt/conda/lib/python3.12/site-packages"
CONFIG = """
[runners]
host_pattern = '^ghr-h100-(?P<host>a\\d+)-s\\d+$'

[policy]
possibly_related_blocks_rerun = true
"""
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of "
       "79.19 GiB of which 2.31 GiB is free. Process 3141592 has 41.50 GiB memory in use. Including non-PyTorch "
       "memory, this process has 35.37 GiB memory in use.")


def t(minutes: float) -> datetime:
    return DAY + timedelta(minutes=minutes)


def _failing_log(log: LogBuilder, end: datetime, *, oom: bool, runner: str) -> None:
    logtext.set_up_job(log, runner_name=runner, machine=runner[:-3], job_name="gpu", repo=REPO, hosted=False)
    log.begin("Run integration tests")
    log.write("##[group]Run python -m serve_bench.run --suite integration\n##[endgroup]")
    log.advance_to(end - timedelta(seconds=15))
    log.write("Traceback (most recent call last):")
    if oom:
        frames = [(f"{WORKDIR}/serve_bench/run.py", 77, "main"), (f"{WORKDIR}/serve_bench/model.py", 120, "load"),
                  (f"{SITE}/torch/nn/modules/module.py", 1340, "to")]
        last = OOM
    else:
        frames = [(f"{WORKDIR}/serve_bench/run.py", 70, "main"),
                  (f"{WORKDIR}/serve_bench/launcher.py", 40, "start_server"),
                  (f"{SITE}/uvicorn/server.py", 162, "startup")]
        last = "OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 29500): address already in use"
    for path, line, function in frames:
        log.write(f'  File "{path}", line {line}, in {function}')
    log.write(last)
    log.write("##[error]Process completed with exit code 1.", after_s=1)
    log.end("failure")


def _passing_log(log: LogBuilder, end: datetime, runner: str) -> None:
    logtext.set_up_job(log, runner_name=runner, machine=runner[:-3], job_name="gpu", repo=REPO, hosted=False)
    log.begin("Run integration tests")
    log.write("##[group]Run python -m serve_bench.run --suite integration\n##[endgroup]")
    log.advance_to(end - timedelta(seconds=5))
    log.write("42 passed in 1801.2s")
    log.end()


def build_case() -> dict[str, Any]:
    org = gh.user("acme-ml", 900, "Organization")
    repo = gh.repository(REPO, 77001, org, created=t(-9000), pushed=t(0))
    wf = gh.workflow(REPO, 5001, "GPU integration", ".github/workflows/gpu.yml", t(-9000))
    # (pr, changed files, [(job name, runner, start min, end min, outcome)])
    plan = [
        (301, ["docs/serving.md"], [("gpu-tests (mixtral)", "ghr-h100-a01-s0", 10, 19, "oom")]),
        (302, ["serve_bench/kv_cache.py"], [("gpu-tests (llama)", "ghr-h100-a01-s1", 5, 40, "pass")]),
        (303, ["serve_bench/launcher.py"], [("gpu-tests (llama)", "ghr-h100-a02-s0", 60, 63, "port")]),
        (304, ["serve_bench/tokenizer.py"], [("gpu-tests (mixtral)", "ghr-h100-a02-s1", 55, 90, "pass")]),
        (None, [], [("gpu-tests (mixtral)", "ghr-h100-a03-s0", 100, 131, "pass"),
                    ("gpu-tests (llama)", "ghr-h100-a03-s1", 100, 133, "pass")]),
    ]
    pulls, files, runs, jobs, logs = [], {}, [], [], {}
    for index, (number, changed, job_plan) in enumerate(plan):
        author = gh.user(f"dev{index}", 1000 + index)
        fork = gh.repository(f"dev{index}/serve-bench", 78000 + index, author, fork=True, created=t(-100), pushed=t(0))
        head_sha = gh.sha_of(f"serve-bench-{number}")
        created = t(job_plan[0][2] - 1)
        if number is not None:
            pull = gh.pull_request(repo, number, 9_000 + number, title=f"change {number}", author=author,
                                   head_repo=fork, head_ref=f"b{number}", head_sha=head_sha,
                                   base_sha=gh.sha_of("base"), created=created, updated=created)
            pulls.append(pull)
            files[str(number)] = [gh.changed_file(REPO, head_sha, name, additions=5, deletions=1) for name in changed]
        conclusion = "failure" if any(o != "pass" for *_, o in job_plan) else "success"
        run = gh.workflow_run(repo, wf, 60_000 + index, run_number=index + 1, attempt=1,
                              event="pull_request" if number else "push", head_branch=f"b{number}" if number else "main",
                              head_sha=head_sha, head_repo=fork if number else repo, pulls=[], actor=author,
                              title=f"change {number}", status="completed", conclusion=conclusion, created=created,
                              started=created, updated=t(job_plan[-1][3] + 1))
        runs.append(run)
        for offset, (name, runner, start, end, outcome) in enumerate(job_plan):
            log = LogBuilder(t(start))
            if outcome == "pass":
                _passing_log(log, t(end), runner)
            else:
                _failing_log(log, t(end), oom=outcome == "oom", runner=runner)
            job_id = 70_000 + index * 10 + offset
            jobs.append(gh.job(run, job_id, name=name, status="completed",
                               conclusion="success" if outcome == "pass" else "failure", created=created,
                               started=t(start), completed=t(end), labels=["self-hosted", "h100x8"], runner_id=job_id,
                               runner_name=runner, runner_group="gpu", steps=log.steps))
            logs[str(job_id)] = log.text()
    return {"format": CASE_FORMAT, "version": CASE_VERSION, "source": {"kind": "test"}, "repository": repo,
            "pulls": pulls, "pull_files": files, "workflows": [wf], "runs": runs, "jobs": jobs, "logs": logs,
            "annotations": {}, "files": {".github/ci-triage.toml": CONFIG}}


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[int, Any]:
    with FakeGitHub(build_case()) as fake, Store(tmp_path_factory.mktemp("s") / "s.sqlite3") as store:
        client = GitHubClient(Connection(fake.base_url, "t", retries=0))
        found = {pr: Triage(client, store).report(REPO, pr) for pr in (301, 303)}
        client.close()
    return found


def test_oom_beside_a_co_scheduled_job_is_an_infra_flake(reports):
    [verdict] = reports[301].failed_jobs
    facts = verdict.facts
    assert facts.classification.category == "accelerator_oom"
    # The repository's host_pattern puts s0 and s1 of a01 on one host; PR #302's job was there.
    assert [(o.pr, o.same_host) for o in facts.overlapping_jobs] == [(302, True)]
    assert facts.neighbour_hints == ("process 3141592 held 41.50 GiB on the device",)
    assert verdict.relatedness is Relatedness.UNRELATED
    assert verdict.verdict is Verdict.INFRA_FLAKE and verdict.rerun_recommended
    assert reports[301].notes == ()  # no host assumption: the repository said how hosts are named


def test_port_clash_in_the_prs_own_launcher_is_its_fault(reports):
    [verdict] = reports[303].failed_jobs
    facts = verdict.facts
    assert facts.classification.category == "port_in_use"
    assert facts.classification.captures["port"] == "29500"
    assert [o.pr for o in facts.overlapping_jobs] == [304]  # a neighbour existed, yet it is not the cause
    assert verdict.relatedness is Relatedness.RELATED
    assert verdict.related_changed_files == ("serve_bench/launcher.py",)
    assert verdict.verdict is Verdict.PR_RELATED and not verdict.rerun_recommended


def test_a_repository_rule_file_named_in_the_config_is_used(tmp_path):
    case = build_case()
    case["files"][".github/ci-triage.toml"] = CONFIG + '\n[rules]\nfile = ".github/ci-triage-rules.toml"\n'
    case["files"][".github/ci-triage-rules.toml"] = (
        "[[rule]]\nid='bench-oom'\ncategory='accelerator_oom'\nretryable=true\n"
        "patterns=['Tried to allocate (?P<size>[\\d.]+ GiB)']\n"
        "examples=['CUDA out of memory. Tried to allocate 4.00 GiB']\nnear_misses=['allocated 4.00 GiB']\n")
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        client = GitHubClient(Connection(fake.base_url, "t", retries=0))
        [verdict] = Triage(client, store).report(REPO, 301).failed_jobs
        client.close()
    assert verdict.facts.classification.rule_id == "bench-oom"
    assert verdict.facts.classification.captures["size"] == "4.00 GiB"
