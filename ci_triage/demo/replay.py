"""A local fake of the GitHub REST API that serves a triage case over real HTTP on 127.0.0.1.

It answers like api.github.com for the endpoints ci-triage uses: the same JSON shapes (the case holds
GitHub's own payloads), every URL rewritten to the fake's address, `Link` pagination over
`/repositories/{id}/...` as GitHub does, the 302 from a job's logs endpoint to a separate log host,
GitHub's 404 body, rate-limit headers. It records every request it served so tests can count them,
and can be told to answer a request with a fault.

Writes are answered by `fake_writes.Writes`, faults by `fake_http.FaultInjection`; their docstrings
say how each behaves.

Reference: https://docs.github.com/en/rest (API version 2022-11-28); "Using pagination in the REST
API" for Link headers; "Download job logs for a workflow run" for the 302 to a short-lived URL.
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
import socket
import struct
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from ci_triage.core.github.protocol import API_VERSION
from ci_triage.demo import payloads
from ci_triage.demo.case_index import CaseIndex, created_filter, parse_time
from ci_triage.demo.fake_http import (
    DOCS,
    Fault,
    FaultInjection,
    Response,
    ServedRequest,
    error,
    not_found,
    send_body,
)
from ci_triage.demo.fake_writes import Writes
from ci_triage.github.case import API_BASE, WEB_BASE, LogFile, validate_case

DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100

# Fields of the full pull request object that the list endpoint (pull-request-simple) leaves out.
_NOT_IN_SIMPLE_PULL = (
    "merged", "mergeable", "rebaseable", "mergeable_state", "merged_by", "comments", "review_comments",
    "maintainer_can_modify", "commits", "additions", "deletions", "changed_files",
)


class FakeGitHub(FaultInjection, Writes):
    """Serve a case on 127.0.0.1. Use as a context manager; `base_url` is the API root."""

    def __init__(self, case: dict[str, Any], token: str | None = None, bot_login: str = payloads.ACTIONS_BOT[0],
                 clock: Callable[[], datetime] | None = None, users: dict[str, dict[str, Any]] | None = None) -> None:
        self.index = CaseIndex(validate_case(case))
        self.token = token  # when set, any other token gets GitHub's 401 "Bad credentials"
        self.requests: list[ServedRequest] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        # Guards the mutable state below; the HTTP server answers each request on its own thread.
        self._state = threading.RLock()
        self._clock = clock or (lambda: datetime.now(UTC))
        self.bot = payloads.bot_user(bot_login) if bot_login == payloads.ACTIONS_BOT[0] else \
            payloads.bot_user(bot_login, self._user_id(bot_login))
        # Personal tokens: token -> the user it acts as (GET /user answers with them; their comments are
        # theirs). Any other token is an installation token (the workflow's GITHUB_TOKEN or an App's),
        # acting as `self.bot`, and gets 403 from GET /user as GitHub answers an installation.
        self.users = dict(users or {})
        self.collaborators = {k.lower(): v for k, v in case.get("collaborators", {}).items()}
        # Comments by id (copies: the case dict is never changed) and the issue each belongs to.
        self.comments: dict[int, dict[str, Any]] = {}
        self.comment_issue: dict[int, int] = {}
        for number, listed in case.get("comments", {}).items():
            for comment in listed:
                self.comments[comment["id"]] = dict(comment)
                self.comment_issue[comment["id"]] = int(number)
        self.reactions: dict[int, list[dict[str, Any]]] = {}
        self._next_comment_id = max([3_000_000_000, *self.comments]) + 1
        self._next_reaction_id = 300_000_001
        self._next_job_id = max([0, *self.index.jobs]) + 1
        self._servers: list[ThreadingHTTPServer] = []
        self.base_url = ""
        self.log_host_url = ""
        self._log_tokens: dict[str, int] = {}
        # One rate-limit window for the fake's lifetime (header and /rate_limit body agree, as GitHub's).
        self._rate_reset, self.rate_limited_requests = int(datetime.now(UTC).timestamp()) + 3600, 0

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> FakeGitHub:
        api = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("api"))
        logs = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("logs"))
        for server in (api, logs):
            server.daemon_threads = True
            # A short poll interval: stop() waits for the serving loop to notice, once per server.
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-github",
                             daemon=True).start()
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

    # --- serving ------------------------------------------------------------------------------
    def _rewrite(self, payload: Any) -> bytes:
        text = json.dumps(payload)
        return text.replace(API_BASE, self.base_url).replace(WEB_BASE, self.base_url).encode()

    def _headers(self, counted: bool = True) -> dict[str, str]:
        """GitHub's headers; every answer but a 304 uses up the primary limit (REST best practices)."""
        with self._lock:
            self.rate_limited_requests += counted
            used = self.rate_limited_requests
        return {
            "X-GitHub-Api-Version-Selected": API_VERSION,
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-GitHub-Request-Id": secrets.token_hex(8).upper(),
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": str(max(0, 5000 - used)),
            "X-RateLimit-Reset": str(self._rate_reset),
            "X-RateLimit-Used": str(used),
            "X-RateLimit-Resource": "core",
        }

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
                fault = fake._fault_for(method, split.path) if host == "api" else None
                kind = fault.kind if fault is not None else None
                if kind == "reset" and not fault.processed:
                    self._record(method, split, query, 0, body_in)
                    self._reset()
                    return
                status, headers, body = fake._dispatch(host, method, split.path, query, dict(self.headers),
                                                       body_in, fault if kind == "status" else None)
                if kind == "reset":
                    self._record(method, split, query, 0, body_in)
                    self._reset()
                    return
                self._record(method, split, query, status, body_in)
                if kind == "delay":
                    time.sleep(fault.delay_s)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    send_body(self, body, method != "HEAD")
                except OSError:  # the client gave up waiting (a delay fault) and closed its end
                    self.close_connection = True

            def _record(self, method: str, split: Any, query: dict[str, list[str]], status: int,
                        body_in: bytes) -> None:
                recorded: Any = None
                if method not in ("GET", "HEAD") and body_in:
                    try:
                        recorded = json.loads(body_in)
                    except ValueError:
                        recorded = body_in.decode("utf-8", errors="replace")
                with fake._lock:
                    fake.requests.append(ServedRequest(host, method, split.path, query, status,
                                                       "Authorization" in self.headers, recorded))

            def _reset(self) -> None:
                # SO_LINGER with a zero timeout makes close() send a TCP RST: "connection reset by peer".
                self.close_connection = True
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def do_PATCH(self) -> None:
                self._answer("PATCH")

            def do_DELETE(self) -> None:
                self._answer("DELETE")

        return Handler

    def _dispatch(self, host: str, method: str, path: str, query: dict[str, list[str]],
                  headers: dict[str, str], body: bytes, fault: Fault | None = None) -> tuple[int, dict[str, str], bytes | Path]:
        try:
            if host == "logs":
                return self._serve_log(path, query)
            if fault is not None:
                raise Response(fault.status, fault.body if fault.body is not None else {
                    "message": "Server Error" if fault.status >= 500 else "Fault", "documentation_url": DOCS,
                }, fault.headers)
            self._check_auth(headers)
            with self._state:
                payload, extra = self._route(method, path, query, body, headers)
            body_out = self._rewrite(payload)
            # Conditional requests ("Best practices for using the REST API"): a strong ETag of the body;
            # If-None-Match naming it gets 304 with no body.
            etag = '"' + hashlib.sha256(body_out).hexdigest()[:40] + '"'
            if method == "GET" and etag in (headers.get("If-None-Match") or headers.get("if-none-match") or ""):
                return 304, {**self._headers(counted=False), **extra, "ETag": etag}, b""
            head = {**self._headers(), **extra, "ETag": etag}
            return 200, {**head, "Content-Type": "application/json; charset=utf-8"}, body_out
        except Response as response:
            head = {**self._headers(), **response.headers}
            if response.body is None:
                return response.status, head, b""
            head["Content-Type"] = "application/json; charset=utf-8"
            return response.status, head, self._rewrite(response.body)

    def _check_auth(self, headers: dict[str, str]) -> None:
        if self.token is None:
            return
        given = headers.get("Authorization", "")
        if given and given.split(" ", 1)[-1] not in (self.token, *self.users):
            raise Response(401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"})

    def _serve_log(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes | Path]:
        found = re.fullmatch(r"/logs/(\d+)\.txt", path)
        job_id = int(found.group(1)) if found else None
        signature = (query.get("sig") or [""])[0]
        if job_id is None or self._log_tokens.get(signature) != job_id or job_id not in self.index.logs:
            # Azure blob storage's answer to a bad or expired signature.
            return 403, {"Content-Type": "application/xml"}, b"<Error><Code>AuthenticationFailed</Code></Error>"
        log = self.index.logs[job_id]
        # A log kept beside the case is streamed from its file by the handler, never held whole.
        body = log.path if isinstance(log, LogFile) else log.encode("utf-8")
        return 200, {"Content-Type": "text/plain; charset=utf-8"}, body

    # --- routes -------------------------------------------------------------------------------
    def _route(self, method: str, path: str, query: dict[str, list[str]], body: bytes = b"",
               headers: dict[str, str] | None = None) -> tuple[Any, dict[str, str]]:
        index = self.index
        headers = headers or {}
        prefix = f"/repos/{index.full_name}"
        by_id = f"/repositories/{index.repo_id}"
        if path.lower().startswith(prefix.lower()):
            rest = path[len(prefix):]
        elif path.startswith(by_id):
            rest = path[len(by_id):]
        elif path == "/rate_limit" and method == "GET":
            return self._rate_limit(), {}
        elif path == "/user" and method == "GET":
            return self._authenticated_user(headers), {}
        elif path == "/graphql" and method == "POST":
            return self._graphql(body, headers), {}
        else:
            raise not_found()
        if method in ("POST", "PATCH", "DELETE"):
            self._write(method, rest, body, self._actor(headers)[0])
        if method != "GET":
            raise not_found()
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
                raise not_found()
            return pull, {}
        if found := re.fullmatch(r"/pulls/(\d+)/files", rest):
            number = int(found.group(1))
            if number not in index.pulls:
                raise not_found()
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
                raise not_found()
            return workflow, {}
        if found := re.fullmatch(r"/actions/workflows/([^/]+)/runs", rest):
            workflow = index.workflow(found.group(1))
            if workflow is None:
                raise not_found()
            runs = [r for r in index.latest_runs() if r["workflow_id"] == workflow["id"]]
            return self._runs(runs, query, path)
        if found := re.fullmatch(r"/actions/runs/(\d+)", rest):
            attempts = index.attempts.get(int(found.group(1)))
            if not attempts:
                raise not_found()
            return attempts[max(attempts)], {}
        if found := re.fullmatch(r"/actions/runs/(\d+)/attempts/(\d+)", rest):
            run = index.attempts.get(int(found.group(1)), {}).get(int(found.group(2)))
            if run is None:
                raise not_found()
            return run, {}
        if found := re.fullmatch(r"/actions/runs/(\d+)/jobs", rest):
            run_id = int(found.group(1))
            attempts = index.attempts.get(run_id)
            if not attempts:
                raise not_found()
            # `filter` (GitHub's description): `all` "returns all jobs for a workflow run, including from
            # old executions", each execution once; `latest` (the default) "returns jobs from the most
            # recent execution": per job, its newest execution, whichever attempt ran it.
            executions = {j["id"]: j for n in sorted(attempts) for j in index.jobs_by_attempt.get((run_id, n), [])}
            if (query.get("filter") or ["latest"])[0] == "all":
                jobs = list(executions.values())
            else:
                newest: dict[str, dict[str, Any]] = {}
                for job in sorted(executions.values(), key=lambda j: (j["run_attempt"], j["id"])):
                    newest[job["name"]] = job
                jobs = list(newest.values())
            return self._jobs(jobs, query, path)
        if found := re.fullmatch(r"/actions/runs/(\d+)/attempts/(\d+)/jobs", rest):
            key = (int(found.group(1)), int(found.group(2)))
            if key[1] not in index.attempts.get(key[0], {}):
                raise not_found()
            # "Lists jobs for a specific workflow run attempt": the narrow reading (only the jobs that
            # ran in it; one public report says jobs not rerun are absent), so a client that relies on
            # the broad reading is caught here.
            return self._jobs([j for j in index.jobs_by_attempt.get(key, []) if j["run_attempt"] == key[1]],
                              query, path)
        if found := re.fullmatch(r"/actions/jobs/(\d+)", rest):
            job = index.jobs.get(int(found.group(1)))
            if job is None:
                raise not_found()
            return job, {}
        if found := re.fullmatch(r"/contents/(.+)", rest):
            # The case holds files of the default branch; any ref answers with them.
            file_path = found.group(1)
            if file_path not in index.files:
                raise not_found()
            ref = (query.get("ref") or [index.repository["default_branch"]])[0]
            return payloads.content_file(index.full_name, file_path, index.files[file_path], ref), {}
        if found := re.fullmatch(r"/check-runs/(\d+)/annotations", rest):
            check_run_id = int(found.group(1))
            if check_run_id not in index.jobs:
                raise not_found()
            return self._page(index.annotations.get(check_run_id, []), query, path)
        if found := re.fullmatch(r"/actions/jobs/(\d+)/logs", rest):
            job_id = int(found.group(1))
            if job_id not in index.jobs or job_id not in index.logs:
                raise not_found()
            signature = secrets.token_urlsafe(16)
            self._log_tokens[signature] = job_id
            location = f"{self.log_host_url}/logs/{job_id}.txt?sig={signature}"
            raise Response(302, None, {"Location": location})
        if found := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(found.group(1))
            if not self._is_issue(number):
                raise not_found()
            comments = self._comments_of(number)
            if since := (query.get("since") or [None])[0]:
                try:
                    after = parse_time(since)
                except ValueError:
                    raise error(422, "Validation Failed") from None
                comments = [c for c in comments if parse_time(c["updated_at"]) >= after]
            return self._page(comments, query, path)
        if found := re.fullmatch(r"/collaborators/([^/]+)/permission", rest):
            return self._permission(unquote(found.group(1))), {}
        raise not_found()

    # --- state for writes -------------------------------------------------------------------------
    def _now(self) -> datetime:
        return self._clock().astimezone(UTC).replace(microsecond=0)

    @staticmethod
    def _user_id(login: str) -> int:
        return 10_000_000 + int.from_bytes(login.lower().encode()[:6].ljust(6, b"\0"), "big") % 90_000_000

    def _known_user(self, login: str) -> dict[str, Any]:
        """The case's own user object for `login` when it has one (PR authors, the owner), else a made-up one."""
        wanted = login.lower()
        candidates = [self.index.repository["owner"]]
        for pull in self.index.pulls.values():
            candidates += [pull.get("user"), (pull.get("head") or {}).get("user")]
        for candidate in candidates:
            if candidate and candidate.get("login", "").lower() == wanted:
                return {k: v for k, v in candidate.items() if k in payloads.user(login, 1)}
        return payloads.user(login, self._user_id(login))

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
                raise Response(422, {"message": "Validation Failed", "documentation_url": DOCS,
                                      "status": "422"}) from None
            runs = [r for r in runs if keep(parse_time(r["created_at"]))]
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
