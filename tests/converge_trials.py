"""Concurrent `ci-triage` processes against one local fake GitHub: how many reruns and sticky comments result.

Shared by `tests/test_converge.py` (a few repetitions in the default suite) and `benchmarks/converge.py`
(20 or more, with counts). Each trial starts a fresh fake on the bundled demo case and runs real
`python -m ci_triage` subprocesses at once, each with its own `--store` (separate machines):

- `five`: five `triage --event <workflow_run> --apply` of PR 67's failed run;
- `bot`: one such triage beside one `bot --event <issue_comment "/rerun">` by the PR's author.

Identities: `actions` (an installation token, `ghs_...`: the fake acts as github-actions[bot] and
answers GET /user with 403, as GitHub does) or `pat` (a personal token of maintainer-mia, who has write
access: GET /user names her, her comments are hers). `python` runs the subprocesses with another
interpreter (e.g. a venv with main installed, to measure before a change; PYTHONPATH would not do, an
editable install's finder comes first).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_triage.core.decide.comment_state import MARKER, parse_comment
from ci_triage.demo import payloads
from ci_triage.demo.build import bundled_path
from ci_triage.demo.case_index import CaseIndex
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.case import load_case

EXAMPLES = json.loads((Path(__file__).parent / "github_schemas" / "webhook-examples.json").read_text())
RERUN_PATH = r"/actions/(runs/\d+/rerun-failed-jobs|jobs/\d+/rerun)$"
PR_NUMBER = 67
PAT = "ghp_convergeTrialPersonalToken0123456789"
INSTALLATION = "ghs_convergeTrialInstallationToken012345"
MAINTAINER = "maintainer-mia"
IDENTITIES = ("actions", "pat")
SCENARIOS = ("five", "bot")


@dataclass(frozen=True)
class Trial:
    scenario: str
    identity: str
    reruns: int  # rerun requests GitHub accepted (201)
    stickies: int  # sticky comments at the end (any author)
    records: int  # rerun records in the (first) sticky comment's state
    failures: list[str]  # stderr of processes that exited non-zero
    created: int = 0  # sticky comments created during the trial (duplicates a race made, then deleted)
    deleted: int = 0  # comments deleted (204)

    @property
    def ok(self) -> bool:
        return self.reruns == 1 and self.stickies == 1 and self.records == 1 and not self.failures


def _case() -> dict[str, Any]:
    case = load_case(bundled_path())
    case["collaborators"] = {MAINTAINER: "write"}
    return case


def _failed_run(case: dict[str, Any]) -> dict[str, Any]:
    pull = next(p for p in case["pulls"] if p["number"] == PR_NUMBER)
    return next(r for r in CaseIndex(case).latest_runs()
                if r["head_sha"] == pull["head"]["sha"] and r["conclusion"] == "failure")


def workflow_run_event(case: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    event = copy.deepcopy(EXAMPLES["examples"]["workflow_run.completed"][0])
    event["workflow_run"] = {**event["workflow_run"], **copy.deepcopy(run)}
    event["repository"] = {**event["repository"], **copy.deepcopy(case["repository"])}
    return event


def rerun_comment_event(case: dict[str, Any], commenter: dict[str, Any]) -> dict[str, Any]:
    """An issue_comment "/rerun" on the PR; the comment is also put in the case (it exists on GitHub
    before its event is delivered)."""
    from datetime import UTC, datetime

    event = copy.deepcopy(EXAMPLES["examples"]["issue_comment.created"][0])
    pull = next(p for p in case["pulls"] if p["number"] == PR_NUMBER)
    event["repository"] = {**event["repository"], **copy.deepcopy(case["repository"])}
    event["issue"].update(number=PR_NUMBER, user=copy.deepcopy(pull["user"]), title=pull["title"],
                          pull_request={"url": pull["url"], "html_url": pull["html_url"], "diff_url": pull["diff_url"],
                                        "patch_url": pull["patch_url"], "merged_at": None})
    event["comment"].update(id=987_654_321, body="/rerun", user={**event["comment"]["user"], **commenter})
    event["sender"] = {**event["sender"], "login": commenter["login"]}
    case.setdefault("comments", {})[str(PR_NUMBER)] = [payloads.issue_comment(
        case["repository"]["full_name"], PR_NUMBER, 987_654_321, "/rerun", commenter,
        datetime(2026, 5, 12, 16, 0, tzinfo=UTC))]
    return event


def _run(args: list[str], env: dict[str, str], python: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_TOKEN", "GH_TOKEN")}
    return subprocess.run([python, "-m", "ci_triage", *args], capture_output=True, text=True,
                          timeout=300, env={**base, **env}, cwd=cwd)  # not this checkout: `-m` looks in cwd first


def trial(scenario: str, identity: str, *, writers: int = 5, python: str | None = None,
          write_interval: float = 0.0) -> Trial:
    case = _case()
    run = _failed_run(case)
    pull = next(p for p in case["pulls"] if p["number"] == PR_NUMBER)
    maintainer = payloads.user(MAINTAINER, 7_700_001)
    with tempfile.TemporaryDirectory(prefix="converge-") as tmp:
        folder = Path(tmp)
        (folder / "run.json").write_text(json.dumps(workflow_run_event(case, run)))
        commands = [["triage", "--event", str(folder / "run.json"), "--apply", "--format", "json"]]
        if scenario == "five":
            commands *= writers
        else:
            author = {k: pull["user"][k] for k in ("login", "id", "type")}
            (folder / "comment.json").write_text(json.dumps(rerun_comment_event(case, author)))
            commands.append(["bot", "--event", str(folder / "comment.json"), "--format", "json"])
        with FakeGitHub(case, users={PAT: maintainer}) as fake:
            env = {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": PAT if identity == "pat" else INSTALLATION,
                   "CI_TRIAGE_WRITE_INTERVAL": str(write_interval), "GITHUB_EVENT_NAME": "issue_comment"}

            def start(index: int) -> subprocess.CompletedProcess[str]:
                args = [*commands[index][:1], "--store", str(folder / f"store-{index}.sqlite3"), *commands[index][1:]]
                return _run(args, env, python or sys.executable, folder)

            with ThreadPoolExecutor(max_workers=len(commands)) as pool:
                results = list(pool.map(start, range(len(commands))))
            reruns = [r for r in fake.served(path_regex=RERUN_PATH, method="POST") if r.status == 201]
            created = sum(1 for r in fake.served(path_regex=r"/issues/\d+/comments$", method="POST")
                          if r.status == 201 and isinstance(r.body, dict) and str(r.body.get("body")).startswith(MARKER))
            deleted = sum(1 for r in fake.served(method="DELETE") if r.status == 204)
            with fake._state:
                comments = [c for c in fake._comments_of(PR_NUMBER) if c["body"].startswith(MARKER)]
    state = parse_comment(comments[0]["body"]) if comments else None
    records = sum(len(r.reruns) for r in state.runs) if state else 0
    failures = [r.stderr.strip()[-500:] for r in results if r.returncode != 0]
    return Trial(scenario, identity, len(reruns), len(comments), records, failures, created, deleted)
