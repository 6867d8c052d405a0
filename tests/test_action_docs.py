"""docs/action.md's workflow snippets are the shipped workflows, so the two cannot drift.

Another repository copies the snippets; this repository runs workflows/*.yml. They may differ only in
what a copy must differ in: the watched workflow names, comments, and how the action is found
(`uses: OWNER/ci-triage@SHA` there; a checkout of the default branch and `uses: ./` here). Everything
else (triggers, the job's `if:` filter, permissions, concurrency, timeouts, inputs) must be equal.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_workflows_lint import PRIVILEGED, WORKFLOWS, load, triggers

DOCS = Path(__file__).resolve().parent.parent / "docs" / "action.md"
SNIPPET = re.compile(r"```yaml\n# \.github/workflows/(?P<name>[\w.-]+\.yml)\n(?P<body>.*?)```", re.S)
DOCS_USES = re.compile(r"OWNER/ci-triage@FULL_COMMIT_SHA")
THE_ACTION = "<ci-triage>"


def snippets(text: str) -> dict[str, dict[str, Any]]:
    return {m["name"]: yaml.safe_load(m["body"]) for m in SNIPPET.finditer(text)}


def comparable(workflow: dict[str, Any], *, shipped: bool) -> dict[str, Any]:
    """The workflow with what may differ between the copy and the shipped file replaced by placeholders."""
    workflow = copy.deepcopy(workflow)
    on = triggers(workflow)
    workflow.pop(True, None)  # PyYAML reads a bare `on:` key as True
    workflow["on"] = on
    if "workflow_run" in on:
        on["workflow_run"]["workflows"] = "<the watched workflows>"
    for job in workflow["jobs"].values():
        if "if" in job:
            job["if"] = " ".join(job["if"].split())  # `>-` folding and line breaks are formatting
        steps = job["steps"]
        if shipped:  # the checkout exists only so that `uses: ./` finds action.yml
            steps = [s for s in steps if not str(s.get("uses", "")).startswith("actions/checkout@")]
        for step in steps:
            uses = str(step.get("uses", ""))
            if (shipped and uses == "./") or (not shipped and DOCS_USES.fullmatch(uses)):
                step["uses"] = THE_ACTION
        job["steps"] = steps
    return workflow


def test_the_docs_have_a_snippet_for_each_shipped_privileged_workflow():
    assert set(snippets(DOCS.read_text())) == PRIVILEGED


@pytest.mark.parametrize("name", sorted(PRIVILEGED))
def test_the_docs_snippet_is_the_shipped_workflow(name):
    documented = comparable(snippets(DOCS.read_text())[name], shipped=False)
    shipped = comparable(load(WORKFLOWS / name), shipped=True)
    assert documented == shipped
    [job] = documented["jobs"].values()
    assert [step["uses"] for step in job["steps"]] == [THE_ACTION]  # the copy runs the action, nothing else


def test_a_drifted_snippet_is_caught():
    """The bot filter dropped from the copy, or a per-PR group added back, makes the comparison fail."""
    documented = snippets(DOCS.read_text())["rerun-bot.yml"]
    shipped = comparable(load(WORKFLOWS / "rerun-bot.yml"), shipped=True)
    without_bot_filter = copy.deepcopy(documented)
    without_bot_filter["jobs"]["rerun"]["if"] = (
        "github.event.issue.pull_request && startsWith(github.event.comment.body, '/rerun')")
    per_pr_group = copy.deepcopy(documented)
    per_pr_group["concurrency"]["group"] = "ci-triage-pr-${{ github.event.issue.number }}"
    pinned_to_a_tag = copy.deepcopy(documented)
    pinned_to_a_tag["jobs"]["rerun"]["steps"][0]["uses"] = "OWNER/ci-triage@v1"
    for drifted in (without_bot_filter, per_pr_group, pinned_to_a_tag):
        assert comparable(drifted, shipped=False) != shipped
