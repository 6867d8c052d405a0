"""The one place that talks to GitHub.

PyGithub gives the object model (pull requests, files, workflow runs, jobs with steps); its objects
become model values at once. httpx downloads job logs: the logs endpoint answers 302 with a
short-lived URL on another host, which is fetched without our Authorization header.

Conventions (docs.github.com/en/rest): API version header 2022-11-28, `per_page=100`, the API base
from GITHUB_API_URL so GitHub Enterprise works. A `recorder` callback, when given, receives every
payload exactly as GitHub sent it (`ci-triage record` saves them as a replayable case).
"""

from __future__ import annotations

import contextlib
import mmap
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ci_triage.core.github.convert import (
    changed_file_from_payload,
    job_from_payload,
    pull_from_payload,
    run_from_payload,
)
from ci_triage.core.github.protocol import API_VERSION, PER_PAGE, USER_AGENT
from ci_triage.errors import (
    Forbidden,
    GitHubError,
    NotFound,
    RateLimited,
    Unauthorized,
    Unavailable,
)
from ci_triage.model import ChangedFile, Job, LogStatus, PullRequest, Run

if TYPE_CHECKING:
    import httpx
    from github import Github

Recorder = Callable[[str, Any], None]


@dataclass(frozen=True)
class Connection:
    api_url: str
    token: str | None
    timeout_s: float = 30.0
    retries: int = 3
    backoff_s: float = 0.5

    def __repr__(self) -> str:  # never show the token
        return f"Connection(api_url={self.api_url!r}, token={'***' if self.token else None})"


def _raw(obj: Any) -> dict[str, Any]:
    # PyGithub keeps the payload as received; `raw_data` would first re-fetch an object that came
    # from a list, costing a request per item.
    return obj._rawData


class GitHubClient:
    """Read access to one GitHub API (github.com, an Enterprise server, or the local fake)."""

    def __init__(
        self,
        connection: Connection,
        recorder: Recorder | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.connection = connection
        self.recorder = recorder
        self._sleep = sleep
        self._github: Github | None = None
        self._http: httpx.Client | None = None

    # --- plumbing -----------------------------------------------------------------------------
    @property
    def github(self) -> Github:
        if self._github is None:
            from github import Auth, Github, GithubRetry

            auth = Auth.Token(self.connection.token) if self.connection.token else None
            self._github = Github(
                auth=auth,
                base_url=self.connection.api_url.rstrip("/"),
                per_page=PER_PAGE,
                timeout=int(self.connection.timeout_s),
                user_agent=USER_AGENT,
                api_version=API_VERSION,
                retry=GithubRetry(
                    total=self.connection.retries,
                    backoff_factor=self.connection.backoff_s,
                    status_forcelist=[500, 502, 503, 504],
                    secondary_rate_wait=60,
                ),
                # Reads go out one at a time already; GitHub asks only that writes be spaced.
                seconds_between_requests=None,
                seconds_between_writes=1.0,
            )
        return self._github

    @property
    def http(self) -> httpx.Client:
        if self._http is None:
            import httpx

            self._http = httpx.Client(
                timeout=self.connection.timeout_s,
                follow_redirects=False,
                headers={"User-Agent": USER_AGENT},
            )
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        if self._github is not None:
            self._github.close()

    def _record(self, kind: str, payload: Any) -> None:
        if self.recorder is not None:
            self.recorder(kind, payload)

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        """PyGithub's and requests' exceptions -> our typed errors, with GitHub's message kept."""
        import requests
        from github import (
            BadCredentialsException,
            GithubException,
            RateLimitExceededException,
            UnknownObjectException,
        )

        try:
            yield
        except UnknownObjectException:
            raise NotFound(f"{what}: not found", hint="Check the repository and number, and that the token can see it.",
                           status=404) from None
        except BadCredentialsException:
            raise Unauthorized(f"{what}: GitHub rejected the token (401 Bad credentials)",
                               hint="Check GITHUB_TOKEN / GH_TOKEN.", status=401) from None
        except RateLimitExceededException as exc:
            reset = (exc.headers or {}).get("x-ratelimit-reset")
            reset_at = datetime.fromtimestamp(int(reset), UTC) if reset else None
            raise RateLimited(f"{what}: rate limit exceeded", reset_at=reset_at, status=exc.status) from None
        except GithubException as exc:
            message = (exc.data or {}).get("message") if isinstance(exc.data, dict) else None
            if exc.status == 403:
                raise Forbidden(f"{what}: forbidden ({message or exc.status})", status=403) from None
            if exc.status and exc.status >= 500:
                raise Unavailable(f"{what}: GitHub answered {exc.status}", status=exc.status) from None
            raise GitHubError(f"{what}: GitHub answered {exc.status} ({message or 'no message'})",
                              status=exc.status) from None
        except requests.exceptions.RequestException as exc:
            raise Unavailable(
                f"{what}: cannot reach the GitHub API at {self.connection.api_url} ({type(exc).__name__})",
                hint="Check the network and GITHUB_API_URL.",
            ) from None

    # --- reads --------------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        return f"{self.connection.api_url.rstrip('/')}{path}"

    def _repo(self, repo: str) -> Any:
        """A repository object that only holds its URL: methods on it fetch what they need."""
        from github.Repository import Repository

        # completed=False: no request to complete it; PyGithub's lazy mode would instead make every
        # object fetched through it lazy too (a pull request with nothing but its URL).
        return Repository(self.github.requester, url=self._url(f"/repos/{repo}"), completed=False)

    def check_repository(self, repo: str) -> dict[str, Any]:
        with self._translate(f"repository {repo}"):
            payload = _raw(self.github.get_repo(repo))
        self._record("repository", payload)
        return payload

    def pull(self, repo: str, number: int) -> PullRequest:
        with self._translate(f"pull request #{number} in {repo}"):
            payload = _raw(self._repo(repo).get_pull(number))
        self._record("pull", payload)
        return pull_from_payload(payload)

    def pull_files(self, repo: str, number: int) -> list[ChangedFile]:
        with self._translate(f"files of pull request #{number} in {repo}"):
            payloads = [_raw(f) for f in self._pull_lazy(repo, number).get_files()]
        self._record("pull_files", {"number": number, "files": payloads})
        return [changed_file_from_payload(p) for p in payloads]

    def _pull_lazy(self, repo: str, number: int) -> Any:
        from github.PullRequest import PullRequest as GhPull

        return GhPull(self.github.requester, url=self._url(f"/repos/{repo}/pulls/{number}"), completed=False)

    def pulls(self, repo: str, state: str = "all", limit: int = PER_PAGE) -> list[dict[str, Any]]:
        """Recently updated pull requests (simple payloads), to name the PR of a fork's run by head SHA."""
        with self._translate(f"pull requests of {repo}"):
            found = []
            for pull in self._repo(repo).get_pulls(state=state, sort="updated", direction="desc"):
                found.append(_raw(pull))
                if len(found) >= limit:
                    break
        self._record("pulls", found)
        return found

    def runs(self, repo: str, *, workflow_id: int | None = None, limit: int | None = None,
             **filters: str) -> list[Run]:
        """Workflow runs, newest first, filtered as GitHub filters them (head_sha, created, status...)."""
        with self._translate(f"workflow runs of {repo}"):
            if workflow_id is not None:
                listing = self._workflow_lazy(repo, workflow_id).get_runs(**filters)
            else:
                listing = self._repo(repo).get_workflow_runs(**filters)
            payloads = []
            for run in listing:
                payloads.append(_raw(run))
                if limit is not None and len(payloads) >= limit:
                    break
        for payload in payloads:
            self._record("run", payload)
        return [run_from_payload(p) for p in payloads]

    def _workflow_lazy(self, repo: str, workflow_id: int) -> Any:
        from github.Workflow import Workflow

        url = self._url(f"/repos/{repo}/actions/workflows/{workflow_id}")
        return Workflow(self.github.requester, url=url, completed=False)

    def workflows(self, repo: str) -> list[dict[str, Any]]:
        """Every workflow of a repository, as payloads (a recorded case needs them for workflow filters)."""
        with self._translate(f"workflows of {repo}"):
            payloads = [_raw(w) for w in self._repo(repo).get_workflows()]
        for payload in payloads:
            self._record("workflow", payload)
        return payloads

    def jobs(self, repo: str, run_id: int, attempt: int) -> list[Job]:
        """All jobs of one attempt of a run, with steps, runner and labels."""
        from github.PaginatedList import PaginatedList
        from github.WorkflowJob import WorkflowJob

        url = self._url(f"/repos/{repo}/actions/runs/{run_id}/attempts/{attempt}/jobs")
        with self._translate(f"jobs of run {run_id} attempt {attempt}"):
            listing = PaginatedList(WorkflowJob, self.github.requester, url, None, list_item="jobs")
            payloads = [_raw(job) for job in listing]
        for payload in payloads:
            self._record("job", payload)
        return [job_from_payload(p) for p in payloads]

    def file_text(self, repo: str, path: str, ref: str | None = None) -> str | None:
        """A file of the repository at `ref` (default branch when None), or None when there is none."""
        from github import UnknownObjectException

        with self._translate(f"{path} in {repo}"):
            try:
                content = self._repo(repo).get_contents(path, **({"ref": ref} if ref else {}))
            except UnknownObjectException:
                return None
            if isinstance(content, list):  # a directory
                return None
            text = content.decoded_content.decode("utf-8", errors="replace")
        self._record("file", {"path": path, "text": text})
        return text

    def annotations(self, repo: str, job_id: int) -> list[dict[str, Any]]:
        """Annotations of a job's check run (a job's id is its check run's id)."""
        from github.CheckRunAnnotation import CheckRunAnnotation
        from github.PaginatedList import PaginatedList

        url = self._url(f"/repos/{repo}/check-runs/{job_id}/annotations")
        with self._translate(f"annotations of job {job_id}"):
            payloads = [_raw(a) for a in PaginatedList(CheckRunAnnotation, self.github.requester, url, None)]
        self._record("annotations", {"job_id": job_id, "annotations": payloads})
        return payloads

    def log(self, repo: str, job_id: int) -> tuple[LogStatus, bytes | mmap.mmap | None]:
        """A job's log, as the bytes GitHub sent (streamed to a temporary file, and mapped when
        large, so a 1 GB log costs bounded memory). Missing evidence is a status, not an exception."""
        import httpx

        url = self._url(f"/repos/{repo}/actions/jobs/{job_id}/logs")
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        if self.connection.token:
            headers["Authorization"] = f"Bearer {self.connection.token}"
        for attempt in range(self.connection.retries + 1):
            try:
                response = self.http.get(url, headers=headers)
                if response.status_code in (301, 302, 303, 307, 308):
                    # The log host is not GitHub's API: the token must not travel there.
                    data = self._download(response.headers["Location"])
                    if isinstance(data, int):
                        response = httpx.Response(data)
                    else:
                        return LogStatus.AVAILABLE, self._recorded_log(job_id, data)
                if response.status_code == 200:
                    return LogStatus.AVAILABLE, self._recorded_log(job_id, response.content)
                if response.status_code in (404, 410):
                    return LogStatus.EXPIRED, None
                if response.status_code in (401,):
                    raise Unauthorized("downloading a job log: GitHub rejected the token", status=401)
                if response.status_code < 500 and response.status_code not in (403, 429):
                    return LogStatus.UNREADABLE, None
            except httpx.TransportError:
                pass
            if attempt < self.connection.retries:
                self._sleep(self.connection.backoff_s * (2**attempt) * (1 + random.random()))
        return LogStatus.UNREADABLE, None

    def _download(self, location: str) -> bytes | mmap.mmap | int:
        """The body of a 200 from the log host, streamed to a temporary file; else the status."""
        from ci_triage.store import mapped_file

        with self.http.stream("GET", location) as response:
            if response.status_code != 200:
                return response.status_code
            with tempfile.TemporaryFile(prefix="ci-triage-log-") as spool:
                for piece in response.iter_bytes(1 << 20):
                    spool.write(piece)
                return mapped_file(spool)

    def _recorded_log(self, job_id: int, data: bytes | mmap.mmap) -> bytes | mmap.mmap:
        if self.recorder is not None:  # a case file holds the log as text
            self._record("log", {"job_id": job_id, "text": data[:].decode("utf-8", errors="replace")})
        return data
