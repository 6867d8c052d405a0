"""Collect GitHub's payloads while a report runs, and save them as a replayable case file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ci_triage import __version__
from ci_triage.github.case import (
    CASE_FORMAT,
    CASE_VERSION,
    dump_case,
    normalise_urls,
    validate_case,
)


def _web_url(api_url: str) -> str:
    """github.com for api.github.com; the host root for GitHub Enterprise's https://HOST/api/v3."""
    if api_url.rstrip("/") == "https://api.github.com":
        return "https://github.com"
    return api_url.rstrip("/").removesuffix("/api/v3")


class CaseRecorder:
    """A GitHubClient recorder: keeps the last payload of each object, keyed as the fake looks it up."""

    def __init__(self) -> None:
        self.repository: dict[str, Any] | None = None
        self.pulls: dict[int, dict[str, Any]] = {}
        self.pull_files: dict[int, list[dict[str, Any]]] = {}
        self.workflows: dict[int, dict[str, Any]] = {}
        self.runs: dict[tuple[int, int], dict[str, Any]] = {}
        self.jobs: dict[int, dict[str, Any]] = {}
        self.logs: dict[int, str] = {}
        self.annotations: dict[int, list[dict[str, Any]]] = {}
        self.files: dict[str, str] = {}

    def __call__(self, kind: str, payload: Any) -> None:
        if kind == "repository":
            self.repository = payload
        elif kind == "pull":
            self.pulls[payload["number"]] = payload
        elif kind == "pulls":
            for pull in payload:
                # A listed (simple) pull request never replaces a full one.
                self.pulls.setdefault(pull["number"], pull)
        elif kind == "pull_files":
            self.pull_files[payload["number"]] = payload["files"]
        elif kind == "workflow":
            self.workflows[payload["id"]] = payload
        elif kind == "run":
            self.runs[(payload["id"], payload.get("run_attempt") or 1)] = payload
        elif kind == "job":
            self.jobs[payload["id"]] = payload
        elif kind == "file":
            self.files[payload["path"]] = payload["text"]
        elif kind == "annotations":
            self.annotations[payload["job_id"]] = payload["annotations"]
        elif kind == "log":
            self.logs[payload["job_id"]] = payload["text"]

    def case(self, api_url: str, repo: str, pr: int) -> dict[str, Any]:
        case = {
            "format": CASE_FORMAT,
            "version": CASE_VERSION,
            "source": {
                "kind": "recording",
                "description": f"Recorded by ci-triage {__version__} for {repo} PR #{pr}",
                "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "api_url": api_url,
                "repo": repo,
                "pr": pr,
            },
            "repository": self.repository,
            "pulls": list(self.pulls.values()),
            "pull_files": {str(number): files for number, files in self.pull_files.items()},
            "workflows": list(self.workflows.values()),
            "runs": list(self.runs.values()),
            "jobs": list(self.jobs.values()),
            "logs": {str(job_id): text for job_id, text in self.logs.items()},
            "annotations": {str(job_id): items for job_id, items in self.annotations.items()},
            "files": dict(self.files),
        }
        # Logs and files are text as written, not payloads: their URLs are not ours to rewrite.
        logs, files = case.pop("logs"), case.pop("files")
        case = normalise_urls(case, api_url, _web_url(api_url))
        case["logs"], case["files"] = logs, files
        return validate_case(case, "recorded case")

    def save(self, path: Path, api_url: str, repo: str, pr: int, force: bool = False) -> None:
        dump_case(self.case(api_url, repo, pr), path, overwrite=force)
