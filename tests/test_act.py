"""Acting on the demo: reruns from workflow_run events, the sticky comment, /rerun, faults.

Events are GitHub's own example payloads (@octokit/webhooks-examples, vendored in
tests/github_schemas/webhook-examples.json) with the demo's run, repository and PR put in.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ci_triage.act import Actor
from ci_triage.core.decide.comment_state import MARKER, find_sticky, parse_comment
from ci_triage.core.github.events import parse_issue_comment, parse_workflow_run
from ci_triage.demo import payloads
from ci_triage.demo.case_index import CaseIndex
from ci_triage.demo.replay import FakeGitHub
from ci_triage.errors import TriageError
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.github.writer import GitHubWriter
from ci_triage.service import Triage
from ci_triage.store import Store
from tests.conftest import DEMO_REPO

EXAMPLES = json.loads((Path(__file__).parent / "github_schemas" / "webhook-examples.json").read_text())
RERUN_PATH = r"/actions/(runs/\d+/rerun-failed-jobs|jobs/\d+/rerun)$"


def latest_runs(case: dict[str, Any]) -> list[dict[str, Any]]:
    return CaseIndex(case).latest_runs()


def pr_of_run(case: dict[str, Any], run: dict[str, Any]) -> int | None:
    return next((p["number"] for p in case["pulls"] if p["head"]["sha"] == run["head_sha"]), None)


def workflow_run_event(case: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    event = copy.deepcopy(EXAMPLES["examples"]["workflow_run.completed"][0])
    event["workflow_run"] = {**event["workflow_run"], **copy.deepcopy(run)}
    event["repository"] = {**event["repository"], **copy.deepcopy(case["repository"])}
    return event


def comment_event(case: dict[str, Any], number: int, commenter: str, body: str) -> dict[str, Any]:
    event = copy.deepcopy(EXAMPLES["examples"]["issue_comment.created"][0])
    pull = next(p for p in case["pulls"] if p["number"] == number)
    event["repository"] = {**event["repository"], **copy.deepcopy(case["repository"])}
    event["issue"].update(number=number, user=copy.deepcopy(pull["user"]), title=pull["title"],
                          pull_request={"url": pull["url"], "html_url": pull["html_url"], "diff_url": pull["diff_url"],
                                        "patch_url": pull["patch_url"], "merged_at": None})
    event["comment"].update(id=987_654_321, body=body,
                            user={**event["comment"]["user"], "login": commenter, "type": "User"})
    event["sender"] = {**event["sender"], "login": commenter}
    # The comment exists on GitHub before its event is delivered.
    from datetime import UTC, datetime

    case.setdefault("comments", {})[str(number)] = [payloads.issue_comment(
        DEMO_REPO, number, 987_654_321, body, payloads.user(commenter, 555_000 + len(commenter)),
        datetime(2026, 5, 12, 16, 0, tzinfo=UTC))]
    return event


@pytest.fixture
def case(demo_case) -> dict[str, Any]:
    found = copy.deepcopy(demo_case)
    found["collaborators"] = {"maintainer-mia": "write"}
    return found


def actor_for(fake: FakeGitHub, store: Store) -> Actor:
    connection = Connection(fake.base_url, "test-token", retries=2, backoff_s=0.01)
    writer = GitHubWriter(connection, sleep=lambda s: None, min_write_interval_s=0)
    return Actor(Triage(GitHubClient(connection, sleep=lambda s: None), store), writer)


def reruns(fake: FakeGitHub) -> list[str]:
    return [r.path for r in fake.served(path_regex=RERUN_PATH, method="POST") if r.status == 201]


def attempts(fake: FakeGitHub, run_id: int) -> int:
    """The run's latest attempt as GitHub reports it: 1 + the reruns that took effect, answered or not."""
    with GitHubWriter(Connection(fake.base_url, "t"), min_write_interval_s=0) as writer:
        return writer.run(DEMO_REPO, run_id)["run_attempt"]


def sticky_comments(fake: FakeGitHub, number: int) -> list[dict[str, Any]]:
    connection = Connection(fake.base_url, "t")
    with GitHubWriter(connection, min_write_interval_s=0) as writer:
        return [c for c in writer.comments(DEMO_REPO, number) if c["body"].startswith(MARKER)]


def test_failed_run_events_rerun_exactly_the_infra_jobs(case, tmp_path):
    failed_runs = [r for r in latest_runs(case) if r["conclusion"] == "failure"]
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        actor = actor_for(fake, store)
        outcomes = {}
        for run in failed_runs:
            event = parse_workflow_run(workflow_run_event(case, run))
            assert event.is_failed_completion and event.run_id == run["id"]
            outcomes[run["id"]] = actor.triage_run(event.repo, event.run_id, apply=True)
        rerun_paths = reruns(fake)
        audited = {a["action"] for a in store.audit_log(DEMO_REPO)}
    expected = {f"/repos/{DEMO_REPO}/actions/runs/{r['id']}/rerun-failed-jobs" for r in failed_runs
                if pr_of_run(case, r) in (66, 67, 68, 70)}
    assert len(expected) == 4
    assert sorted(rerun_paths) == sorted(expected)  # one each, nothing else: not #71, #72 or main
    by_pr = {pr_of_run(case, r): outcomes[r["id"]] for r in failed_runs}
    assert by_pr[71].reruns == [] and by_pr[72].reruns == []
    assert by_pr[None].pr is None and by_pr[None].reruns == []  # the push to main: no PR to act for
    assert {by_pr[n].comment for n in (66, 67, 68, 70, 71, 72)} == {"created"}
    assert audited >= {"rerun", "comment_created"}


def test_plan_only_without_apply_writes_nothing(case, tmp_path):
    run = next(r for r in latest_runs(case) if pr_of_run(case, r) == 67 and r["conclusion"] == "failure")
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor_for(fake, store).triage_run(DEMO_REPO, run["id"], apply=False)
        # POST /graphql asks who the token is (`{ viewer { login } }`): a read, whatever its method.
        writes = [r for r in fake.served() if r.method != "GET" and r.path != "/graphql"]
    assert outcome.plans[0].mode == "failed" and outcome.reruns == [] and writes == []


def _run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT")}
    return subprocess.run([sys.executable, "-m", "ci_triage", *args], capture_output=True, text=True, timeout=180,
                          env={**base, **env})


@pytest.mark.parametrize("shared_store", [False, True], ids=["separate-machines", "one-machine"])
def test_the_same_event_five_times_at_once_reruns_once(case, tmp_path, shared_store):
    run = next(r for r in latest_runs(case) if pr_of_run(case, r) == 67 and r["conclusion"] == "failure")
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(workflow_run_event(case, run)))
    with FakeGitHub(case) as fake:
        def deliver(index: int) -> subprocess.CompletedProcess[str]:
            store = tmp_path / ("shared.sqlite3" if shared_store else f"store-{index}.sqlite3")
            return _run_cli(["triage", "--event", str(event_file), "--apply", "--format", "json"],
                            {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": "secret-token-xyz",
                             "CI_TRIAGE_STORE": str(store), "CI_TRIAGE_WRITE_INTERVAL": "0"})

        with ThreadPoolExecutor(max_workers=5) as pool:
            results = list(pool.map(deliver, range(5)))
        rerun_paths = reruns(fake)
        stickies = sticky_comments(fake, 67)
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "secret-token-xyz" not in result.stdout + result.stderr
    assert rerun_paths == [f"/repos/{DEMO_REPO}/actions/runs/{run['id']}/rerun-failed-jobs"]
    assert len(stickies) == 1  # on one machine or several: the writers converge (tests/test_converge.py)


def _with_failed_second_attempt(case: dict[str, Any], number: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The case with attempt 2 of PR `number`'s failed example run failing the same way again."""
    run = next(r for r in latest_runs(case) if pr_of_run(case, r) == number and r["conclusion"] == "failure")
    second = {**copy.deepcopy(run), "run_attempt": 2, "previous_attempt_url": f"{run['url']}/attempts/1"}
    case["runs"].append(second)
    for job in [j for j in case["jobs"] if j["run_id"] == run["id"]]:
        again = {**copy.deepcopy(job), "id": job["id"] + 7, "run_attempt": 2}
        case["jobs"].append(again)
        case["logs"][str(again["id"])] = case["logs"][str(job["id"])]
    return case, second


def test_a_second_failure_on_attempt_2_is_not_rerun_and_the_comment_says_why(case, tmp_path):
    case, second = _with_failed_second_attempt(case, 67)
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor_for(fake, store).triage_run(DEMO_REPO, second["id"], apply=True)
        assert reruns(fake) == []
        [sticky] = sticky_comments(fake, 67)
    assert outcome.plans[0].mode == "none"
    assert "Attempt 2" in sticky["body"] and "allows 1 automatic rerun(s) per run" in sticky["body"]


def test_an_unchanged_triage_does_not_edit_the_comment(case, tmp_path):
    run = next(r for r in latest_runs(case) if pr_of_run(case, r) == 71 and r["conclusion"] == "failure")
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        actor = actor_for(fake, store)
        assert actor.triage_run(DEMO_REPO, run["id"], apply=True).comment == "created"
        assert actor.triage_run(DEMO_REPO, run["id"], apply=True).comment == "unchanged"
        assert fake.served(method="PATCH") == []
        [sticky] = sticky_comments(fake, 71)
    assert "broken_base" in sticky["body"] and parse_comment(sticky["body"]) is not None


# --- /rerun ---------------------------------------------------------------------------------------

def _bot(case, tmp_path, number: int, commenter: str, body: str = "/rerun") -> tuple[Any, list[str], list[dict]]:
    event = parse_issue_comment(comment_event(case, number, commenter, body))
    tmp_path.mkdir(exist_ok=True)  # a missing store folder is an error, not created
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor_for(fake, store).handle_comment(event)
        connection = Connection(fake.base_url, "t")
        with GitHubWriter(connection, min_write_interval_s=0) as writer:
            comments = writer.comments(DEMO_REPO, number)
        return outcome, reruns(fake), comments


def test_rerun_from_an_outsider_is_refused(case, tmp_path):
    outcome, rerun_paths, comments = _bot(case, tmp_path, 67, "drive-by-dan")
    assert rerun_paths == [] and outcome.reruns == []
    [request, reply] = comments
    assert request["body"] == "/rerun"
    assert "Only the pull request's author or someone with write access" in reply["body"]
    assert find_sticky(comments) is None


def test_rerun_from_the_author_reruns_only_infra_flakes(case, tmp_path):
    outcome, rerun_paths, comments = _bot(case, tmp_path, 67, "khazic")
    run = next(r for r in latest_runs(case) if pr_of_run(case, r) == 67 and r["conclusion"] == "failure")
    assert rerun_paths == [f"/repos/{DEMO_REPO}/actions/runs/{run['id']}/rerun-failed-jobs"]
    assert find_sticky(comments) is not None
    assert any(c["body"].startswith("@khazic, rerunning") for c in comments)


def test_rerun_of_a_pr_whose_failure_is_its_own_reruns_nothing(case, tmp_path):
    outcome, rerun_paths, comments = _bot(case, tmp_path, 72, "alice-npu")
    assert rerun_paths == []
    assert any("not rerun, verdict pr_related" in c["body"] for c in comments)


def test_force_is_for_maintainers(case, tmp_path):
    _, author_forced, _ = _bot(case, tmp_path / "a", 72, "alice-npu", "/rerun --force")
    _, maintainer_forced, _ = _bot(case, tmp_path / "m", 72, "maintainer-mia", "/rerun --force")
    assert author_forced == [] and len(maintainer_forced) == 1


def test_bot_cli_end_to_end(case, tmp_path):
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(comment_event(case, 68, "bob-drafts", "/rerun\r\n")))
    with FakeGitHub(case) as fake:
        result = _run_cli(["bot", "--event", str(event_file), "--apply", "--format", "json"],
                          {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": "t", "GITHUB_EVENT_NAME": "issue_comment",
                           "CI_TRIAGE_STORE": str(tmp_path / "s.sqlite3"), "CI_TRIAGE_WRITE_INTERVAL": "0",
                           "GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "sum")})
        assert len(reruns(fake)) == 1
        reactions = fake.served(path_regex=r"/reactions$", method="POST")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["reruns"] and reactions
    assert "reran=true" in (tmp_path / "out").read_text()
    assert "### Actions taken" in (tmp_path / "sum").read_text()


# --- faults ---------------------------------------------------------------------------------------

FAULTS = {
    "5xx on the run": lambda f: f.inject("GET", r"/actions/runs/\d+$", 502, times=1),
    "5xx on the rerun": lambda f: f.inject("POST", r"/rerun-failed-jobs$", 503, times=1),
    "timeout after the rerun took effect": lambda f: f.inject_delay("POST", r"/rerun-failed-jobs$", 3.0, times=1),
    "reset after the rerun took effect": lambda f: f.inject_reset("POST", r"/rerun-failed-jobs$", times=1,
                                                                  processed=True),
    "primary limit on the rerun": lambda f: f.inject_primary_limit("POST", r"/rerun-failed-jobs$", reset_in_s=1),
    "secondary limit on comments": lambda f: f.inject_secondary_limit("POST", r"/comments$", retry_after_s=1),
    "expired log": lambda f: f.inject("GET", r"/actions/jobs/\d+/logs$", 410, times=50),
    "runner lost (no log)": lambda f: f.inject("GET", r"/actions/jobs/\d+/logs$", 404, times=50),
    "5xx listing comments": lambda f: f.inject("GET", r"/issues/\d+/comments$", 500, times=1),
    "rate limit far away": lambda f: f.inject_primary_limit("GET", r"/actions/runs/\d+$", reset_in_s=7200),
}
COMBINED = [("5xx on the run", "timeout after the rerun took effect", "secondary limit on comments"),
            ("expired log", "5xx on the rerun"), ("primary limit on the rerun", "reset after the rerun took effect")]


@pytest.mark.parametrize("faults", [(name,) for name in FAULTS] + COMBINED, ids=lambda f: " + ".join(f))
def test_fault_matrix(case, tmp_path, faults):
    run = next(r for r in latest_runs(case) if pr_of_run(case, r) == 67 and r["conclusion"] == "failure")
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        for name in faults:
            FAULTS[name](fake)
        actor = actor_for(fake, store)
        actor.writer.http.timeout = 1.0  # shorter than the injected delay
        try:
            outcome = actor.triage_run(DEMO_REPO, run["id"], apply=True)
        except TriageError as error:  # a clear, typed failure is acceptable; a crash or a duplicate is not
            outcome, failure = None, error
        else:
            failure = None
        taken = attempts(fake, run["id"]) - 1
    assert taken <= 1  # never a duplicate rerun, whatever was answered
    log_missing = {"expired log", "runner lost (no log)"} & set(faults)
    if log_missing:
        assert taken == 0  # never a rerun on incomplete evidence
        assert outcome is not None and outcome.plans[0].missing
    if faults == ("rate limit far away",):
        assert failure is not None and failure.code == "rate_limited" and taken == 0
    elif failure is not None:
        pytest.fail(f"{faults}: gave up with {failure.one_line()}")
    if not log_missing and outcome is not None:
        assert taken == 1
    assert "test-token" not in (failure.one_line() if failure else "")


# --- issue 11: who may /rerun, ghosts, foreign PRs, incomplete file lists (against the fake) ---------

PERMISSION_PATH = r"/collaborators/[^/]+/permission$"


def _bot_with(case, tmp_path, number: int, commenter: str, body: str, fault) -> tuple[Any, list[str], list[dict]]:
    """`_bot`, with a fault injected on the fake first."""
    event = parse_issue_comment(comment_event(case, number, commenter, body))
    tmp_path.mkdir(parents=True, exist_ok=True)  # the store refuses a missing folder
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        fault(fake)
        outcome = actor_for(fake, store).handle_comment(event)
        with GitHubWriter(Connection(fake.base_url, "t"), min_write_interval_s=0) as writer:
            comments = writer.comments(DEMO_REPO, number)
        return outcome, reruns(fake), comments


def test_a_custom_role_with_write_access_may_force(case, tmp_path):
    # GitHub: `role_name` is the custom role's name; `permission` its base level, which is what counts.
    answer = payloads.collaborator_permission(payloads.user("ci-reviewer", 777), "write")
    answer = {**answer, "role_name": "ci-reviewer", "user": {**answer["user"], "role_name": "ci-reviewer"}}
    _, forced, _ = _bot_with(case, tmp_path, 72, "ci-reviewer", "/rerun --force",
                             lambda fake: fake.inject("GET", PERMISSION_PATH, 200, body=answer))
    assert len(forced) == 1


def test_a_non_collaborator_404_refuses_outsiders_and_lets_the_author_rerun(case, tmp_path):
    outcome, outsider_reruns, comments = _bot_with(case, tmp_path / "o", 67, "drive-by-dan", "/rerun",
                                                   lambda fake: fake.inject("GET", PERMISSION_PATH, 404))
    assert outsider_reruns == [] and any("is not a collaborator" in n for n in outcome.notes)
    assert any("Only the pull request's author" in c["body"] for c in comments)
    _, author_reruns, _ = _bot_with(case, tmp_path / "a", 67, "khazic", "/rerun",
                                    lambda fake: fake.inject("GET", PERMISSION_PATH, 404))
    assert len(author_reruns) == 1


def test_a_403_on_the_permission_refuses_with_the_reason_instead_of_crashing(case, tmp_path):
    denied = {"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com"}
    outcome, rerun_paths, comments = _bot_with(
        case, tmp_path, 67, "drive-by-dan", "/rerun",
        lambda fake: fake.inject("GET", PERMISSION_PATH, 403, times=5, body=denied))
    assert rerun_paths == []
    assert any("cannot tell whether @drive-by-dan has write access" in n for n in outcome.notes)
    assert any("could not check your access" in c["body"] for c in comments)


def test_a_rerun_comment_by_a_deleted_user_does_nothing(case, tmp_path):
    payload = comment_event(case, 67, "ghost-to-be", "/rerun")
    payload["comment"]["user"] = None
    event = parse_issue_comment(payload)
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor_for(fake, store).handle_comment(event)
        # POST /graphql asks who the token is (`{ viewer { login } }`): a read, whatever its method.
        writes = [r for r in fake.served() if r.method != "GET" and r.path != "/graphql"]
    assert writes == [] and outcome.reruns == [] and "deleted" in outcome.notes[0]


def test_a_runs_pr_of_another_repository_is_not_taken_for_this_repositorys(case, tmp_path):
    run = next(r for r in latest_runs(case) if pr_of_run(case, r) == 67 and r["conclusion"] == "failure")
    own = next(p for p in run["pull_requests"] if p["number"] == 67) if run.get("pull_requests") else None
    upstream = {"id": 526, "url": "https://api.github.com/repos/github/hello-world", "name": "hello-world"}
    foreign = {"url": f"{upstream['url']}/pulls/3956", "id": 1934, "number": 3956,
               "head": {"ref": "say-hello", "sha": run["head_sha"], "repo": upstream},
               "base": {"ref": "master", "sha": "e7fdf7640066d71ad16a86fbcbb9c6a10a18af4f", "repo": upstream}}
    run["pull_requests"] = [foreign, *([own] if own else [])]  # GitHub lists the other repository's PR first
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        outcome = actor_for(fake, store).triage_run(DEMO_REPO, run["id"], apply=False)
    assert outcome.pr == 67


def test_a_pr_with_more_files_than_github_lists_is_never_unrelated(case, tmp_path):
    pull = next(p for p in case["pulls"] if p["number"] == 68)
    with FakeGitHub(case) as fake, Store(tmp_path / "s.sqlite3") as store:
        [listed] = Triage(GitHubClient(Connection(fake.base_url, "t"), sleep=lambda s: None), store).report(
            DEMO_REPO, 68).failed_jobs
    assert listed.relatedness.value == "unrelated"  # the complete list: the seed's answer
    pull["changed_files"] = 3_500  # the list endpoint stops at 3,000 files
    with FakeGitHub(case) as fake, Store(tmp_path / "s2.sqlite3") as store:
        [partial] = Triage(GitHubClient(Connection(fake.base_url, "t"), sleep=lambda s: None), store).report(
            DEMO_REPO, 68).failed_jobs
    assert partial.relatedness.value != "unrelated"
    assert any("GitHub lists only" in e.text for e in partial.evidence)
