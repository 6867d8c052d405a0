"""The bundled runner-health demo: a RECONSTRUCTION of two weeks of the founding repository's CI, not
a recording. Regenerate with `python -m ci_triage.demo.fleet` (deterministic: a fixed seed).

What it keeps from the seed write-up (shared/seed/) and the PR case (scenario.py): the NPU vLLM
example matrix (eagle3, dflash, dspark; one run's jobs serialised, `max-parallel: 1`, about 17
minutes each) on self-hosted runners `linux-aarch64-a2-8-nodeN-rK` that share hosts, whose example
jobs die at engine start-up with `DistNetworkError ... code: -98` (EADDRINUSE) when another PR's job
holds the rendezvous port on the same host; the CPU unit tests on GitHub-hosted runners.

What is invented: the dates (2026-05-12 to 2026-05-25), the PR numbers, branch names, ids, the load
(sixteen example runs and sixteen CPU runs a day, created 09:00-15:00), and the two causes this demo is built to show:
- host node4 (one runner process) has leaked processes from earlier jobs that hold ports: about a
  third of its example jobs fail with EADDRINUSE whatever else runs (the host `runners` must mark sick);
- a dflash job that starts while another PR's eagle3 job runs on the same host (the other runner
  process) usually loses the port race (the pair `runners` must name as the top hotspot);
- reruns: a failed example run is rerun (failed jobs only, up to attempt 3), by ci-triage
  (triggering actor github-actions[bot]) for a port clash, otherwise by the PR's author.
"""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from ci_triage.demo import logs as logtext
from ci_triage.demo import payloads as gh
from ci_triage.demo.logs import LogBuilder
from ci_triage.demo.scenario import CPU_WORKFLOW, EXAMPLE_WORKFLOW, POOL_LABEL, REPO, REPO_ID, _repository_files
from ci_triage.github.case import CASE_FORMAT, CASE_VERSION, dump_case

CASE_FILE = "verl-speco-fleet.case.json.gz"
FIRST_DAY = datetime(2026, 5, 12, tzinfo=UTC)
DAYS = 14
DEMO_NOW = FIRST_DAY + timedelta(days=DAYS)  # `runners --demo --since 14d` covers the whole case
SEED = 14
RUNNERS = ("node1-r0", "node1-r1", "node2-r0", "node2-r1", "node3-r0", "node3-r1", "node4-r0")
LEAKING_HOST = "node4"
LEAK_RATE = 0.35
CLASH_RATE = 0.8  # dflash starting beside another PR's eagle3 on the same host
RUNS_PER_DAY = 16
NOISE_RATE = 0.01  # an example job's own test failure
EXAMPLES = ("eagle3", "dflash", "dspark")
EXAMPLE_MINUTES = 17
BOT = "github-actions[bot]"
AUTHORS = ("alice-npu", "bob-drafts", "carol-spec", "khazic", "erin-ci")


def bundled_path() -> Path:
    return Path(str(resources.files("ci_triage.demo").joinpath(CASE_FILE)))


def _log(start: datetime, end: datetime, runner: str, name: str, outcome: str, port: int) -> str:
    log = LogBuilder(start)
    logtext.set_up_job(log, runner_name=runner, machine=runner.rsplit("-", 1)[0], job_name=name, repo=REPO,
                       hosted=runner.startswith("GitHub"))
    log.begin("Run example script" if "example" in name else "Run CPU unit tests")
    log.advance_to(end - timedelta(seconds=20))
    if outcome == "port":
        log.write("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                  f"address. port: {port}, useIpv6: false, code: -98, name: [::]:{port}, message: address already in use")
    else:
        log.write("FAILED tests/integration/test_examples.py::test_acceptance_length - AssertionError: assert 1.9 > 2.0")
        log.write("1 failed, 80 passed in 31.10s")
    log.write("##[error]Process completed with exit code 1.", after_s=0.4)
    log.end("failure")
    return log.text()


def build_case() -> dict[str, Any]:
    rng = random.Random(SEED)
    users = {login: gh.user(login, 190_000_100 + i, "User") for i, login in enumerate(AUTHORS)}
    users["speco-demo"] = gh.user("speco-demo", 190_000_001, "Organization")
    users[BOT] = gh.user(BOT, 41_898_282, "Bot")
    repo = gh.repository(REPO, REPO_ID, users["speco-demo"], created=datetime(2025, 9, 2, tzinfo=UTC),
                         pushed=DEMO_NOW - timedelta(hours=1),
                         description="Speculative-decoding drafter training — ci-triage runner-health demo "
                                     "reconstruction")
    example_wf = gh.workflow(REPO, 158_204_117, "NPU vLLM examples", EXAMPLE_WORKFLOW, datetime(2025, 11, 3, tzinfo=UTC))
    cpu_wf = gh.workflow(REPO, 158_204_118, "CPU unit tests", CPU_WORKFLOW, datetime(2025, 9, 2, tzinfo=UTC))
    runs: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    logs: dict[str, str] = {}
    free_at = {runner: FIRST_DAY for runner in RUNNERS}
    busy: list[tuple[str, datetime, datetime, str, int]] = []  # (runner, start, end, example, run id)
    next_run, next_job, next_pr = 16_000_000_000, 43_000_000_000, 100
    run_numbers = {example_wf["id"]: 500, cpu_wf["id"]: 1400}

    def run_payload(wf, run_id, attempt, pr, author, created, started, finished, conclusion, actor):
        head_sha = gh.sha_of(f"fleet-{pr}-{run_id}")
        pull = {"url": f"{gh.API}/repos/{REPO}/pulls/{pr}", "id": 2_600_000_000 + pr, "number": pr,
                "head": {"ref": f"change-{pr}", "sha": head_sha}, "base": {"ref": "main", "sha": gh.sha_of("main")}}
        return gh.workflow_run(repo, wf, run_id, run_number=run_numbers[wf["id"]], attempt=attempt,
                               event="pull_request", head_branch=f"change-{pr}", head_sha=head_sha, head_repo=repo,
                               pulls=[pull], actor=users[author], title=f"change #{pr}", status="completed",
                               conclusion=conclusion, created=created, started=started,
                               updated=finished + timedelta(seconds=4)) | {"triggering_actor": users[actor]}

    def outcome_of(runner: str, example: str, start: datetime, run_id: int) -> str:
        host = runner.rsplit("-", 1)[0]
        if host == LEAKING_HOST and rng.random() < LEAK_RATE:
            return "port"
        if example == "dflash" and any(
                other_runner != runner and other_runner.rsplit("-", 1)[0] == host and other_example == "eagle3"
                and other_run != run_id and s <= start < e for other_runner, s, e, other_example, other_run in busy):
            if rng.random() < CLASH_RATE:
                return "port"
        return "test" if rng.random() < NOISE_RATE else "success"

    def run_examples(wf_run_id: int, attempt: int, pr: int, author: str, created: datetime, which, actor: str):
        nonlocal next_job
        # A queued run takes a runner that is free when it is created, any of them (GitHub does not
        # spread jobs over hosts), else the first to be free.
        idle = [r for r in RUNNERS if free_at[r] <= created]
        runner = rng.choice(idle) if idle else min(RUNNERS, key=lambda r: free_at[r])
        at = max(free_at[runner], created) + timedelta(seconds=rng.randint(20, 90))
        run_numbers[example_wf["id"]] += attempt == 1
        executed = []
        for example in which:
            minutes = EXAMPLE_MINUTES + rng.uniform(-1.5, 1.5)
            outcome = outcome_of(runner, example, at, wf_run_id)
            end = at + timedelta(minutes=12.2 if outcome == "port" else minutes)
            busy.append((runner, at, end, example, wf_run_id))
            executed.append((example, runner, at, end, outcome))
            at = end + timedelta(seconds=rng.randint(15, 40))
        free_at[runner] = at
        failed = [e for e in executed if e[4] != "success"]
        run = run_payload(example_wf, wf_run_id, attempt, pr, author, created, executed[0][2], executed[-1][3],
                          "failure" if failed else "success", actor)
        runs.append(run)
        for example, runner_name, start, end, outcome in executed:
            next_job += 1 + next_job % 7
            name = f"vllm-example ({example})"
            full_runner = f"{POOL_LABEL}-{runner_name}"
            jobs.append(gh.job(run, next_job, name=name, status="completed",
                               conclusion="success" if outcome == "success" else "failure", created=created,
                               started=start, completed=end, labels=["self-hosted", POOL_LABEL],
                               runner_id=RUNNERS.index(runner_name) + 1, runner_name=full_runner,
                               runner_group="Default", steps=[]))
            if outcome != "success":
                logs[str(next_job)] = _log(start, end, full_runner, name, outcome, rng.randint(29500, 29999))
        return failed, executed[-1][3]

    for day in range(DAYS):
        for _ in range(RUNS_PER_DAY):
            pr, author = next_pr, rng.choice(AUTHORS)
            next_pr += 1
            created = FIRST_DAY + timedelta(days=day, hours=rng.uniform(9, 15))
            next_run += 1 + next_run % 5
            run_id = next_run
            failed, finished = run_examples(run_id, 1, pr, author, created, EXAMPLES, author)
            attempt = 1
            while failed and attempt < 3:
                port_clash = any(outcome == "port" for *_, outcome in failed)
                actor = BOT if port_clash and rng.random() < 0.7 else author
                attempt += 1
                failed, finished = run_examples(run_id, attempt, pr, author,
                                                finished + timedelta(minutes=rng.uniform(2, 30)),
                                                [f[0] for f in failed], actor)
            # CPU unit tests of the same change, on a GitHub-hosted runner.
            next_run += 1 + next_run % 5
            run_numbers[cpu_wf["id"]] += 1
            start = created + timedelta(seconds=rng.randint(15, 40))
            end = start + timedelta(seconds=rng.randint(80, 110))
            outcome = "test" if rng.random() < 0.03 else "success"
            cpu_run = run_payload(cpu_wf, next_run, 1, pr, author, created, start, end,
                                  "failure" if outcome != "success" else "success", author)
            runs.append(cpu_run)
            next_job += 1 + next_job % 7
            runner = f"GitHub Actions {1000 + next_job % 997}"
            jobs.append(gh.job(cpu_run, next_job, name="cpu-unit-tests", status="completed",
                               conclusion="success" if outcome == "success" else "failure", created=created,
                               started=start, completed=end, labels=["ubuntu-latest"], runner_id=1000 + next_job % 997,
                               runner_name=runner, runner_group="GitHub Actions", steps=[]))
            if outcome != "success":
                logs[str(next_job)] = _log(start, end, runner, "cpu-unit-tests", outcome, 0)
    return {
        "format": CASE_FORMAT,
        "version": CASE_VERSION,
        "source": {
            "kind": "reconstruction",
            "description": "Reconstruction of two weeks of the founding repository's CI for `runners --demo`, "
                           "built by ci_triage/demo/fleet.py (seed 14). Load, names, ids and dates are invented; "
                           "see that module's docstring.",
            "seed": "shared/seed/000_d875c78f1975d31e.txt",
        },
        "repository": repo,
        "pulls": [],
        "pull_files": {},
        "workflows": [example_wf, cpu_wf],
        "runs": runs,
        "jobs": jobs,
        "logs": logs,
        "annotations": {},
        "files": _repository_files(),
    }


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else bundled_path()
    dump_case(build_case(), target)
    print(target)


if __name__ == "__main__":
    main()
