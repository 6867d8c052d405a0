"""Webhook payloads: GitHub's real examples, hand-made edge cases, and the /rerun command."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_triage.core.github.events import (
    CommentEvent,
    RerunCommand,
    WorkflowRunEvent,
    load_event,
    parse_issue_comment,
    parse_rerun_command,
    parse_workflow_run,
)
from ci_triage.errors import UsageError

EXAMPLES: dict[str, list[dict[str, Any]]] = json.loads(
    (Path(__file__).parent / "github_schemas" / "webhook-examples.json").read_text())["examples"]
WORKFLOW_RUN = [(name, index) for name in sorted(EXAMPLES) if name.startswith("workflow_run.")
                for index in range(len(EXAMPLES[name]))]
ISSUE_COMMENT = [("issue_comment.created", index) for index in range(len(EXAMPLES["issue_comment.created"]))]


def example(name: str, index: int = 0) -> dict[str, Any]:
    return copy.deepcopy(EXAMPLES[name][index])


def test_the_vendored_examples_are_there():
    assert len(WORKFLOW_RUN) >= 5 and len(ISSUE_COMMENT) >= 1
    assert {"workflow_run.completed", "workflow_run.requested"} <= set(EXAMPLES)


@pytest.mark.parametrize(("name", "index"), WORKFLOW_RUN)
def test_every_workflow_run_example_parses(name, index):
    payload = example(name, index)
    event = load_event(json.dumps(payload), "workflow_run")
    assert isinstance(event, WorkflowRunEvent)
    run = payload["workflow_run"]
    assert event.action == name.split(".")[1] == payload["action"]
    assert event.repo == payload["repository"]["full_name"]
    assert (event.run_id, event.head_sha, event.status, event.conclusion) == (
        run["id"], run["head_sha"], run["status"], run["conclusion"])
    assert event.run_attempt == run.get("run_attempt", 1) >= 1
    assert event.head_repo == run["head_repository"]["full_name"]


@pytest.mark.parametrize(("name", "index"), ISSUE_COMMENT)
def test_every_issue_comment_example_parses(name, index):
    payload = example(name, index)
    event = load_event(json.dumps(payload), "issue_comment")
    assert isinstance(event, CommentEvent)
    assert event == CommentEvent("created", "Codertocat/Hello-World", 1, False, payload["comment"]["id"],
                                 payload["comment"]["body"], "Codertocat", "OWNER", "Codertocat")


def test_a_comment_on_a_pull_request_is_marked_so():
    payload = example("issue_comment.created")
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
    payload["comment"]["body"] = "/rerun --force"
    payload["comment"]["user"]["login"] = "maintainer"
    event = parse_issue_comment(payload)
    assert event.is_pull_request and event.commenter == "maintainer" and event.issue_author == "Codertocat"
    assert parse_rerun_command(event.comment_body) == RerunCommand(force=True)


def test_pull_numbers_are_only_prs_into_this_repository():
    payload = example("workflow_run.completed", 2)
    # The example's PR targets Codertocat/Hello-World while the event is octo-org/octo-repo's: the
    # quirk of workflow_run.pull_requests listing other repositories' PRs whose head matches.
    assert payload["workflow_run"]["pull_requests"][0]["base"]["repo"]["id"] != payload["repository"]["id"]
    assert parse_workflow_run(payload).pull_numbers == ()
    payload["workflow_run"]["pull_requests"][0]["base"]["repo"]["id"] = payload["repository"]["id"]
    assert parse_workflow_run(payload).pull_numbers == (2,)


def test_a_fork_run_and_a_deleted_fork():
    payload = example("workflow_run.completed", 1)
    run = payload["workflow_run"]
    run.update(conclusion="failure", event="pull_request", pull_requests=[], head_repository=None,
               run_attempt=2, name="")
    event = parse_workflow_run(payload)
    assert event.head_repo is None and event.pull_numbers == () and event.run_attempt == 2
    assert event.workflow_name == payload["workflow"]["name"]  # the run had no name of its own
    assert event.is_failed_completion


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda p: p.pop("workflow_run"), "workflow_run is missing"),
    (lambda p: p["workflow_run"].update(id="12"), "id is not a non-negative integer"),
    (lambda p: p["workflow_run"].update(id=True), "id is not a non-negative integer"),
    (lambda p: p["workflow_run"].update(pull_requests=None), "pull_requests is not a list"),
    (lambda p: p["workflow_run"].update(head_sha=None), "head_sha is not a string"),
    (lambda p: p["repository"].pop("full_name"), "repository.full_name is missing"),
    (lambda p: p["workflow_run"]["pull_requests"].append({"number": "3"}), "number is not"),
])
def test_a_malformed_workflow_run_is_one_clear_usage_error(mutate, message):
    payload = example("workflow_run.completed", 2)
    mutate(payload)
    with pytest.raises(UsageError) as raised:
        load_event(json.dumps(payload), "workflow_run")
    assert message in raised.value.one_line() and "\n" not in raised.value.one_line()


@pytest.mark.parametrize(("text", "name", "message"), [
    ("{not json", "workflow_run", "is not JSON"),
    ("[1, 2]", "issue_comment", "not a JSON object"),
    ('"text"', "workflow_run", "not a JSON object"),
    ("{}", "issue_comment", "issue is missing"),
    ("{}", "pull_request_target", "unexpected event 'pull_request_target'"),
    ("[" * 100_000, "workflow_run", "is not JSON"),
])
def test_unexpected_or_malformed_events(text, name, message):
    with pytest.raises(UsageError) as raised:
        load_event(text, name)
    assert message in raised.value.one_line()


def test_a_workflow_run_payload_is_not_an_issue_comment():
    with pytest.raises(UsageError, match="not an issue_comment event"):
        load_event(json.dumps(example("workflow_run.completed")), "issue_comment")


def test_a_null_comment_body_is_empty():
    payload = example("issue_comment.created")
    payload["comment"]["body"] = None
    assert parse_issue_comment(payload).comment_body == ""


@settings(max_examples=80, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                                     max_size=4), max_leaves=20))
def test_any_json_is_an_event_or_a_usage_error(value):
    for name in ("workflow_run", "issue_comment"):
        try:
            load_event(json.dumps(value), name)
        except UsageError:
            pass


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["workflow_run", "issue_comment"]), st.data())
def test_examples_with_a_field_removed_parse_or_fail_cleanly(name, data):
    payload = example("workflow_run.completed", 2) if name == "workflow_run" else example("issue_comment.created")
    section = data.draw(st.sampled_from(["workflow_run", "repository", "issue", "comment"]
                                        if name == "issue_comment" else ["workflow_run", "repository"]))
    if section in payload and isinstance(payload[section], dict) and payload[section]:
        key = data.draw(st.sampled_from(sorted(payload[section])))
        payload[section][key] = data.draw(st.none() | st.integers() | st.text(max_size=5) | st.just([]))
    try:
        load_event(json.dumps(payload), name)
    except UsageError:
        pass


# --- /rerun ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "expected"), [
    ("/rerun", RerunCommand(force=False)),
    ("/rerun --force", RerunCommand(force=True)),
    ("  /rerun  ", RerunCommand()),
    ("/rerun\r\n", RerunCommand()),
    ("\r\n\n/rerun --force\r\nthe port clash again", RerunCommand(force=True)),
    ("/RERUN", RerunCommand()),
    ("/rerun\t--force", RerunCommand(force=True)),
    ("/rerun\nplease look at the NPU host", RerunCommand()),
])
def test_rerun_commands(body, expected):
    assert parse_rerun_command(body) == expected


@pytest.mark.parametrize("body", [
    None, "", "   ", "> /rerun", ">/rerun", "> /rerun\n\nNo, do not rerun this.", "/rerunall", "/rerun please",
    "/rerun --forcefully", "/rerun --force --force-push", "please /rerun", "Could you /rerun?", "/re-run",
    "`/rerun`", "/rerun " + "x" * 500, "—/rerun",
])
def test_not_rerun_commands(body):
    assert parse_rerun_command(body) is None


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_rerun_parser_never_raises_and_needs_the_command_first(body):
    command = parse_rerun_command(body)
    if command is not None:
        first = next(line for line in body.replace("\r", "\n").split("\n") if line.strip())
        assert first.strip().lower().startswith("/rerun")
