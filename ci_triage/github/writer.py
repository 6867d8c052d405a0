"""Acting on GitHub: rerun jobs, post and update the triage comment, react, check who asked.

A thin shell over httpx; every decision about an answer (which error, whether and how long to wait)
is made by the pure functions of `protocol`. The HTTP client, `sleep`, the clock and the random
source are passed in, so tests drive it against the local fake without waiting.

Retries (docs.github.com "Rate limits for the REST API", "Best practices for using the REST API"):
- reads are retried on 5xx, timeouts and connection errors, with exponential backoff and full jitter;
- rate limits (primary and secondary) are waited out when the wait is short (`max_wait_s`), else
  RateLimited is raised with `reset_at` / `retry_after` so the caller can say when to come back;
- writes are spaced at least `min_write_interval_s` apart ("wait at least one second between each
  request" that creates content);
- a write is repeated only when it cannot have happened: a rate limit, a 503, or a connection that
  never opened. After a timeout, a dropped connection, or a 500/502/504 the write may have been done:
  * a rerun is checked by re-reading the run (`run()`): if its attempt number went up or it is queued
    or in progress, the rerun happened and is not requested again (a second request would start yet
    another attempt once this one completes, or be refused with 403 while it runs);
  * a new comment is looked for among the issue's comments (same body) before posting again;
  * updating a comment and adding a reaction are idempotent and simply repeated.
Errors and log lines never carry the token: every message goes through `protocol.redact`.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from ci_triage.core.github import protocol
from ci_triage.core.github.protocol import API_VERSION, PER_PAGE, USER_AGENT
from ci_triage.core.text import shown_document
from ci_triage.errors import Forbidden, GitHubError, NoResponse, NotFound, Unavailable, UsageError
from ci_triage.github.client import Connection
from ci_triage.github.transport import RetryPolicy
from ci_triage.model import Access, CollaboratorPermission

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
# Statuses of a run that has been (re-)queued: a rerun request was accepted.
ACTIVE_STATUSES = ("queued", "in_progress", "waiting", "requested", "pending")

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class GitHubWriter:
    """Writes to one GitHub API (github.com, an Enterprise server, or the local fake)."""

    def __init__(
        self,
        connection: Connection,
        *,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = _utcnow,
        rng: protocol.RandomSource | None = None,
        min_write_interval_s: float = 1.0,
        max_wait_s: float = protocol.MAX_WAIT_S,
        logger: logging.Logger | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.connection = connection
        self.api_url = connection.api_url.rstrip("/")
        self._owns_http = http is None
        self.http = http if http is not None else httpx.Client(timeout=connection.timeout_s, follow_redirects=False)
        # The command's one retry policy (shared with the reader, so one wait budget), or one of our own.
        self.policy = policy or RetryPolicy(max_wait_s, max_attempts=max(1, connection.retries + 1), sleep=sleep,
                                            clock=clock, rng=rng if rng is not None else random.Random(),
                                            secrets=(connection.token,))
        self._sleep = self.policy.sleep
        self._clock = self.policy.clock
        self.min_write_interval_s = min_write_interval_s
        self._log = logger or log
        self._last_write: datetime | None = None

    def close(self) -> None:
        if self._owns_http:
            self.http.close()

    def __enter__(self) -> GitHubWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"GitHubWriter({self.connection!r})"

    # --- reads ----------------------------------------------------------------------------------
    def run(self, repo: str, run_id: int) -> dict[str, Any]:
        """The workflow run payload (latest attempt): status, conclusion, run_attempt, event, head_sha..."""
        return self._send("GET", f"/repos/{repo}/actions/runs/{run_id}", what=f"run {run_id} of {repo}").data

    def comments(self, repo: str, issue_number: int) -> list[dict[str, Any]]:
        """Every comment of an issue or pull request, oldest first, following the Link header."""
        what = f"comments of #{issue_number} in {repo}"
        url: str | None = f"{self.api_url}/repos/{repo}/issues/{issue_number}/comments"
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        found: list[dict[str, Any]] = []
        while url:
            response = self._send("GET", url, params=params, what=what)
            found += response.data
            url, params = protocol.parse_link(response.headers.get("link")).get("next"), None
            if url and not protocol.same_origin(url, self.api_url):
                # The token goes only to the API host it was configured for.
                raise GitHubError(f"{what}: the next page is on another host ({url.split('/')[2]})")
        return found

    def permission(self, repo: str, username: str) -> CollaboratorPermission:
        """The user's access, as GET /repos/{owner}/{repo}/collaborators/{username}/permission answers it
        (docs.github.com "Get repository permissions for a user"): `permission` is the base level (admin,
        write, read, none; maintain shows as write, triage as read), `role_name` the role, custom ones
        included. A 404 means the user is not a collaborator; a 403 means this token may not tell."""
        try:
            payload = self._send("GET", f"/repos/{repo}/collaborators/{quote(username, safe='')}/permission",
                                 what=f"permission of {username} on {repo}").data
        except NotFound:
            return CollaboratorPermission(Access.NOT_COLLABORATOR)
        except Forbidden as error:
            return CollaboratorPermission(Access.UNKNOWN, detail=error.message)
        return CollaboratorPermission(Access.KNOWN, payload.get("permission") or "none", payload.get("role_name"))

    def identity(self) -> str | None:
        """The login the token acts as, or None when GitHub will not say.

        GET /user ("Get the authenticated user") answers a personal token. It is not enabled for GitHub
        Apps (`enabledForGitHubApps: false` in GitHub's OpenAPI description): the workflow's GITHUB_TOKEN
        and an App's installation token (both `ghs_...`) get 403 "Resource not accessible by integration".
        For those, GraphQL's `viewer` names the App's bot user (`github-actions[bot]`, `<slug>[bot]`); an
        installation token skips GET /user. When neither answers, the caller learns the login from a
        comment or reaction it writes. (Seen reported, not only believed: fullsend-ai/fullsend#1953, 2026-06,
        a workflow run where `viewer` returned `<slug>[bot]` for an installation token; pingdotgg/t3code#11273,
        2026-09, GET /user's 403 for a `ghs_` token. Retrieved through the issues search, 2026-12-04.)"""
        if not (self.connection.token or "").startswith("ghs_"):
            try:
                login = (self._send("GET", "/user", what="the token's user").data or {}).get("login")
                return login if isinstance(login, str) and login else None
            except (Forbidden, NotFound):
                pass
        try:
            answer = self._send("POST", self._graphql_url(), json={"query": "query { viewer { login } }"},
                                what="the token's GraphQL viewer", idempotent=True).data
        except (Forbidden, NotFound, UsageError):
            return None
        login = ((answer or {}).get("data") or {}).get("viewer", {}) if isinstance(answer, dict) else None
        login = login.get("login") if isinstance(login, dict) else None
        return login if isinstance(login, str) and login else None

    def _graphql_url(self) -> str:
        """api.github.com/graphql; on GitHub Enterprise Server the REST root is /api/v3, GraphQL's /api/graphql."""
        if self.api_url.endswith("/api/v3"):
            return self.api_url[: -len("/v3")] + "/graphql"
        return f"{self.api_url}/graphql"

    # --- writes ---------------------------------------------------------------------------------
    def rerun_job(self, repo: str, job_id: int) -> None:
        """Re-run one job (and, on GitHub, the jobs that depend on it) as a new attempt of its run."""
        job = self._send("GET", f"/repos/{repo}/actions/jobs/{job_id}", what=f"job {job_id} of {repo}").data
        self._rerun(repo, job["run_id"], job.get("run_attempt") or 1,
                    f"/repos/{repo}/actions/jobs/{job_id}/rerun", f"rerun of job {job_id} in {repo}")

    def rerun_failed_jobs(self, repo: str, run_id: int) -> None:
        """Re-run the failed and cancelled jobs of a run as its next attempt."""
        before = self.run(repo, run_id)
        self._rerun(repo, run_id, before.get("run_attempt") or 1,
                    f"/repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs", f"rerun of failed jobs of run {run_id} in {repo}")

    def create_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        body = shown_document(body)  # the output boundary: whatever built the body, no secret or escape leaves
        what = f"comment on #{number} in {repo}"
        path = f"/repos/{repo}/issues/{number}/comments"
        for attempt in itertools.count():
            try:
                return self._send("POST", path, json={"body": body}, what=what).data
            except Unavailable as error:
                if not self._maybe_done("POST", error):
                    raise
                # The comment may have been created: look for it before posting a second one.
                existing = [c for c in self.comments(repo, number) if c.get("body") == body]
                if existing:
                    self._log.info("%s: the comment was created although no answer came", what)
                    return existing[-1]
                self._wait_or_raise(attempt, error)
        raise AssertionError("unreachable")

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        # Replacing the body with the same text twice leaves the same comment: safe to repeat.
        return self._send("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json={"body": shown_document(body)},
                          what=f"update of comment {comment_id} in {repo}", idempotent=True).data

    def delete_comment(self, repo: str, comment_id: int) -> bool:
        """Delete an issue comment (DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}, 204); False
        when it was already gone (404), so deleting twice is harmless and safe to repeat."""
        try:
            self._send("DELETE", f"/repos/{repo}/issues/comments/{comment_id}",
                       what=f"deletion of comment {comment_id} in {repo}", idempotent=True)
        except NotFound:
            return False
        return True

    def react(self, repo: str, comment_id: int, content: str) -> dict[str, Any] | None:
        if content not in REACTIONS:
            raise UsageError(f"{content!r} is not a GitHub reaction", hint=f"Use one of {', '.join(REACTIONS)}.")
        # GitHub answers 200 with the existing reaction when it is already there: safe to repeat.
        return self._send("POST", f"/repos/{repo}/issues/comments/{comment_id}/reactions", json={"content": content},
                          what=f"reaction to comment {comment_id} in {repo}", idempotent=True).data

    # --- plumbing -------------------------------------------------------------------------------
    def _rerun(self, repo: str, run_id: int, attempt_before: int, path: str, what: str) -> None:
        for attempt in itertools.count():
            try:
                self._send("POST", path, json={}, what=what)
                self._log.info("%s: requested", what)
                return
            except Unavailable as error:
                if not self._maybe_done("POST", error):
                    raise
                if self._rerun_happened(repo, run_id, attempt_before, what):
                    self._log.info("%s: no answer came, but run %s has a new attempt; not asking again",
                                   what, run_id)
                    return
                self._log.warning("%s: %s; the run has no new attempt, so asking again", what, error.message)
                self._wait_or_raise(attempt, error)

    def _rerun_happened(self, repo: str, run_id: int, attempt_before: int, what: str) -> bool:
        try:
            run = self.run(repo, run_id)
        except GitHubError as check:
            raise NoResponse(f"{what}: no answer came, and whether the rerun started is unknown "
                             f"({check.message})", hint="Look at the run on GitHub before asking again.") from None
        return (run.get("run_attempt") or 1) > attempt_before or run.get("status") in ACTIVE_STATUSES

    def _maybe_done(self, method: str, error: GitHubError) -> bool:
        """A write failed in a way that leaves open whether GitHub acted on it."""
        return isinstance(error, Unavailable) and not protocol.is_safe_to_retry(method, error)

    def _wait_or_raise(self, attempt: int, error: GitHubError) -> None:
        delay = self.policy.delay(attempt, error)
        if delay is None:
            raise error
        self.policy.wait(delay, error)

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
                   "User-Agent": USER_AGENT}
        if self.connection.token:
            headers["Authorization"] = f"Bearer {self.connection.token}"
        return headers

    def _space_writes(self) -> None:
        if self._last_write is None:
            return
        waited = (self._clock() - self._last_write).total_seconds()
        if waited < self.min_write_interval_s:
            self._sleep(self.min_write_interval_s - waited)

    def _send(self, method: str, path_or_url: str, *, params: dict[str, Any] | None = None,
              json: Any = None, what: str, idempotent: bool | None = None) -> httpx.Response:
        """One request with retries as `protocol` decides; raises the typed error when it gives up."""
        url = path_or_url if "://" in path_or_url else f"{self.api_url}{path_or_url}"
        write = method not in ("GET", "HEAD")
        secrets = [self.connection.token]
        for attempt in itertools.count():
            if write:
                self._space_writes()
            error: GitHubError
            try:
                response = self.http.request(method, url, params=params, json=json, headers=self._headers())
            except httpx.TransportError as exc:
                sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
                error = protocol.no_response(what, exc, secrets, sent=sent)
            else:
                try:
                    protocol.classify_response(response.status_code, response.headers, response.content,
                                               what=what, secrets=secrets)
                    response.data = self._decode(method, response, what)  # type: ignore[attr-defined]
                    return response
                except GitHubError as exc:
                    error = exc
            finally:
                if write:
                    self._last_write = self._clock()
            if not protocol.is_safe_to_retry(method, error, idempotent):
                raise error
            delay = self.policy.delay(attempt, error)
            if delay is None:
                raise error
            self._log.info("%s; retrying in %.1f s", protocol.redact(error.message, secrets), delay)
            self.policy.wait(delay, error)
        raise AssertionError("unreachable")

    @staticmethod
    def _decode(method: str, response: httpx.Response, what: str) -> Any:
        """The answer's JSON. An undecodable answer to a read is retried like a 5xx; to a write it means
        the write was done but we cannot tell what came back, so the caller checks, as after a timeout."""
        if not response.content:
            return None
        try:
            return protocol.decode_json(what, response.content)
        except Unavailable:
            if method in ("GET", "HEAD"):
                raise
            raise NoResponse(f"{what}: GitHub's answer could not be decoded",
                             hint="The request may or may not have been acted on.") from None

