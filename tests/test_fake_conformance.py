"""The local GitHub fake answers as api.github.com does, checked against GitHub's own OpenAPI description.

Every endpoint the fake serves is requested over real HTTP and its body validated against the vendored
subset of @octokit/openapi (tests/github_schemas/) with strict=True: a key GitHub's schema does not
list fails too, so an invented or misspelt field cannot hide. Strict is possible for every operation
the fake serves; none needed the lenient check. Beyond the bodies: Link pagination, URL rewriting to
the fake's own address, headers, GitHub's 404 body, and the 302 from job logs to a separate host.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from ci_triage.demo.build import bundled_path
from ci_triage.demo.case_index import CaseIndex
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.case import load_case
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.model import Verdict
from ci_triage.service import Triage
from ci_triage.store import Store
from tests.github_schemas.validate import (
    load_subset,
    match_path,
    validate_response,
    validate_schema,
)

CASE = load_case(bundled_path())
REPO = CASE["repository"]["full_name"]
REPO_ID = CASE["repository"]["id"]
R = f"/repos/{REPO}"
API_VERSION = "2022-11-28"
JSON_TYPE = "application/json; charset=utf-8"
# GitHub's body for any unknown resource (docs.github.com/rest: "Resource not found").
NOT_FOUND = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}


RUNS = CaseIndex(CASE).latest_runs()
PR = next(p for p in CASE["pulls"] if p["number"] == 67)
RUN_67 = next(r for r in RUNS if r["head_sha"] == PR["head"]["sha"] and r["conclusion"] == "failure")
JOB_67 = next(j for j in CASE["jobs"] if j["run_id"] == RUN_67["id"] and j["conclusion"] == "failure")
WORKFLOW = next(w for w in CASE["workflows"] if w["id"] == RUN_67["workflow_id"])
# A window that holds some runs of the day but not all: 13:00 to 13:30.
CREATED = "2026-05-12T13:00:00Z..2026-05-12T13:30:00Z"

# Every endpoint the fake serves, with the query variants ci-triage sends. Each is requested and its
# body validated; the coverage test below checks that these reach every served operation.
ENDPOINTS: list[tuple[str, dict[str, str]]] = [
    (R, {}),
    (f"{R}/pulls", {}),
    (f"{R}/pulls", {"state": "all", "sort": "updated", "direction": "desc", "per_page": "100"}),
    (f"{R}/pulls/67", {}),
    (f"{R}/pulls/67/files", {"per_page": "100"}),
    (f"{R}/actions/runs", {}),
    (f"{R}/actions/runs", {"head_sha": PR["head"]["sha"]}),
    (f"{R}/actions/runs", {"created": CREATED}),
    (f"{R}/actions/runs", {"status": "success"}),
    (f"{R}/actions/runs", {"branch": "main"}),
    (f"{R}/actions/runs", {"event": "push"}),
    (f"{R}/actions/runs", {"exclude_pull_requests": "true"}),
    (f"{R}/actions/workflows", {}),
    (f"{R}/actions/workflows/{WORKFLOW['id']}", {}),
    (f"{R}/actions/workflows/{WORKFLOW['path'].rsplit('/', 1)[-1]}", {}),
    (f"{R}/actions/workflows/{WORKFLOW['id']}/runs", {"created": CREATED, "per_page": "100"}),
    (f"{R}/actions/runs/{RUN_67['id']}", {}),
    (f"{R}/actions/runs/{RUN_67['id']}/attempts/1", {}),
    (f"{R}/actions/runs/{RUN_67['id']}/jobs", {"filter": "latest"}),
    (f"{R}/actions/runs/{RUN_67['id']}/jobs", {"filter": "all"}),
    (f"{R}/actions/runs/{RUN_67['id']}/attempts/1/jobs", {"per_page": "100"}),
    (f"{R}/actions/jobs/{JOB_67['id']}", {}),
    (f"{R}/check-runs/{JOB_67['id']}/annotations", {"per_page": "100"}),
    (f"{R}/contents/.github/ci-triage.toml", {"ref": "main"}),
    (f"{R}/contents/.github/workflows/npu_vllm_examples.yml", {}),
    (f"{R}/issues/67/comments", {"per_page": "100"}),
    (f"{R}/collaborators/{PR['user']['login']}/permission", {}),
    ("/rate_limit", {}),
]

UNKNOWN = [
    "/repos/nobody/nothing",
    f"{R}/pulls/9999",
    f"{R}/pulls/9999/files",
    f"{R}/actions/workflows/1",
    f"{R}/actions/workflows/1/runs",
    f"{R}/actions/runs/1",
    f"{R}/actions/runs/1/attempts/1",
    f"{R}/actions/runs/{RUN_67['id']}/attempts/9",
    f"{R}/actions/runs/1/jobs",
    f"{R}/check-runs/1/annotations",
    f"{R}/contents/no/such/file.txt",
    f"{R}/actions/runs/{RUN_67['id']}/attempts/9/jobs",
    f"{R}/actions/jobs/1",
    f"{R}/actions/jobs/1/logs",
    f"{R}/issues/9999/comments",
]

# Writes the fake acts on, in an order that exercises each (run on a fresh fake: they change state).
# (method, path, JSON body, expected status); {comment} is the id of the comment created first.
WRITES: list[tuple[str, str, Any, int]] = [
    ("POST", f"{R}/actions/runs/{RUN_67['id']}/rerun-failed-jobs", None, 201),
    ("POST", f"{R}/issues/67/comments", {"body": "ci-triage: runner lost, rerun requested"}, 201),
    ("PATCH", f"{R}/issues/comments/{{comment}}", {"body": "ci-triage: rerun passed"}, 200),
    ("POST", f"{R}/issues/comments/{{comment}}/reactions", {"content": "rocket"}, 201),
    ("POST", f"{R}/issues/comments/{{comment}}/reactions", {"content": "rocket"}, 200),  # "Reaction exists"
    ("POST", f"{R}/actions/jobs/{{other_failed_job}}/rerun", {"enable_debug_logging": False}, 201),
    ("POST", f"{R}/issues/67/comments", {"body": "a duplicate, deleted next"}, 201),
    ("DELETE", f"{R}/issues/comments/{{last_comment}}", None, 204),
]
UNKNOWN_WRITES = [
    ("POST", f"{R}/actions/runs/1/rerun-failed-jobs"),
    ("POST", f"{R}/actions/jobs/1/rerun"),
    ("POST", f"{R}/issues/9999/comments"),
    ("PATCH", f"{R}/issues/comments/1"),
    ("POST", f"{R}/issues/comments/1/reactions"),
    ("DELETE", f"{R}/issues/comments/1"),
]

# Operations in the vendored subset that the fake does not implement (yet): it must answer them with
# GitHub's 404 rather than something half-made. Implementing one means moving it into ENDPOINTS.
NOT_SERVED: set[str] = set()
LOGS_TEMPLATE = "GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs"


def template_of(method: str, path: str) -> str | None:
    """The OpenAPI template of a served path. GitHub's Link URLs address the repository by id
    (/repositories/{id}/...), an alias of /repos/{owner}/{repo}/... that the description omits."""
    path = re.sub(rf"^/repositories/{REPO_ID}(?=/|$)", R, path)
    return match_path(method, path)


def _label(endpoint: tuple[str, dict[str, str]]) -> str:
    path, params = endpoint
    return path.replace(R, "") + ("?" + urlencode(params) if params else "")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitHub]:
    with FakeGitHub(CASE) as fake:
        yield fake


@pytest.fixture(scope="module")
def api(server: FakeGitHub) -> Iterator[httpx.Client]:
    headers = {"Authorization": "Bearer t", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": API_VERSION}
    with httpx.Client(base_url=server.base_url, headers=headers, follow_redirects=False, timeout=10) as client:
        yield client


def assert_github_headers(response: httpx.Response, json_body: bool = True) -> None:
    if json_body:
        assert response.headers["content-type"] == JSON_TYPE
    assert response.headers["x-github-api-version-selected"] == API_VERSION
    for name in ("limit", "remaining", "reset", "used"):
        assert response.headers[f"x-ratelimit-{name}"].isdigit(), name
    assert response.headers["x-ratelimit-resource"] == "core"


def urls_in(payload: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, value) of every URL-valued field: `url` and `*_url`, at any depth."""
    if isinstance(payload, dict):
        for name, value in payload.items():
            yield from urls_in(value, name)
    elif isinstance(payload, list):
        for item in payload:
            yield from urls_in(item, key)
    elif isinstance(payload, str) and (key == "url" or key.endswith("_url")):
        yield key, payload


# --- every endpoint -----------------------------------------------------------------------------

@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=_label)
def test_endpoint_body_matches_githubs_schema(api: httpx.Client, endpoint: tuple[str, dict[str, str]]) -> None:
    path, params = endpoint
    response = api.get(path, params=params)
    assert response.status_code == 200, response.text
    template = template_of("GET", path)
    assert template is not None, f"{path} matches no operation of the vendored subset"
    validate_response("GET", template, 200, response.json(), strict=True)
    assert_github_headers(response)


def test_endpoints_cover_every_operation_of_the_subset(api: httpx.Client) -> None:
    covered = {f"GET {template_of('GET', path)}" for path, _ in ENDPOINTS} | {LOGS_TEMPLATE}
    covered |= {f"{method} {template_of(method, path)}" for method, path, _, _ in WRITES} | {"GET /user"}
    assert None not in {template_of("GET", path) for path, _ in ENDPOINTS}
    vendored = set(load_subset()["operations"])
    # A newly vendored operation must be either served and tested here, or listed as not served.
    assert covered | NOT_SERVED == vendored
    assert not covered & NOT_SERVED
    values = {"owner": REPO.split("/")[0], "repo": REPO.split("/")[1], "path": "README.md",
              "username": PR["user"]["login"], "issue_number": "67", "comment_id": "1",
              "check_run_id": str(JOB_67["id"]), "job_id": str(JOB_67["id"]), "run_id": str(RUN_67["id"])}
    for operation in sorted(NOT_SERVED):
        method, template = operation.split(" ", 1)
        path = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)
        response = api.request(method, path, json={} if method != "GET" else None)
        assert response.status_code == 404, operation
        assert response.json() == NOT_FOUND


# --- who the token is -----------------------------------------------------------------------------

PAT = "ghp_fakePersonalToken0123456789abcdefABCD"


def test_get_user_answers_a_personal_token_and_refuses_an_installation() -> None:
    """GET /user: the private-user object for a personal token; 403 "Resource not accessible by
    integration" for an installation token (the workflow's GITHUB_TOKEN), as GitHub answers, since the
    operation is not enabled for GitHub Apps (`x-github.enabledForGitHubApps: false` in @octokit/openapi 23.0.2's
    api.github.com.deref.json; the vendored subset keeps only the responses); 401 with no token."""
    person = {k: v for k, v in PR["user"].items() if k in ("login", "id", "node_id", "avatar_url", "gravatar_id",
                                                           "url", "html_url", "followers_url", "following_url",
                                                           "gists_url", "starred_url", "subscriptions_url",
                                                           "organizations_url", "repos_url", "events_url",
                                                           "received_events_url", "type", "site_admin",
                                                           "user_view_type")}
    with FakeGitHub(CASE, users={PAT: person}) as fake, httpx.Client(base_url=fake.base_url, timeout=10) as client:
        mine = client.get("/user", headers={"Authorization": f"Bearer {PAT}"})
        assert mine.status_code == 200 and mine.json()["login"] == person["login"]
        validate_response("GET", "/user", 200, mine.json(), strict=True)
        assert_github_headers(mine)
        installation = client.get("/user", headers={"Authorization": "Bearer ghs_installation"})
        assert installation.status_code == 403
        assert installation.json()["message"] == "Resource not accessible by integration"
        validate_response("GET", "/user", 403, installation.json(), strict=True)
        anonymous = client.get("/user")
        assert anonymous.status_code == 401
        validate_response("GET", "/user", 401, anonymous.json(), strict=True)
        # GraphQL's viewer names either (GitHub's docs: `viewer` is "the currently authenticated user"; for an
        # installation token it is the App's bot, e.g. fullsend-ai/fullsend#1953 saw `fullsend-ai-coder[bot]`).
        query = {"query": "query { viewer { login } }"}
        for token, login in ((PAT, person["login"]), ("t", "github-actions[bot]")):
            viewer = client.post("/graphql", json=query, headers={"Authorization": f"Bearer {token}"})
            assert viewer.status_code == 200 and viewer.json() == {"data": {"viewer": {"login": login}}}
        assert client.post("/graphql", json=query).status_code == 401
        # Each token writes as its own identity.
        made = client.post(f"{R}/issues/67/comments", json={"body": "x"}, headers={"Authorization": f"Bearer {PAT}"})
        assert made.json()["user"]["login"] == person["login"]
        other = client.post(f"{R}/issues/67/comments", json={"body": "y"}, headers={"Authorization": "Bearer t"})
        assert other.json()["user"]["login"] == "github-actions[bot]"


# --- writes -------------------------------------------------------------------------------------

def _other_failed_job() -> dict[str, Any]:
    """A failed job of another run than RUN_67 (whose rerun the first write starts)."""
    return next(j for j in CASE["jobs"] if j["conclusion"] == "failure" and j["run_id"] != RUN_67["id"])


def test_writes_answer_as_github_documents() -> None:
    with FakeGitHub(CASE) as fake, httpx.Client(
            base_url=fake.base_url, headers={"Authorization": "Bearer t", "X-GitHub-Api-Version": API_VERSION},
            timeout=10) as client:
        values: dict[str, Any] = {"other_failed_job": _other_failed_job()["id"]}
        for method, path, body, status in WRITES:
            concrete = path.format(**values) if "{" in path.replace(R, "") else path
            response = client.request(method, concrete, json=body)
            assert response.status_code == status, (method, concrete, response.text)
            template = template_of(method, concrete)
            assert template is not None
            if status == 204:  # "No Content": no body, no content type
                assert response.content == b"" and "content-type" not in response.headers
                validate_response(method, template, status, None)
                continue
            validate_response(method, template, status, response.json(), strict=True)
            assert_github_headers(response)
            if template.endswith("/issues/{issue_number}/comments"):
                values.setdefault("comment", response.json()["id"])
                values["last_comment"] = response.json()["id"]
                assert response.headers["location"] == response.json()["url"]
        assert [r.body for r in fake.served(method="POST")][1] == {"body": "ci-triage: runner lost, rerun requested"}
        # What the writes did reads back through the documented GET endpoints, still conforming.
        for path in (f"{R}/issues/67/comments", f"{R}/actions/runs/{RUN_67['id']}",
                     f"{R}/actions/runs/{RUN_67['id']}/jobs", f"{R}/actions/runs/{RUN_67['id']}/attempts/2/jobs",
                     f"{R}/actions/runs", f"{R}/actions/runs/{RUN_67['id']}/jobs?filter=all"):
            response = client.get(path)
            assert response.status_code == 200, path
            validate_response("GET", template_of("GET", path), 200, response.json(), strict=True)
        comments = client.get(f"{R}/issues/67/comments").json()
        assert [c["body"] for c in comments] == ["ci-triage: rerun passed"]
        assert comments[0]["reactions"]["rocket"] == 1 and comments[0]["user"]["login"] == "github-actions[bot]"
        run = client.get(f"{R}/actions/runs/{RUN_67['id']}").json()
        assert (run["run_attempt"], run["status"], run["conclusion"]) == (RUN_67["run_attempt"] + 1, "queued", None)
        assert run["previous_attempt_url"] == f"{run['url']}/attempts/{RUN_67['run_attempt']}"
        jobs = client.get(f"{R}/actions/runs/{RUN_67['id']}/jobs").json()["jobs"]
        before = [j for j in CASE["jobs"] if j["run_id"] == RUN_67["id"] and j["run_attempt"] == RUN_67["run_attempt"]]
        assert len(jobs) == len(before)
        for old in before:
            if old["conclusion"] in ("failure", "cancelled"):
                new = next(j for j in jobs if j["name"] == old["name"])
                assert new["id"] != old["id"] and new["status"] == "queued" and new["conclusion"] is None
                assert new["run_attempt"] == RUN_67["run_attempt"] + 1
            else:
                assert old["id"] in {j["id"] for j in jobs}  # carried over unchanged


def test_rerunning_a_run_that_is_not_completed_is_forbidden() -> None:
    with FakeGitHub(CASE) as fake, httpx.Client(base_url=fake.base_url, timeout=10) as client:
        assert client.post(f"{R}/actions/runs/{RUN_67['id']}/rerun-failed-jobs").status_code == 201
        for path, template in ((f"{R}/actions/runs/{RUN_67['id']}/rerun-failed-jobs", None),
                               (f"{R}/actions/jobs/{JOB_67['id']}/rerun", "/repos/{owner}/{repo}/actions/jobs/{job_id}/rerun")):
            response = client.post(path, json={})
            assert response.status_code == 403
            assert response.json()["message"] == "This workflow is already running"
            if template:  # documented 403 of re-run-job
                validate_response("POST", template, 403, response.json(), strict=True)
            else:  # re-run-failed-jobs declares only 201; GitHub's error body is the basic error
                validate_schema(load_subset()["basic_error"], response.json(), strict=True)
        assert max(fake.index.attempts[RUN_67["id"]]) == RUN_67["run_attempt"] + 1


@pytest.mark.parametrize("method,path", UNKNOWN_WRITES, ids=lambda v: v.replace(R, "") if "/" in v else v)
def test_writes_to_unknown_ids_get_githubs_404(api: httpx.Client, method: str, path: str) -> None:
    response = api.request(method, path, json={"body": "x", "content": "eyes"})
    assert response.status_code == 404 and response.json() == NOT_FOUND


def test_invalid_write_bodies_get_githubs_errors(api: httpx.Client) -> None:
    assert api.post(f"{R}/issues/67/comments", json={}).status_code == 422
    response = api.post(f"{R}/issues/67/comments", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["message"] == "Problems parsing JSON"


@pytest.mark.parametrize("path", UNKNOWN, ids=lambda p: p.replace(R, ""))
def test_unknown_ids_get_githubs_404(api: httpx.Client, path: str) -> None:
    response = api.get(path)
    assert response.status_code == 404
    assert response.json() == NOT_FOUND
    template = template_of("GET", path)
    assert template is not None
    validate_response("GET", template, 404, response.json(), strict=True)
    assert_github_headers(response)


# --- filters ------------------------------------------------------------------------------------

RUN_FILTERS = [
    ({"head_sha": PR["head"]["sha"]}, lambda r: r["head_sha"] == PR["head"]["sha"]),
    ({"created": CREATED}, lambda r: "2026-05-12T13:00:00Z" <= r["created_at"] <= "2026-05-12T13:30:00Z"),
    # `status` takes a conclusion as well as a status (docs: "List workflow runs for a repository").
    ({"status": "success"}, lambda r: r["conclusion"] == "success"),
    ({"status": "completed"}, lambda r: r["status"] == "completed"),
    ({"branch": "main"}, lambda r: r["head_branch"] == "main"),
    ({"event": "push"}, lambda r: r["event"] == "push"),
    ({"event": "pull_request", "branch": "peagle-ckpt-hooks"},
     lambda r: r["event"] == "pull_request" and r["head_branch"] == "peagle-ckpt-hooks"),
]


@pytest.mark.parametrize("params,keep", RUN_FILTERS, ids=lambda v: urlencode(v) if isinstance(v, dict) else "")
def test_run_filters_select_what_github_would(api: httpx.Client, params: dict[str, str], keep: Any) -> None:
    expected = sorted(r["id"] for r in RUNS if keep(r))
    assert expected, "the filter selects nothing in the demo case: the test would prove nothing"
    body = api.get(f"{R}/actions/runs", params={**params, "per_page": "100"}).json()
    assert sorted(r["id"] for r in body["workflow_runs"]) == expected
    assert body["total_count"] == len(expected)
    created = [r["created_at"] for r in body["workflow_runs"]]
    assert created == sorted(created, reverse=True), "GitHub lists runs newest first"


@pytest.mark.parametrize("params,key,newest_first", [
    ({}, "created_at", True),  # GitHub's defaults: state=open, sort=created, direction=desc
    ({"state": "all", "sort": "updated", "direction": "desc"}, "updated_at", True),
    ({"state": "all", "sort": "created", "direction": "asc"}, "created_at", False),
    ({"sort": "updated"}, "updated_at", False),  # docs: direction defaults to asc unless sort=created
], ids=["default", "updated-desc", "created-asc", "updated"])
def test_pull_listing_sorts_as_github_does(api: httpx.Client, params: dict[str, str], key: str,
                                           newest_first: bool) -> None:
    listed = api.get(f"{R}/pulls", params=params).json()
    expected = sorted(CASE["pulls"], key=lambda p: (p[key], p["number"]), reverse=newest_first)
    assert [p["number"] for p in listed] == [p["number"] for p in expected if p["state"] == "open"
                                               or params.get("state") == "all"]
    assert len(listed) > 1


def test_workflow_runs_are_those_of_the_workflow(api: httpx.Client) -> None:
    body = api.get(f"{R}/actions/workflows/{WORKFLOW['id']}/runs", params={"per_page": "100"}).json()
    expected = sorted(r["id"] for r in RUNS if r["workflow_id"] == WORKFLOW["id"])
    assert sorted(r["id"] for r in body["workflow_runs"]) == expected
    assert 0 < len(expected) < len(RUNS)


@pytest.mark.parametrize("job_filter", ["latest", "all"])
def test_job_listing_of_a_run(api: httpx.Client, job_filter: str) -> None:
    body = api.get(f"{R}/actions/runs/{RUN_67['id']}/jobs", params={"filter": job_filter}).json()
    expected = sorted(j["id"] for j in CASE["jobs"] if j["run_id"] == RUN_67["id"]
                      and (job_filter == "all" or j["run_attempt"] == RUN_67["run_attempt"]))
    assert sorted(j["id"] for j in body["jobs"]) == expected and body["total_count"] == len(expected)


# --- the 302 to the log host --------------------------------------------------------------------

def test_job_logs_redirect_to_a_separate_host_that_never_sees_the_token(
        server: FakeGitHub, api: httpx.Client) -> None:
    response = api.get(f"{R}/actions/jobs/{JOB_67['id']}/logs")
    assert response.status_code == 302
    validate_response("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", 302, response.content or None)
    assert_github_headers(response, json_body=False)
    location = response.headers["location"]
    assert location.startswith(server.log_host_url + "/")
    assert not location.startswith(server.base_url)
    # Followed as a careful client does: a fresh request, no Authorization.
    log = httpx.get(location, timeout=10)
    assert log.status_code == 200
    assert log.headers["content-type"].startswith("text/plain")
    assert log.text == CASE["logs"][str(JOB_67["id"])]
    log_requests = server.served("logs")
    assert log_requests and not any(r.authorization for r in log_requests)


# --- pagination ---------------------------------------------------------------------------------

LINK_PART = re.compile(r'<([^>]+)>; rel="(next|last|first|prev)"')


# The order of docs.github.com's "Using pagination in the REST API" example.
LINK_ORDER = ("prev", "next", "last", "first")


def parse_link(header: str) -> dict[str, str]:
    """rel -> URL; asserts GitHub's exact format `<url>; rel="x", <url>; rel="y"` and order."""
    parts = header.split(", ")
    found = [LINK_PART.fullmatch(part) for part in parts]
    assert all(found), f"not GitHub's Link format: {header!r}"
    rels = [m.group(2) for m in found if m]
    assert rels == [rel for rel in LINK_ORDER if rel in rels], f"not GitHub's order of rels: {header!r}"
    return {m.group(2): m.group(1) for m in found if m}


@pytest.mark.parametrize("params", [{}, {"event": "pull_request"}], ids=["all", "event=pull_request"])
def test_runs_paginate_with_githubs_link_header(server: FakeGitHub, api: httpx.Client,
                                                 params: dict[str, str]) -> None:
    whole = api.get(f"{R}/actions/runs", params={**params, "per_page": "100"})
    assert "link" not in whole.headers  # one page: GitHub sends no Link
    whole_body = whole.json()
    expected_ids = [r["id"] for r in whole_body["workflow_runs"]]
    expected_total = sum(1 for r in RUNS if r["event"] == params.get("event", r["event"]))
    assert whole_body["total_count"] == len(expected_ids) == expected_total
    pages = math.ceil(expected_total / 2)
    assert pages >= 3, "needs a middle page to see all four rels"

    ids: list[int] = []
    response = api.get(f"{R}/actions/runs", params={**params, "per_page": "2"})
    for page in range(1, pages + 1):
        assert response.status_code == 200
        body = response.json()
        validate_response("GET", "/repos/{owner}/{repo}/actions/runs", 200, body, strict=True)
        assert body["total_count"] == expected_total
        ids += [r["id"] for r in body["workflow_runs"]]
        links = parse_link(response.headers["link"])
        expected_rels = ({"prev", "first"} if page > 1 else set()) | ({"next", "last"} if page < pages else set())
        assert set(links) == expected_rels, page
        for rel, url in links.items():
            split = urlsplit(url)
            assert f"{split.scheme}://{split.netloc}" == server.base_url
            assert split.path == f"/repositories/{REPO_ID}/actions/runs"
            query = parse_qs(split.query)
            assert query["per_page"] == ["2"] and all(query[k] == [v] for k, v in params.items())
            target = {"next": page + 1, "prev": page - 1, "first": 1, "last": pages}[rel]
            assert query["page"] == [str(target)], (page, rel)
        if page < pages:
            response = api.get(links["next"])
    assert ids == expected_ids


# --- URLs and headers ---------------------------------------------------------------------------

# Fields that do not address the API or the web UI: clone addresses, the avatar CDN and the raw file
# host (a file's download_url; ci-triage reads files through the contents API instead).
FOREIGN_URL = re.compile(r"^(git://|git@|https://(avatars|raw)\.githubusercontent\.com/)")


def test_no_github_url_survives_and_every_url_points_at_the_fake(server: FakeGitHub, api: httpx.Client) -> None:
    checked = 0
    for path, params in ENDPOINTS:
        response = api.get(path, params=params)
        assert "https://api.github.com" not in response.text and "https://github.com" not in response.text, path
        for key, url in urls_in(response.json()):
            if not FOREIGN_URL.match(url):
                assert url.startswith(server.base_url + "/"), (path, key, url)
                checked += 1
    assert checked > 100


def test_urls_the_client_follows_lead_back_to_the_fake(server: FakeGitHub, api: httpx.Client) -> None:
    runs = api.get(f"{R}/actions/runs", params={"per_page": "100"}).json()["workflow_runs"]
    linked = [p for run in runs for p in run["pull_requests"]]
    assert linked, "the demo case must have a run linked to a PR, or pull_requests[].url goes unchecked"
    for run in runs:
        for key in ("url", "jobs_url", "logs_url", "html_url"):
            assert run[key].startswith(server.base_url + "/"), (key, run[key])
        assert api.get(run["url"]).json()["id"] == run["id"]
        jobs = api.get(run["jobs_url"]).json()["jobs"]
        assert {j["run_id"] for j in jobs} == {run["id"]}
        for job in jobs:
            assert job["url"].startswith(server.base_url + "/") and job["html_url"].startswith(server.base_url)
    for pull in linked:
        assert api.get(pull["url"]).json()["number"] == pull["number"]


def test_rate_limit_body_agrees_with_the_headers(api: httpx.Client) -> None:
    response = api.get("/rate_limit")
    body = response.json()
    assert body["rate"] == body["resources"]["core"]
    assert body["resources"]["core"]["reset"] == int(response.headers["x-ratelimit-reset"])
    assert body["resources"]["core"]["limit"] == int(response.headers["x-ratelimit-limit"])


# --- what a real report uses --------------------------------------------------------------------

def test_every_request_of_a_report_is_a_documented_operation_with_a_conforming_answer(tmp_path: Path) -> None:
    with FakeGitHub(CASE) as fake:
        client = GitHubClient(Connection(api_url=fake.base_url, token="t"))
        with Store(tmp_path / "s.sqlite3") as store:
            report = Triage(client, store).report(REPO, 67)
        client.close()
        assert [v.verdict for v in report.failed_jobs] == [Verdict.INFRA_FLAKE]

        served = fake.served("api")
        assert len(served) > 5
        listed = {f"GET {template_of('GET', path)}" for path, _ in ENDPOINTS} | {LOGS_TEMPLATE}
        seen = set()
        with httpx.Client(base_url=fake.base_url, headers={"Authorization": "Bearer t"}, timeout=10) as again:
            for request in served:
                template = template_of(request.method, request.path)
                assert template is not None, f"{request.method} {request.path} is no documented operation"
                seen.add(f"{request.method} {template}")
                # Re-ask for the same thing to validate what was answered.
                response = again.request(request.method, request.path, params=request.query)
                assert response.status_code == request.status
                body = json.loads(response.content) if response.content else None
                validate_response(request.method, template, response.status_code, body, strict=True)
        # Everything a report touches is also exercised (with its variants) by the tests above.
        assert seen <= listed, seen - listed
        assert LOGS_TEMPLATE in seen
        assert not any(r.authorization for r in fake.served("logs"))
