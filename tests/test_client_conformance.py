"""The client is held to GitHub's description, not only to the fake: every request it makes on the demo
and on a fault run is checked against @octokit/openapi 23.0.2 (the vendored subset in
tests/github_schemas/): a documented method and path, only documented query parameters, values of the
declared type and enum. Every workflow_run and issue_comment example of @octokit/webhooks-examples
7.6.1 (tests/github_schemas/webhook-examples-events.json) goes through the event parsers."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ci_triage.act import Actor
from ci_triage.core.github.events import CommentEvent, WorkflowRunEvent, load_event
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.github.transport import RetryPolicy
from ci_triage.github.writer import GitHubWriter
from ci_triage.service import Triage
from ci_triage.store import Store
from tests.conftest import DEMO_REPO
from tests.fault_proxy import FaultProxy
from tests.github_schemas.validate import match_path, operation

EXAMPLES = Path(__file__).parent / "github_schemas" / "webhook-examples-events.json"


def _template(fake: FakeGitHub, method: str, path: str) -> str | None:
    # GitHub's Link URLs address the repository by id: an alias of /repos/{owner}/{repo}.
    path = re.sub(rf"^/repositories/{fake.index.repo_id}(?=/|$)", f"/repos/{DEMO_REPO}", path)
    return match_path(method, path)


def _check_value(name: str, value: str, schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    if kind == "integer":
        assert value.lstrip("-").isdigit(), f"{name}={value!r} is not an integer"
    elif kind == "boolean":
        assert value in ("true", "false"), f"{name}={value!r} is not a boolean"
    if "enum" in schema:
        assert value in [str(v) for v in schema["enum"]], f"{name}={value!r} not in {schema['enum']}"
    if name == "per_page":
        assert 1 <= int(value) <= 100


def assert_documented(fake: FakeGitHub) -> set[str]:
    seen = set()
    served = fake.served("api")
    assert served
    for request in served:
        if (request.method, request.path) == ("POST", "/graphql"):
            # GitHub's GraphQL endpoint (not in the REST description): only "who is this token",
            # asked because GET /user is 403 for installation tokens.
            assert "".join(str((request.body or {}).get("query")).split()) == "query{viewer{login}}"
            seen.add("POST /graphql")
            continue
        template = _template(fake, request.method, request.path)
        assert template is not None, f"{request.method} {request.path} is no documented operation"
        seen.add(f"{request.method} {template}")
        documented = {p["name"]: p for p in operation(request.method, template)["parameters"] if p["in"] == "query"}
        for name, values in request.query.items():
            assert name in documented, f"{request.method} {template}: undocumented query parameter {name!r}"
            assert len(values) == 1
            _check_value(name, values[0], documented[name].get("schema", {}))
    return seen


def test_every_request_of_a_demo_report_is_documented(demo_case, tmp_path) -> None:
    with FakeGitHub(demo_case) as fake:
        client = GitHubClient(Connection(fake.base_url, "t"))
        with Store(tmp_path / "s.sqlite3") as store:
            for pr in (66, 67, 71, 72):
                Triage(client, store).report(DEMO_REPO, pr)
        client.close()
        seen = assert_documented(fake)
    assert "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs" in seen


def test_every_request_of_a_triage_with_faults_is_documented(demo_case, tmp_path) -> None:
    # triage --apply (reads, the rerun and the comment) through the proxy with faults on the way.
    with FakeGitHub(demo_case) as fake, FaultProxy(fake) as proxy:
        connection = Connection(proxy.api_url, "t", timeout_s=1.0)
        policy = RetryPolicy(600, sleep=lambda s: None)
        client = GitHubClient(connection, policy=policy)
        fake.inject_secondary_limit("GET", r"/actions/runs/\d+/jobs$", None)
        fake.inject("GET", r"/pulls/67$", 502)
        proxy.add("cut_json", "GET", r"/actions/runs$")
        proxy.add("reset", "GET", r"/logs/\d+\.txt$")
        run = next(r for r in fake.index.latest_runs() if r["conclusion"] == "failure"
                   and r["head_sha"] == fake.index.pulls[67]["head"]["sha"])
        with Store(tmp_path / "s.sqlite3") as store, \
                GitHubWriter(connection, min_write_interval_s=0, policy=policy) as writer:
            outcome = Actor(Triage(client, store), writer).triage_run(DEMO_REPO, run["id"], apply=True)
        client.close()
        assert outcome.reruns and outcome.comment == "created"
        seen = assert_documented(fake)
    assert {"POST /repos/{owner}/{repo}/issues/{issue_number}/comments"} <= seen


# --- webhook examples ---------------------------------------------------------------------------

def _examples(event: str) -> list[tuple[str, dict[str, Any]]]:
    data = json.loads(EXAMPLES.read_text())
    assert data["source"]["version"] == "7.6.1"
    return [(f"{event}.{ex.get('action')}#{i}", ex) for i, ex in enumerate(data["examples"][event])]


@pytest.mark.parametrize("example", _examples("workflow_run"), ids=lambda e: e[0])
def test_every_workflow_run_example_parses(example: tuple[str, dict[str, Any]]) -> None:
    _, payload = example
    parsed = load_event(json.dumps(payload), "workflow_run")
    assert isinstance(parsed, WorkflowRunEvent)
    assert parsed.run_id == payload["workflow_run"]["id"] and parsed.repo == payload["repository"]["full_name"]


@pytest.mark.parametrize("example", _examples("issue_comment"), ids=lambda e: e[0])
def test_every_issue_comment_example_parses(example: tuple[str, dict[str, Any]]) -> None:
    _, payload = example
    parsed = load_event(json.dumps(payload), "issue_comment")
    assert isinstance(parsed, CommentEvent)
    assert parsed.comment_id == payload["comment"]["id"] and parsed.issue_number == payload["issue"]["number"]


@pytest.mark.parametrize("example", _examples("issue_comment")[:1], ids=lambda e: e[0])
def test_an_issue_comment_by_a_deleted_user_parses(example: tuple[str, dict[str, Any]]) -> None:
    # GitHub's schema: comment.user and issue.user are "Simple User" or null (a deleted account, shown
    # as "ghost"). The event must parse; nobody can be recognised as its author.
    payload = copy.deepcopy(example[1])
    payload["comment"]["user"] = None
    payload["issue"]["user"] = None
    parsed = load_event(json.dumps(payload), "issue_comment")
    assert isinstance(parsed, CommentEvent) and parsed.comment_id == payload["comment"]["id"]
