"""The one place that reads from GitHub.

PyGithub's public API gives the objects it covers without extra requests (the repository, a pull
request, its files, file contents, a check run's annotations); lists of objects PyGithub would
re-fetch one by one (`raw_data` of a listed run or job completes it) are paged through PyGithub's
documented `requester` with GitHub's Link headers. httpx streams job logs: the logs endpoint answers
302 with a short-lived URL on another host, which is fetched without our Authorization header.

Every answer goes through `protocol.classify_response` (PyGithub's own retries are off), and every
retry through one `RetryPolicy` shared with the writer, so a command has one wait budget. A truncated
or undecodable answer is retried like a 5xx; a log that stays undecodable is missing evidence
(`LogStatus.UNREADABLE`), never an internal error.

Conventions (docs.github.com/en/rest): API version header 2022-11-28, `per_page=100`, the API base
from GITHUB_API_URL so GitHub Enterprise works; GET answers carrying an `ETag` are asked again with
`If-None-Match` and a 304 reuses the body already held. A `recorder` callback, when given, receives
every payload exactly as GitHub sent it (`ci-triage record` saves them as a replayable case).
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ci_triage.core.github import protocol
from ci_triage.core.github.convert import (
    changed_file_from_payload,
    job_from_payload,
    pull_from_payload,
    run_from_payload,
)
from ci_triage.core.github.protocol import API_VERSION, PER_PAGE, USER_AGENT
from ci_triage.errors import GitHubError, LogExpired, NotFound, Unauthorized, Unavailable
from ci_triage.github.transport import RetryPolicy
from ci_triage.model import ChangedFile, Job, LogStatus, PullRequest, Run

if TYPE_CHECKING:
    import httpx
    from github import Github

Recorder = Callable[[str, Any], None]
T = TypeVar("T")
REDIRECTS = (301, 302, 303, 307, 308)

# PyGithub logs its redirects and retries; our errors are one line on stderr, so its logger is
# silenced (with no handler anywhere, Python's last-resort handler would print its warnings).
for _name in ("github", "ci_triage"):
    logging.getLogger(_name).addHandler(logging.NullHandler())
logging.getLogger("github").propagate = False


@dataclass(frozen=True)
class Connection:
    api_url: str
    token: str | None
    timeout_s: float = 30.0
    retries: int = 3
    backoff_s: float = 0.5

    def __repr__(self) -> str:  # never show the token
        return f"Connection(api_url={self.api_url!r}, token={'***' if self.token else None})"


def default_policy(connection: Connection, sleep: Callable[[float], None] = time.sleep,
                   max_wait_s: float | None = None) -> RetryPolicy:
    from ci_triage.github.transport import DEFAULT_MAX_WAIT_S

    return RetryPolicy(DEFAULT_MAX_WAIT_S if max_wait_s is None else max_wait_s,
                       max_attempts=connection.retries + 1, sleep=sleep, base_delay_s=connection.backoff_s,
                       secrets=(connection.token,))


class GitHubClient:
    """Read access to one GitHub API (github.com, an Enterprise server, or the local fake)."""

    def __init__(
        self,
        connection: Connection,
        recorder: Recorder | None = None,
        sleep: Callable[[float], None] = time.sleep,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.connection = connection
        self.recorder = recorder
        self.policy = policy or default_policy(connection, sleep)
        self._github: Github | None = None
        self._http: httpx.Client | None = None
        # ETag -> body of every conditional GET; `sync` swaps in the store's persistent table.
        self._etags: Any = {}

    # --- plumbing -----------------------------------------------------------------------------
    @property
    def github(self) -> Github:
        if self._github is None:
            from github import Auth, Github

            auth = Auth.Token(self.connection.token) if self.connection.token else None
            self._github = Github(
                auth=auth,
                base_url=self.connection.api_url.rstrip("/"),
                per_page=PER_PAGE,
                timeout=max(1, int(self.connection.timeout_s)),
                user_agent=USER_AGENT,
                api_version=API_VERSION,
                # Retries are ours (RetryPolicy): one policy and one wait budget for every request.
                retry=None,
                seconds_between_requests=None,
                seconds_between_writes=None,
                # Objects are built from their URL; each is fetched once, when its data is read.
                lazy=True,
            )
        return self._github

    @property
    def http(self) -> httpx.Client:
        if self._http is None:
            import httpx

            self._http = httpx.Client(timeout=self.connection.timeout_s, follow_redirects=False,
                                      headers={"User-Agent": USER_AGENT})
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        if self._github is not None:
            self._github.close()

    def _record(self, kind: str, payload: Any) -> None:
        if self.recorder is not None:
            self.recorder(kind, payload)

    @property
    def _secrets(self) -> tuple[str | None, ...]:
        return (self.connection.token,)

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        """PyGithub's and requests' exceptions -> the typed error `protocol` says the answer means."""
        import requests
        from github import GithubException

        try:
            yield
        except GithubException as exc:
            protocol.classify_response(exc.status or 0, exc.headers or {}, exc.data, what=what,
                                       secrets=self._secrets)
            raise GitHubError(f"{what}: GitHub answered {exc.status}", status=exc.status) from None
        except requests.exceptions.RequestException as exc:
            sent = not isinstance(exc, requests.exceptions.ConnectionError) or \
                isinstance(exc, requests.exceptions.ChunkedEncodingError)
            raise protocol.no_response(what, exc, self._secrets, sent=sent) from None
        except (ValueError, UnicodeDecodeError) as exc:  # a truncated or corrupt JSON body
            raise protocol.malformed(what, exc) from None

    def _read(self, what: str, fn: Callable[[], T]) -> T:
        """`fn` (which talks to GitHub through PyGithub) under the one retry policy."""
        def attempt() -> T:
            with self._translate(what):
                return fn()

        return self.policy.call(attempt)

    def _url(self, path: str) -> str:
        return f"{self.connection.api_url.rstrip('/')}{path}"

    def _repo(self, repo: str) -> Any:
        """A repository that holds only its URL (lazy: no request until its data is read)."""
        return self.github.get_repo(repo)

    def _get(self, url: str, params: dict[str, Any] | None) -> tuple[dict[str, str], Any]:
        """One GET through PyGithub's requester, conditional on the ETag of the last answer."""
        key = url + "?" + json.dumps(params or {}, sort_keys=True)
        headers = {"If-None-Match": self._etags[key][0]} if key in self._etags else None
        answer_headers, data = self.github.requester.requestJsonAndCheck("GET", url, parameters=params,
                                                                         headers=headers)
        lowered = {str(k).lower(): str(v) for k, v in answer_headers.items()}
        if data is None and key in self._etags:
            # 304 Not Modified (no body; PyGithub returns no status): the body held is still current.
            return lowered, self._etags[key][1]
        if lowered.get("etag"):
            self._etags[key] = (lowered["etag"], data)
        return lowered, data

    def _list(self, what: str, path: str, params: dict[str, Any] | None = None, key: str | None = None,
              limit: int | None = None) -> list[dict[str, Any]]:
        """Every item of a list endpoint, following `Link: rel="next"` (bare arrays or `{key: [...]}`)."""
        def fetch() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = []
            url: str | None = self._url(path)
            query: dict[str, Any] | None = {**(params or {}), "per_page": PER_PAGE}
            while url:
                headers, data = self._get(url, query)
                page = data.get(key) if key and isinstance(data, dict) else data
                if not isinstance(page, list) or not all(isinstance(item, dict) for item in page):
                    raise protocol.malformed(what, f"no list of {key or 'items'} in the answer")
                found += page
                if limit is not None and len(found) >= limit:
                    return found[:limit]
                url, query = protocol.parse_link(headers.get("link")).get("next"), None
                if url and not protocol.same_origin(url, self.connection.api_url):
                    # The token goes only to the API host it was configured for.
                    raise GitHubError(f"{what}: the next page is on another host")
            return found

        return self._read(what, fetch)

    @staticmethod
    def _convert(what: str, convert: Callable[[Any], T], payload: Any) -> T:
        try:
            return convert(payload)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GitHubError(f"{what}: GitHub's answer lacks what ci-triage reads ({type(exc).__name__}: {exc})",
                              hint="This may be a GitHub change; please report it.") from None

    # --- reads --------------------------------------------------------------------------------
    def check_repository(self, repo: str) -> dict[str, Any]:
        payload = self._read(f"repository {repo}", lambda: self._repo(repo).raw_data)
        self._record("repository", payload)
        return payload

    def pull(self, repo: str, number: int) -> PullRequest:
        what = f"pull request #{number} in {repo}"
        payload = self._read(what, lambda: self._repo(repo).get_pull(number).raw_data)
        self._record("pull", payload)
        return self._convert(what, pull_from_payload, payload)

    def pull_files(self, repo: str, number: int) -> list[ChangedFile]:
        what = f"files of pull request #{number} in {repo}"
        payloads = self._read(what, lambda: [f.raw_data for f in self._repo(repo).get_pull(number).get_files()])
        self._record("pull_files", {"number": number, "files": payloads})
        return [self._convert(what, changed_file_from_payload, p) for p in payloads]

    def pulls(self, repo: str, state: str = "all", limit: int = PER_PAGE) -> list[dict[str, Any]]:
        """Recently updated pull requests (simple payloads), to name the PR of a fork's run by head SHA."""
        found = self._list(f"pull requests of {repo}", f"/repos/{repo}/pulls",
                           {"state": state, "sort": "updated", "direction": "desc"}, limit=limit)
        self._record("pulls", found)
        return found

    def runs(self, repo: str, *, workflow_id: int | None = None, limit: int | None = None,
             **filters: str) -> list[Run]:
        """Workflow runs, newest first, filtered as GitHub filters them (head_sha, created, status...)."""
        what = f"workflow runs of {repo}"
        path = f"/repos/{repo}/actions/workflows/{workflow_id}/runs" if workflow_id is not None \
            else f"/repos/{repo}/actions/runs"
        payloads = self._list(what, path, dict(filters), key="workflow_runs", limit=limit)
        for payload in payloads:
            self._record("run", payload)
        return [self._convert(what, run_from_payload, p) for p in payloads]

    def workflows(self, repo: str) -> list[dict[str, Any]]:
        """Every workflow of a repository, as payloads (a recorded case needs them for workflow filters)."""
        payloads = self._list(f"workflows of {repo}", f"/repos/{repo}/actions/workflows", key="workflows")
        for payload in payloads:
            self._record("workflow", payload)
        return payloads

    def use_etag_cache(self, cache: Any) -> None:
        """Keep ETags and bodies in `cache` (a mapping: key -> (etag, body)), e.g. across processes."""
        self._etags = cache

    def completed_runs(self, repo: str, created: str) -> list[tuple[Run, str | None]]:
        """Completed workflow runs created in `created` (GitHub's qualifier, e.g. `>=2026-05-01`), newest
        first, each with the login that triggered its latest attempt."""
        what = f"workflow runs of {repo}"
        payloads = self._list(what, f"/repos/{repo}/actions/runs", {"status": "completed", "created": created},
                              key="workflow_runs")
        for payload in payloads:
            self._record("run", payload)
        return [(self._convert(what, run_from_payload, p), _login(p.get("triggering_actor"))) for p in payloads]

    def attempt_actor(self, repo: str, run_id: int, attempt: int) -> str | None:
        """Who triggered attempt `attempt` of a run (GET .../runs/{id}/attempts/{n})."""
        url = self._url(f"/repos/{repo}/actions/runs/{run_id}/attempts/{attempt}")
        _, payload = self._read(f"attempt {attempt} of run {run_id}", lambda: self._get(url, None))
        return _login(payload.get("triggering_actor")) if isinstance(payload, dict) else None

    def job_executions(self, repo: str, run_id: int) -> list[Job]:
        """Every execution of every job of a run, all attempts (`filter=all`)."""
        what = f"jobs of run {run_id}"
        every = self._list(what, f"/repos/{repo}/actions/runs/{run_id}/jobs", {"filter": "all"}, key="jobs")
        for payload in every:
            self._record("job", payload)
        return [self._convert(what, job_from_payload, p) for p in every]

    def jobs(self, repo: str, run_id: int, attempt: int) -> list[Job]:
        """The jobs of a run as they stood at `attempt`, with steps, runner and labels: jobs rerun in
        that attempt, and those carried over from earlier attempts (see protocol.jobs_of_attempt)."""
        what = f"jobs of run {run_id}"
        every = self._list(what, f"/repos/{repo}/actions/runs/{run_id}/jobs", {"filter": "all"}, key="jobs")
        payloads = protocol.jobs_of_attempt(every, attempt)
        for payload in payloads:
            self._record("job", payload)
        return [self._convert(what, job_from_payload, p) for p in payloads]

    def file_text(self, repo: str, path: str, ref: str | None = None) -> str | None:
        """A file of the repository at `ref` (default branch when None), or None when there is none."""
        what = f"{path} in {repo}"

        def fetch() -> str | None:
            content = self._repo(repo).get_contents(path, **({"ref": ref} if ref else {}))
            if isinstance(content, list) or content.type != "file":  # a directory, symlink or submodule
                return None
            return content.decoded_content.decode("utf-8", errors="replace")

        try:
            text = self._read(what, fetch)
        except NotFound:
            return None
        if text is not None:
            self._record("file", {"path": path, "text": text})
        return text

    def annotations(self, repo: str, job_id: int) -> list[dict[str, Any]]:
        """Annotations of a job's check run (a job's id is its check run's id)."""
        what = f"annotations of job {job_id}"
        payloads = self._read(what, lambda: [a.raw_data for a in
                                             self._repo(repo).get_check_run(job_id).get_annotations()])
        self._record("annotations", {"job_id": job_id, "annotations": payloads})
        return payloads

    # --- logs ---------------------------------------------------------------------------------
    def download_log(self, repo: str, job_id: int) -> tuple[LogStatus, bytes | mmap.mmap | None]:
        """A job's raw log bytes (streamed to a temporary file and mapped when large, so a 1 GB log
        costs bounded memory). Missing evidence is a status, not an exception: 404 is MISSING (no
        log yet, asked again next time), 410 EXPIRED, an answer that stays undecodable UNREADABLE."""
        what = f"log of job {job_id}"
        try:
            content = self.policy.call(lambda: self._log_attempt(repo, job_id, what))
        except NotFound:
            return LogStatus.MISSING, None
        except LogExpired:
            return LogStatus.EXPIRED, None
        except Unauthorized:
            raise
        except GitHubError as error:
            from ci_triage.github.transport import over_budget

            if over_budget(error):
                raise  # the command stops: a rate limit it will not wait for
            return LogStatus.UNREADABLE, None
        if self.recorder is not None:  # a case file holds the log as text
            self._record("log", {"job_id": job_id, "text": content[:].decode("utf-8", errors="replace")})
        return LogStatus.AVAILABLE, content

    def log(self, repo: str, job_id: int) -> tuple[LogStatus, bytes | mmap.mmap | None]:
        """A job's log as the bytes GitHub sent; missing evidence is a status, not an exception."""
        return self.download_log(repo, job_id)

    def _log_attempt(self, repo: str, job_id: int, what: str) -> bytes | mmap.mmap:
        import httpx

        url = self._url(f"/repos/{repo}/actions/jobs/{job_id}/logs")
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        if self.connection.token:
            headers["Authorization"] = f"Bearer {self.connection.token}"
        try:
            response = self.http.get(url, headers=headers)
            protocol.classify_response(response.status_code, response.headers, response.content, what=what,
                                       log=True, secrets=self._secrets)
            if response.status_code not in REDIRECTS:
                return _decoded(response.headers.get("content-encoding"), response.content, what)
            location = response.headers.get("location")
            if not location:
                raise protocol.malformed(what, "a redirect without a Location")
            # The log host is not GitHub's API: the token must not travel there.
            same = protocol.same_origin(location, self.connection.api_url)
            with self.http.stream("GET", location, headers=headers if same else None) as blob:
                if blob.status_code != 200:
                    # Blob storage's own errors (an expired signature...): ask the API for a new URL.
                    raise Unavailable(f"{what}: the log host answered {blob.status_code}", status=503)
                return _spooled(blob.headers.get("content-encoding"), blob.iter_raw(1 << 20), what)
        except httpx.TransportError as exc:
            sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
            raise protocol.no_response(what, exc, self._secrets, sent=sent) from None
        except httpx.HTTPError as exc:  # DecodingError and the like
            raise protocol.malformed(what, exc) from None


def _login(user: Any) -> str | None:
    return user.get("login") if isinstance(user, dict) else None


def _decoded(encoding: str | None, raw: bytes, what: str) -> bytes:
    """The body without its Content-Encoding. gzip is decoded here, strictly: httpx's decoder accepts a
    stream cut short, which would pass a truncated log off as a complete one."""
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("identity", ""):
        return raw
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise protocol.malformed(what, f"unsupported Content-Encoding {encoding}")
    decoder = zlib.decompressobj(zlib.MAX_WBITS | 16 if "gzip" in encoding else zlib.MAX_WBITS)
    try:
        data = decoder.decompress(raw) + decoder.flush()
    except zlib.error as exc:
        raise protocol.malformed(what, f"corrupt {encoding} stream ({exc})") from None
    if not decoder.eof:
        raise protocol.malformed(what, f"truncated {encoding} stream")
    return data


def _spooled(encoding: str | None, pieces, what: str) -> bytes | mmap.mmap:
    """A streamed body without its Content-Encoding, written to a temporary file as it arrives and
    mapped when large (store.mapped_file). gzip is decoded strictly, as in `_decoded`."""
    from ci_triage.store import mapped_file

    encoding = (encoding or "identity").strip().lower()
    if encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
        raise protocol.malformed(what, f"unsupported Content-Encoding {encoding}")
    decoder = None if encoding in ("identity", "") else zlib.decompressobj(
        zlib.MAX_WBITS | 16 if "gzip" in encoding else zlib.MAX_WBITS)
    with tempfile.TemporaryFile(prefix="ci-triage-log-") as spool:
        try:
            for piece in pieces:
                spool.write(decoder.decompress(piece) if decoder else piece)
            if decoder:
                spool.write(decoder.flush())
        except zlib.error as exc:
            raise protocol.malformed(what, f"corrupt {encoding} stream ({exc})") from None
        if decoder and not decoder.eof:
            raise protocol.malformed(what, f"truncated {encoding} stream")
        return mapped_file(spool)
