"""Tests for the vendored GitHub schema subset and its validator."""

from __future__ import annotations

import copy
import json

import pytest

from . import validate as v

OPERATIONS = [
    "GET /repos/{owner}/{repo}",
    "GET /repos/{owner}/{repo}/pulls/{pull_number}",
    "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
    "GET /repos/{owner}/{repo}/pulls",
    "GET /repos/{owner}/{repo}/actions/runs",
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}",
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}",
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs",
    "GET /repos/{owner}/{repo}/actions/jobs/{job_id}",
    "GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs",
    "GET /repos/{owner}/{repo}/actions/workflows",
    "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}",
    "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs",
    "GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations",
    "GET /repos/{owner}/{repo}/contents/{path}",
    "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
    "POST /repos/{owner}/{repo}/actions/jobs/{job_id}/rerun",
    "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs",
    "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
    "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
    "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
    "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
    "GET /rate_limit",
]

JOB = "/repos/{owner}/{repo}/actions/jobs/{job_id}"
T0 = "2024-05-01T10:00:00Z"


def minimal_job() -> dict:
    """A hand-written job with exactly the required fields (+ one step)."""
    return {
        "id": 21,
        "node_id": "CR_kwDOA",
        "run_id": 5,
        "run_url": "https://api.github.com/repos/o/r/actions/runs/5",
        "head_sha": "009b8a3a9ccbb128af87f9b1c0f4c62e8a304f6d",
        "workflow_name": "CI",
        "head_branch": "main",
        "name": "tests (3.12)",
        "url": "https://api.github.com/repos/o/r/actions/jobs/21",
        "html_url": "https://github.com/o/r/actions/runs/5/job/21",
        "status": "completed",
        "conclusion": "failure",
        "created_at": T0,
        "started_at": T0,
        "completed_at": "2024-05-01T10:03:12Z",
        "check_run_url": "https://api.github.com/repos/o/r/check-runs/21",
        "labels": ["ubuntu-latest"],
        "runner_id": None,
        "runner_name": None,
        "runner_group_id": None,
        "runner_group_name": None,
        "steps": [
            {"name": "Run pytest", "status": "completed", "conclusion": "failure", "number": 1}
        ],
    }


# --------------------------------------------------------------------- data


def test_subset_loads_with_provenance():
    subset = v.load_subset()
    src = subset["source"]
    assert src["package"] == "@octokit/openapi"
    assert src["version"] and src["license"] == "MIT"
    assert src["file"].startswith("generated/api.github.com")
    assert src["extracted_by"] == "tools/vendor_github_schemas.py"
    assert v.load_subset() is subset  # cached


@pytest.mark.parametrize("key", OPERATIONS)
def test_operation_present(key):
    op = v.load_subset()["operations"][key]
    assert op["operationId"]
    ok = [c for c in op["responses"] if c.startswith("2") or c == "302"]
    assert ok, f"{key} has no success response"


def test_no_openapi_30_nullable_left():
    text = json.dumps(v.load_subset())
    assert '"nullable": true' not in text


def test_actions_runs_query_parameters():
    params = v.query_parameters("GET", "/repos/{owner}/{repo}/actions/runs")
    for name in ("head_sha", "created", "status", "branch", "event",
                 "per_page", "page", "exclude_pull_requests"):
        assert name in params
    assert "filter" in v.query_parameters("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs")


@pytest.mark.parametrize(
    "method,path,expected",
    [
        ("GET", "/repos/o/r", "/repos/{owner}/{repo}"),
        ("GET", "/repos/o/r/actions/runs/123/jobs",
         "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"),
        ("GET", "/repos/o/r/actions/runs/123/attempts/2/jobs?per_page=100",
         "/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs"),
        ("GET", "/repos/o/r/actions/runs?head_sha=abc", "/repos/{owner}/{repo}/actions/runs"),
        ("GET", "/repos/o/r/actions/jobs/9/logs", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs"),
        ("GET", "/repos/o/r/actions/workflows/ci.yml/runs",
         "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"),
        ("GET", "/repos/o/r/contents/.github/workflows/ci.yml",
         "/repos/{owner}/{repo}/contents/{path}"),
        ("PATCH", "/repos/o/r/issues/comments/7", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
        ("POST", "/repos/o/r/issues/3/comments", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
        ("get", "/rate_limit", "/rate_limit"),
        ("DELETE", "/repos/o/r", None),
        ("GET", "/repos/o/r/actions/runs/1/unknown", None),
    ],
)
def test_match_path(method, path, expected):
    assert v.match_path(method, path) == expected


# ---------------------------------------------------------------- validator


def test_minimal_job_validates():
    v.validate_response("GET", JOB, 200, minimal_job())
    v.validate_response("GET", JOB, 200, minimal_job(), strict=True)
    listing = {"total_count": 1, "jobs": [minimal_job()]}
    v.validate_response("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", 200, listing)


def test_wrong_type_fails_readably():
    job = minimal_job()
    job["id"] = "abc"
    with pytest.raises(AssertionError) as exc:
        v.validate_response("GET", JOB, 200, job)
    msg = str(exc.value)
    assert "GET /repos/{owner}/{repo}/actions/jobs/{job_id} -> 200" in msg
    assert "$.id" in msg and "'abc' is not of type 'integer'" in msg


def test_required_nullable_field_must_be_present():
    job = minimal_job()
    job["conclusion"] = None  # nullable: fine
    job["completed_at"] = None
    v.validate_response("GET", JOB, 200, job)
    del job["conclusion"]  # but required
    with pytest.raises(AssertionError, match="'conclusion' is a required property"):
        v.validate_response("GET", JOB, 200, job)


def test_enum_date_time_and_nested_errors_are_reported():
    job = minimal_job()
    job["status"] = "done"
    job["started_at"] = "yesterday"
    job["steps"][0]["number"] = "1"
    with pytest.raises(AssertionError) as exc:
        v.validate_response("GET", JOB, 200, job)
    msg = str(exc.value)
    assert "3 schema violation(s)" in msg
    assert "$.status" in msg and "'done' is not one of" in msg
    assert "$.started_at" in msg and "date-time" in msg
    assert "$.steps[0].number" in msg


def test_strict_mode_rejects_undocumented_fields():
    job = minimal_job()
    job["conclsion"] = "failure"  # typo: GitHub's schema allows extra keys
    v.validate_response("GET", JOB, 200, job)
    with pytest.raises(AssertionError, match="conclsion"):
        v.validate_response("GET", JOB, 200, job, strict=True)


def test_logs_redirect_has_no_body():
    logs = "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs"
    entry = v.response_definition("GET", logs, 302)
    assert "Location" in entry["headers"]
    v.validate_response("GET", logs, 302, None)
    with pytest.raises(AssertionError):
        v.validate_response("GET", logs, 302, {"message": "x"})
    with pytest.raises(LookupError):
        v.response_schema("GET", logs, 302)
    with pytest.raises(LookupError):
        v.response_schema("GET", logs, 200)


def test_404_falls_back_to_basic_error():
    body = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
    v.validate_response("GET", JOB, 404, body)
    assert v.response_schema("GET", JOB, 404)["title"] == "Basic Error"
    with pytest.raises(AssertionError):
        v.validate_response("GET", JOB, 404, {"message": 404})


def test_rerun_answers_empty_object():
    rerun = "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"
    v.validate_response("POST", rerun, 201, {})
    with pytest.raises(AssertionError):
        v.validate_response("POST", rerun, 201, {"ok": True})


def test_unknown_operation_is_a_lookup_error():
    with pytest.raises(LookupError, match="not in the vendored subset"):
        v.response_schema("GET", "/users/{username}", 200)


# ------------------------------------------------------- GitHub's own examples


def _docs_examples():
    for key, op in v.load_subset()["operations"].items():
        for code, resp in op["responses"].items():
            for name, value in (resp.get("examples") or {}).items():
                if resp["schema"] is not None and value is not None:
                    yield pytest.param(key, code, value, id=f"{key} {code} {name}")


def _non_required_errors(schema, payload):
    validator = v.Draft202012Validator(schema, format_checker=v.FORMAT_CHECKER)
    return [
        f"{list(e.absolute_path)}: {e.message[:200]}"
        for e in validator.iter_errors(payload)
        if e.validator != "required"
    ]


@pytest.mark.parametrize("key,code,value", list(_docs_examples()))
def test_docs_examples_match_types(key, code, value):
    """GitHub's example bodies agree with the converted schemas on every type,
    enum, format and nullability. (Some examples predate fields that are now
    required -- e.g. job `created_at` -- so "required" errors are tolerated.)"""
    method, path = key.split(" ", 1)
    schema = v.response_schema(method, path, int(code))
    assert _non_required_errors(schema, value) == []


WEBHOOK_FOR_EXAMPLE = {
    "workflow_run.completed": "workflow-run-completed",
    "workflow_run.in_progress": "workflow-run-in-progress",
    "workflow_run.requested": "workflow-run-requested",
    "workflow_job.completed": "workflow-job-completed",
    "workflow_job.in_progress": "workflow-job-in-progress",
    "workflow_job.queued": "workflow-job-queued",
    "workflow_job.waiting": "workflow-job-waiting",
    "issue_comment.created": "issue-comment-created",
    "pull_request.opened": "pull-request-opened",
    "pull_request.synchronize": "pull-request-synchronize",
}


def test_webhook_examples_present():
    data = v.load_webhook_examples()
    assert data["source"]["package"] == "@octokit/webhooks-examples"
    ex = data["examples"]
    for key in ("workflow_run.completed", "workflow_job.completed",
                "issue_comment.created", "pull_request.opened", "pull_request.synchronize"):
        assert ex.get(key), key
        assert all(p["action"] == key.split(".")[1] for p in ex[key])


@pytest.mark.parametrize("key", sorted(WEBHOOK_FOR_EXAMPLE))
def test_webhook_examples_match_schema_types(key):
    examples = v.load_webhook_examples()["examples"].get(key, [])
    schema = v.webhook_schema(WEBHOOK_FOR_EXAMPLE[key])
    for i, payload in enumerate(examples):
        assert _non_required_errors(schema, payload) == [], f"{key}[{i}]"


@pytest.mark.parametrize(
    "key", ["workflow_run.completed", "workflow_job.completed",
            "issue_comment.created", "pull_request.opened"]
)
def test_some_webhook_example_fully_valid(key):
    examples = v.load_webhook_examples()["examples"][key]
    name = WEBHOOK_FOR_EXAMPLE[key]
    failures = []
    for payload in examples:
        try:
            v.validate_webhook(name, payload)
            return
        except AssertionError as exc:
            failures.append(str(exc))
    pytest.fail("no example validates:\n" + "\n".join(failures))


def test_webhook_validator_not_vacuous():
    payload = copy.deepcopy(v.load_webhook_examples()["examples"]["workflow_job.completed"][0])
    v.validate_webhook("workflow-job-completed", payload)
    payload["workflow_job"]["conclusion"] = "exploded"
    with pytest.raises(AssertionError, match=r"\$\.workflow_job"):
        v.validate_webhook("workflow-job-completed", payload)
