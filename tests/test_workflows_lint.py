"""The privileged workflows and the composite action: triggers, least privilege, no PR code, no injection.

workflow_run and issue_comment workflows run from the default branch with a write token, also for PRs
from forks; these checks are what keeps them from becoming "pwn requests" or script-injection sinks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / "workflows"
PRIVILEGED = {"ci-triage.yml", "rerun-bot.yml"}
ALLOWED_PERMISSIONS = {"actions": {"read", "write"}, "checks": {"read"}, "contents": {"read"},
                       "pull-requests": {"read", "write"}, "metadata": {"read"}}
HEAD_REFS = re.compile(r"pull_request\.head|workflow_run\.head|head_sha|head_ref|head_branch|refs/pull/", re.I)


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    on = workflow.get("on", workflow.get(True))  # PyYAML reads a bare `on:` key as True (YAML 1.1)
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on


def steps_of(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "runs" in document:
        yield from document["runs"].get("steps", [])
    for job in (document.get("jobs") or {}).values():
        yield from job.get("steps", [])


def expression_problems(document: dict[str, Any]) -> list[str]:
    """`${{` anywhere in a step but its `env:`, `with:` and `if:`; and any `${{` in a `run:`."""
    problems = []
    for step in steps_of(document):
        for key, value in step.items():
            if key in ("env", "with", "if"):
                continue
            if "${{" in yaml.safe_dump(value):
                problems.append(f"step {step.get('name') or step.get('uses')!r}: `${{{{` in {key}:")
    return problems


def checkout_problems(document: dict[str, Any]) -> list[str]:
    problems = []
    for step in steps_of(document):
        if not str(step.get("uses", "")).startswith("actions/checkout"):
            continue
        options = step.get("with") or {}
        if "ref" in options or "repository" in options:
            problems.append(f"checkout with ref/repository: {options}")
        if HEAD_REFS.search(yaml.safe_dump(options)):
            problems.append(f"checkout of the PR head: {options}")
        if options.get("persist-credentials") is not False:
            problems.append("checkout keeps the token in .git/config (set persist-credentials: false)")
    return problems


def permission_problems(workflow: dict[str, Any]) -> list[str]:
    problems = []
    if "permissions" not in workflow:
        problems.append("no top-level permissions (the default token may be read/write for everything)")
    scopes = [("top level", workflow.get("permissions"))]
    scopes += [(f"job {name}", job.get("permissions", workflow.get("permissions")))
               for name, job in (workflow.get("jobs") or {}).items()]
    for where, permissions in scopes:
        if permissions is None:
            problems.append(f"{where}: no permissions")
        elif isinstance(permissions, str):
            problems.append(f"{where}: permissions {permissions!r} (use a mapping of the few scopes needed)")
        else:
            for scope, level in permissions.items():
                if level not in ALLOWED_PERMISSIONS.get(scope, set()) and level != "none":
                    problems.append(f"{where}: {scope}: {level}")
    return problems


def lint(document: dict[str, Any]) -> list[str]:
    problems = expression_problems(document) + checkout_problems(document)
    if "jobs" in document:
        problems += permission_problems(document)
        if "pull_request_target" in triggers(document):
            problems.append("pull_request_target")
    return problems


# --- the files ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_no_expression_in_scripts_in_any_workflow(name):
    document = load(WORKFLOWS / name)
    assert expression_problems(document) == []
    assert "pull_request_target" not in triggers(document)


@pytest.mark.parametrize("name", sorted(PRIVILEGED))
def test_privileged_workflows_pass_the_lint(name):
    assert (WORKFLOWS / name).exists()
    assert lint(load(WORKFLOWS / name)) == []


# The one id each privileged workflow's concurrency group must be keyed by: GitHub cancels the older
# pending run of a group when a newer one is queued, so a group shared by distinct events (a PR's
# runs, a PR's comments) drops work; keyed by the event itself, only a duplicate can be dropped.
EVENT_KEYS = {"ci-triage.yml": ("github.event.workflow_run.id", "github.event.workflow_run.run_attempt"),
              "rerun-bot.yml": ("github.event.comment.id",)}
PER_PR_KEYS = re.compile(r"pull_requests|head_branch|head_sha|issue\.number|github\.ref|head_repository")
PINNED_CHECKOUT = re.compile(r"actions/checkout@[0-9a-f]{40}")


@pytest.mark.parametrize("name", sorted(PRIVILEGED))
def test_privileged_workflows_are_least_privilege(name):
    workflow = load(WORKFLOWS / name)
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "write", "checks": "read", "contents": "read", "pull-requests": "write"}
    [checkout, action] = [s.get("uses") for s in job["steps"]]
    assert PINNED_CHECKOUT.fullmatch(checkout) and action == "./"
    raw = (WORKFLOWS / name).read_text()
    assert "write-all" not in raw and "contents: write" not in raw


@pytest.mark.parametrize("name", sorted(PRIVILEGED))
def test_privileged_workflows_group_only_duplicates_of_one_event(name):
    concurrency = load(WORKFLOWS / name)["concurrency"]
    assert concurrency["cancel-in-progress"] is False  # a cancelled triage could miss a rerun
    group = concurrency["group"]
    assert all(key in group for key in EVENT_KEYS[name]), group
    assert not PER_PR_KEYS.search(group), f"{group}: a group shared by a PR's events drops the older pending one"
    for job in load(WORKFLOWS / name)["jobs"].values():
        assert "concurrency" not in job


def test_ci_triage_runs_on_failed_workflow_runs_and_applies():
    workflow = load(WORKFLOWS / "ci-triage.yml")
    on = triggers(workflow)
    assert list(on) == ["workflow_run"]
    assert on["workflow_run"]["types"] == ["completed"] and on["workflow_run"]["workflows"]
    [job] = workflow["jobs"].values()
    assert job["if"].replace(" ", "") == "github.event.workflow_run.conclusion=='failure'"
    assert job["steps"][-1]["with"] == {"command": "triage"}


def test_rerun_bot_runs_on_pr_comments_starting_with_rerun():
    workflow = load(WORKFLOWS / "rerun-bot.yml")
    on = triggers(workflow)
    assert list(on) == ["issue_comment"] and on["issue_comment"]["types"] == ["created"]
    [job] = workflow["jobs"].values()
    condition = " ".join(job["if"].split())
    assert "github.event.issue.pull_request" in condition
    assert "startsWith(github.event.comment.body, '/rerun')" in condition
    assert job["steps"][-1]["with"] == {"command": "rerun-bot"}


def test_the_action_is_composite_installs_itself_and_runs_the_commands_from_env():
    action = load(ROOT / "action.yml")
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert inputs["command"]["required"] is True
    assert inputs["token"]["default"] == "${{ github.token }}"
    assert "config" in inputs
    assert lint(action) == []
    steps = action["runs"]["steps"]
    assert not any(str(s.get("uses", "")).startswith("actions/checkout") for s in steps)  # never the PR's code
    scripts = {s.get("name"): s for s in steps if "run" in s}
    assert all(s.get("shell") == "bash" for s in scripts.values())  # composite run steps need a shell
    install = scripts["Install ci-triage from the action's own files"]["run"]
    assert '"$GITHUB_ACTION_PATH"' in install and "GITHUB_WORKSPACE" not in install
    triage = scripts["Triage the failed run"]
    assert triage["env"]["RUN_ID"] == "${{ github.event.workflow_run.id }}"
    assert triage["env"]["GITHUB_TOKEN"] == "${{ inputs.token }}"
    assert 'args=(triage --run-id "$RUN_ID" --apply)' in triage["run"]
    bot = scripts["Answer /rerun"]
    assert 'args=(bot --event "$GITHUB_EVENT_PATH" --apply)' in bot["run"]  # bot only plans without it
    assert "comment" not in yaml.safe_dump(bot.get("env", {}))  # the comment is read from the event file
    for step in steps:  # the token goes in env, never on a command line or into a log
        assert "TOKEN" not in step.get("run", "")


def test_the_docs_explain_use_permissions_and_security():
    text = (ROOT / "docs" / "action.md").read_text()
    for needle in ("uses: OWNER/ci-triage@FULL_COMMIT_SHA", "## Permissions", "## Security", "pwn request",
                   "pull-requests: write", "GITHUB_EVENT_PATH", "persist-credentials", "## Concurrency",
                   "will be canceled", "dangerous-triggers"):
        assert needle in text


# A `uses:` of another repository: owner/name[/path]@ref. Local (`./`) and docker:// references are not pinned.
REMOTE_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>[\w.-]+/[\w./-]+)@(?P<ref>\S+)(?P<rest>.*)$", re.M)
FULL_SHA = re.compile(r"[0-9a-f]{40}")
VERSION_COMMENT = re.compile(r"\s+# v\d+\.\d+\.\d+\b")
PINNED_FILES = sorted(p.relative_to(ROOT).as_posix() for p in [*WORKFLOWS.glob("*.yml"), ROOT / "action.yml"])


def pin_problems(text: str) -> list[str]:
    """Every remote action pinned to a full commit SHA, its version (vX.Y.Z) in a comment after it."""
    problems = []
    for use in REMOTE_USES.finditer(text):
        if not FULL_SHA.fullmatch(use["ref"]):
            problems.append(f"{use['action']}@{use['ref']}: not a full commit SHA (a tag can be moved)")
        elif not VERSION_COMMENT.match(use["rest"]):
            problems.append(f"{use['action']}@{use['ref']}: no `# vX.Y.Z` comment naming the pinned version")
    return problems


@pytest.mark.parametrize("name", PINNED_FILES)
def test_every_action_is_pinned_to_a_commit_sha_with_its_version(name):
    text = (ROOT / name).read_text()
    assert REMOTE_USES.search(text)  # each file uses at least one action, so the check has something to check
    assert pin_problems(text) == []


def test_one_action_is_pinned_to_one_commit_everywhere():
    pins: dict[str, set[str]] = {}
    for name in PINNED_FILES:
        for use in REMOTE_USES.finditer((ROOT / name).read_text()):
            pins.setdefault(use["action"], set()).add(f"{use['ref']}{use['rest']}".strip())
    assert {"actions/checkout", "actions/setup-python", "actions/upload-artifact"} <= set(pins)
    assert {action: refs for action, refs in pins.items() if len(refs) > 1} == {}


def test_the_pin_check_catches_tags_and_missing_versions():
    text = """
    - uses: actions/checkout@v4
    - uses: actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065
    - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2
    - uses: ./
"""
    assert pin_problems(text) == [
        "actions/checkout@v4: not a full commit SHA (a tag can be moved)",
        "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065: no `# vX.Y.Z` comment naming the pinned version",
    ]


# --- the lint itself can fail ------------------------------------------------------------------------
BAD = """
name: bad
on:
  pull_request_target:
permissions: write-all
jobs:
  build:
    runs-on: ubuntu-latest
    permissions:
      contents: write
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: echo "${{ github.event.comment.body }}"
      - name: ${{ github.head_ref }}
        run: make
"""


def test_the_lint_catches_each_mistake():
    problems = "\n".join(lint(yaml.safe_load(BAD)))
    for expected in ("`${{` in run:", "`${{` in name:", "checkout with ref", "checkout of the PR head",
                     "persist-credentials", "permissions 'write-all'", "contents: write", "pull_request_target"):
        assert expected in problems
