"""A local fake of the GitHub REST API that serves a triage case over real HTTP on 127.0.0.1.

It answers like api.github.com for the endpoints ci-triage uses: the same JSON shapes (the case holds
GitHub's own payloads), every URL rewritten to the fake's address, `Link` pagination over
`/repositories/{id}/...` as GitHub does, the 302 from a job's logs endpoint to a separate log host,
GitHub's 404 body, rate-limit headers. It records every request it served so tests can count them,
and can be told to answer a request with a fault.

Reference: https://docs.github.com/en/rest (API version 2022-11-28); "Using pagination in the REST
API" for Link headers; "Download job logs for a workflow run" for the 302 to a short-lived URL.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ci_triage.github.case import API_BASE, WEB_BASE, validate_case

API_VERSION = "2022-11-28"
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
_DOCS = "https://docs.github.com/rest"

# Fields of the full pull request object that the list endpoint (pull-request-simple) leaves out.
_NOT_IN_SIMPLE_PULL = (
    "merged", "mergeable", "rebaseable", "mergeable_state", "merged_by", "comments", "review_comments",
    "maintainer_can_modify", "commits", "additions", "deletions", "changed_files",
)


@dataclass(frozen=True)
class ServedRequest:
    host: str  # "api" or "logs"
    method: str
    path: str
    query: dict[str, list[str]]
    status: int
    authorization: bool  # whether an Authorization header arrived (it must never reach the log host)


@dataclass
class Fault:
    """Answer matching requests with `status` (and headers/body) instead of the real response."""

    method: str
    path_pattern: re.Pattern[str]
    status: int
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


class _Response(Exception):
    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}


def _not_found() -> _Response:
    return _Response(404, {"message": "Not Found", "documentation_url": _DOCS, "status": "404"})


def _parse_when(text: str, end: bool) -> datetime:
    """A date or datetime of GitHub's search syntax; a bare date at an end bound means its last second."""
    if len(text) == 10:
        text += "T23:59:59Z" if end else "T00:00:00Z"
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def created_filter(spec: str) -> Callable[[datetime], bool]:
    """GitHub's `created` qualifier: `A..B`, `>=A`, `>A`, `<=B`, `<B`, or a single date."""
    if ".." in spec:
        low, high = spec.split("..", 1)
        lo = None if low in ("", "*") else _parse_when(low, False)
        hi = None if high in ("", "*") else _parse_when(high, True)
        return lambda t: (lo is None or t >= lo) and (hi is None or t <= hi)
    for op, test in ((">=", lambda t, v: t >= v), ("<=", lambda t, v: t <= v),
                     (">", lambda t, v: t > v), ("<", lambda t, v: t < v)):
        if spec.startswith(op):
            value = _parse_when(spec[len(op):], op.startswith("<"))
            return lambda t, v=value, f=test: f(t, v)
    day_start, day_end = _parse_when(spec, False), _parse_when(spec, True)
    return lambda t: day_start <= t <= day_end


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


class CaseIndex:
    """The case's payloads, indexed the ways the endpoints look them up."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.repository = case["repository"]
        self.full_name = self.repository["full_name"]
        self.repo_id = self.repository["id"]
        self.pulls = {p["number"]: p for p in case["pulls"]}
        self.pull_files = {int(k): v for k, v in case["pull_files"].items()}
        self.workflows = {w["id"]: w for w in case["workflows"]}
        self.attempts: dict[int, dict[int, dict[str, Any]]] = {}
        for run in case["runs"]:
            self.attempts.setdefault(run["id"], {})[run["run_attempt"]] = run
        self.jobs: dict[int, dict[str, Any]] = {job["id"]: job for job in case["jobs"]}
        self.jobs_by_attempt: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for job in case["jobs"]:
            self.jobs_by_attempt.setdefault((job["run_id"], job["run_attempt"]), []).append(job)
        self.logs = {int(k): v for k, v in case["logs"].items()}
        self.files = case.get("files", {})
        # A job is a check run: its id is the check run's id.
        self.annotations = {int(k): v for k, v in case.get("annotations", {}).items()}

    def latest_runs(self) -> list[dict[str, Any]]:
        runs = [attempts[max(attempts)] for attempts in self.attempts.values()]
        # GitHub lists runs newest first.
        return sorted(runs, key=lambda r: (r["created_at"], r["id"]), reverse=True)

    def workflow(self, key: str) -> dict[str, Any] | None:
        if key.isdigit():
            return self.workflows.get(int(key))
        return next((w for w in self.workflows.values() if w["path"].rsplit("/", 1)[-1] == key), None)


class FakeGitHub:
    """Serve a case on 127.0.0.1. Use as a context manager; `base_url` is the API root."""

    def __init__(self, case: dict[str, Any], token: str | None = None) -> None:
        self.index = CaseIndex(validate_case(case))
        self.token = token  # when set, any other token gets GitHub's 401 "Bad credentials"
        self.requests: list[ServedRequest] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self.base_url = ""
        self.log_host_url = ""
        self._log_tokens: dict[str, int] = {}
        # One rate-limit window for the fake's lifetime, so the X-RateLimit-Reset header and the
        # /rate_limit body agree, as GitHub's do within a window.
        self._rate_reset = int(datetime.now(UTC).timestamp()) + 3600

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> FakeGitHub:
        api = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("api"))
        logs = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("logs"))
        for server in (api, logs):
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, name="fake-github", daemon=True).start()
            self._servers.append(server)
        self.base_url = f"http://127.0.0.1:{api.server_address[1]}"
        # A second address stands in for GitHub's separate log storage host, so a client that
        # forwards its Authorization header across the redirect is caught.
        self.log_host_url = f"http://127.0.0.1:{logs.server_address[1]}"
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- test helpers -------------------------------------------------------------------------
    def inject(self, method: str, path_regex: str, status: int, times: int = 1,
               headers: dict[str, str] | None = None, body: Any = None) -> None:
        with self._lock:
            self.faults.append(Fault(method, re.compile(path_regex), status, times, headers or {}, body))

    def served(self, host: str = "api", path_regex: str | None = None, method: str | None = None) -> list[ServedRequest]:
        with self._lock:
            found = list(self.requests)
        pattern = re.compile(path_regex) if path_regex else None
        return [r for r in found if r.host == host and (pattern is None or pattern.search(r.path))
                and (method is None or r.method == method)]

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    # --- serving ------------------------------------------------------------------------------
    def _rewrite(self, payload: Any) -> bytes:
        text = json.dumps(payload)
        return text.replace(API_BASE, self.base_url).replace(WEB_BASE, self.base_url).encode()

    def _headers(self) -> dict[str, str]:
        return {
            "X-GitHub-Api-Version-Selected": API_VERSION,
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-GitHub-Request-Id": secrets.token_hex(8).upper(),
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": str(self._rate_reset),
            "X-RateLimit-Used": "1",
            "X-RateLimit-Resource": "core",
        }

    def _fault_for(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and fault.path_pattern.search(path):
                    fault.times -= 1
                    return fault
        return None

    def _handler(self, host: str) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle's algorithm on, a keep-alive client's
            # delayed ACK holds the body back ~40 ms per request.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _answer(self, method: str) -> None:
                split = urlsplit(self.path)
                query = parse_qs(split.query)
                length = int(self.headers.get("Content-Length") or 0)
                body_in = self.rfile.read(length) if length else b""
                status, headers, body = fake._dispatch(host, method, split.path, query, dict(self.headers), body_in)
                with fake._lock:
                    fake.requests.append(ServedRequest(host, method, split.path, query, status,
                                                       "Authorization" in self.headers))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(body)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def do_PATCH(self) -> None:
                self._answer("PATCH")

        return Handler

    def _dispatch(self, host: str, method: str, path: str, query: dict[str, list[str]],
                  headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            if host == "logs":
                return self._serve_log(path, query)
            fault = self._fault_for(method, path)
            if fault is not None:
                raise _Response(fault.status, fault.body if fault.body is not None else {
                    "message": "Server Error" if fault.status >= 500 else "Fault", "documentation_url": _DOCS,
                }, fault.headers)
            self._check_auth(headers)
            payload, extra = self._route(method, path, query)
            return 200, {**self._headers(), **extra, "Content-Type": "application/json; charset=utf-8"}, \
                self._rewrite(payload)
        except _Response as response:
            head = {**self._headers(), **response.headers}
            if response.body is None:
                return response.status, head, b""
            head["Content-Type"] = "application/json; charset=utf-8"
            return response.status, head, self._rewrite(response.body)

    def _check_auth(self, headers: dict[str, str]) -> None:
        if self.token is None:
            return
        given = headers.get("Authorization", "")
        if given and given.split(" ", 1)[-1] != self.token:
            raise _Response(401, {"message": "Bad credentials", "documentation_url": _DOCS, "status": "401"})

    def _serve_log(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        found = re.fullmatch(r"/logs/(\d+)\.txt", path)
        job_id = int(found.group(1)) if found else None
        signature = (query.get("sig") or [""])[0]
        if job_id is None or self._log_tokens.get(signature) != job_id or job_id not in self.index.logs:
            # Azure blob storage's answer to a bad or expired signature.
            return 403, {"Content-Type": "application/xml"}, b"<Error><Code>AuthenticationFailed</Code></Error>"
        return 200, {"Content-Type": "text/plain; charset=utf-8"}, self.index.logs[job_id].encode("utf-8")

    # --- routes -------------------------------------------------------------------------------
    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[Any, dict[str, str]]:
        index = self.index
        prefix = f"/repos/{index.full_name}"
        by_id = f"/repositories/{index.repo_id}"
        if path.lower().startswith(prefix.lower()):
            rest = path[len(prefix):]
        elif path.startswith(by_id):
            rest = path[len(by_id):]
        elif path == "/rate_limit" and method == "GET":
            return self._rate_limit(), {}
        else:
            raise _not_found()
        if method != "GET":
            raise _not_found()
        return self._get(rest, query, path)

    def _rate_limit(self) -> dict[str, Any]:
        """GET /rate_limit: GitHub's schema requires `resources.core` and `resources.search`; `rate` is
        the deprecated copy of `core`. Only buckets the schema lists are sent (real GitHub also sends
        e.g. `code_scanning_upload`, which the description omits)."""
        def bucket(limit: int, used: int = 0) -> dict[str, int]:
            return {"limit": limit, "used": used, "remaining": limit - used, "reset": self._rate_reset}

        core = bucket(5000, 1)
        return {
            "resources": {"core": core, "search": bucket(30), "graphql": bucket(5000),
                          "integration_manifest": bucket(5000), "code_search": bucket(10)},
            "rate": core,
        }

    def _get(self, rest: str, query: dict[str, list[str]], path: str) -> tuple[Any, dict[str, str]]:
        index = self.index
        if rest == "":
            return index.repository, {}
        if rest == "/pulls":
            # GitHub's defaults: sort=created; direction desc when sorting by created, else asc.
            sort = (query.get("sort") or ["created"])[0]
            sort_key = "updated_at" if sort == "updated" else "created_at"
            direction = (query.get("direction") or ["desc" if sort == "created" else "asc"])[0]
            newest_first = direction != "asc"
            pulls = sorted(index.pulls.values(), key=lambda p: (p[sort_key], p["number"]), reverse=newest_first)
            state = (query.get("state") or ["open"])[0]
            if state != "all":
                pulls = [p for p in pulls if p["state"] == state]
            simple = [{k: v for k, v in p.items() if k not in _NOT_IN_SIMPLE_PULL} for p in pulls]
            return self._page(simple, query, path)
        if found := re.fullmatch(r"/pulls/(\d+)", rest):
            pull = index.pulls.get(int(found.group(1)))
            if pull is None:
                raise _not_found()
            return pull, {}
        if found := re.fullmatch(r"/pulls/(\d+)/files", rest):
            number = int(found.group(1))
            if number not in index.pulls:
                raise _not_found()
            return self._page(index.pull_files.get(number, []), query, path)
        if rest == "/actions/runs":
            return self._runs(index.latest_runs(), query, path)
        if rest == "/actions/workflows":
            workflows = sorted(index.workflows.values(), key=lambda w: w["id"])
            items, headers = self._page(workflows, query, path)
            return {"total_count": len(workflows), "workflows": items}, headers
        if found := re.fullmatch(r"/actions/workflows/([^/]+)", rest):
            workflow = index.workflow(found.group(1))
            if workflow is None:
                raise _not_found()
            return workflow, {}
        if found := re.fullmatch(r"/actions/workflows/([^/]+)/runs", rest):
            workflow = index.workflow(found.group(1))
            if workflow is None:
                raise _not_found()
            runs = [r for r in index.latest_runs() if r["workflow_id"] == workflow["id"]]
            return self._runs(runs, query, path)
        if found := re.fullmatch(r"/actions/runs/(\d+)", rest):
            attempts = index.attempts.get(int(found.group(1)))
            if not attempts:
                raise _not_found()
            return attempts[max(attempts)], {}
        if found := re.fullmatch(r"/actions/runs/(\d+)/attempts/(\d+)", rest):
            run = index.attempts.get(int(found.group(1)), {}).get(int(found.group(2)))
            if run is None:
                raise _not_found()
            return run, {}
        if found := re.fullmatch(r"/actions/runs/(\d+)/jobs", rest):
            run_id = int(found.group(1))
            attempts = index.attempts.get(run_id)
            if not attempts:
                raise _not_found()
            if (query.get("filter") or ["latest"])[0] == "all":
                jobs = [j for n in sorted(attempts) for j in index.jobs_by_attempt.get((run_id, n), [])]
            else:
                jobs = index.jobs_by_attempt.get((run_id, max(attempts)), [])
            return self._jobs(jobs, query, path)
        if found := re.fullmatch(r"/actions/runs/(\d+)/attempts/(\d+)/jobs", rest):
            key = (int(found.group(1)), int(found.group(2)))
            if key[1] not in index.attempts.get(key[0], {}):
                raise _not_found()
            return self._jobs(index.jobs_by_attempt.get(key, []), query, path)
        if found := re.fullmatch(r"/actions/jobs/(\d+)", rest):
            job = index.jobs.get(int(found.group(1)))
            if job is None:
                raise _not_found()
            return job, {}
        if found := re.fullmatch(r"/check-runs/(\d+)/annotations", rest):
            check_run_id = int(found.group(1))
            if check_run_id not in index.jobs:
                raise _not_found()
            return self._page(index.annotations.get(check_run_id, []), query, path)
        if found := re.fullmatch(r"/actions/jobs/(\d+)/logs", rest):
            job_id = int(found.group(1))
            if job_id not in index.jobs or job_id not in index.logs:
                raise _not_found()
            signature = secrets.token_urlsafe(16)
            self._log_tokens[signature] = job_id
            location = f"{self.log_host_url}/logs/{job_id}.txt?sig={signature}"
            raise _Response(302, None, {"Location": location})
        raise _not_found()

    def _jobs(self, jobs: list[dict[str, Any]], query: dict[str, list[str]], path: str) -> tuple[Any, dict[str, str]]:
        items, headers = self._page(sorted(jobs, key=lambda j: j["id"]), query, path)
        return {"total_count": len(jobs), "jobs": items}, headers

    def _runs(self, runs: list[dict[str, Any]], query: dict[str, list[str]], path: str) -> tuple[Any, dict[str, str]]:
        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        if head_sha := one("head_sha"):
            runs = [r for r in runs if r["head_sha"] == head_sha]
        if branch := one("branch"):
            runs = [r for r in runs if r["head_branch"] == branch]
        if event := one("event"):
            runs = [r for r in runs if r["event"] == event]
        if status := one("status"):
            # `status` takes a status or a conclusion, as GitHub's does.
            runs = [r for r in runs if r["status"] == status or r["conclusion"] == status]
        if created := one("created"):
            try:
                keep = created_filter(created)
            except ValueError:
                raise _Response(422, {"message": "Validation Failed", "documentation_url": _DOCS,
                                      "status": "422"}) from None
            runs = [r for r in runs if keep(_ts(r["created_at"]))]
        if one("exclude_pull_requests") in ("true", "1"):
            runs = [{**r, "pull_requests": []} for r in runs]
        items, headers = self._page(runs, query, path)
        return {"total_count": len(runs), "workflow_runs": items}, headers

    def _page(self, items: list[Any], query: dict[str, list[str]], path: str) -> tuple[list[Any], dict[str, str]]:
        try:
            per_page = min(MAX_PER_PAGE, max(1, int((query.get("per_page") or [DEFAULT_PER_PAGE])[0])))
            page = max(1, int((query.get("page") or ["1"])[0]))
        except ValueError:
            per_page, page = DEFAULT_PER_PAGE, 1
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []
        # GitHub's Link headers address the repository by id: /repositories/{id}/...
        canonical = re.sub(r"^/repos/[^/]+/[^/]+", f"/repositories/{self.index.repo_id}", path)

        def link(number: int, rel: str) -> str:
            params = {k: v[0] for k, v in query.items() if k != "page"}
            params["page"] = str(number)
            return f'<{self.base_url}{canonical}?{urlencode(params)}>; rel="{rel}"'

        # GitHub's order: prev, next, last, first.
        if page > 1:
            links.append(link(page - 1, "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        return chunk, ({"Link": ", ".join(links)} if links else {})
