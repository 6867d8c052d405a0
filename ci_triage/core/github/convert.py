"""GitHub's REST payloads -> model values. Pure: the client, the webhook parser and the actor share it.

Field names and optionality follow GitHub's OpenAPI description (`@octokit/openapi`, schemas
`pull-request`, `workflow-run`, `job`, `diff-entry`): a deleted user is `null`, a fork's
`head.repo` can be `null`, and a job that never started has no `started_at` in some payloads.
"""

from __future__ import annotations

from typing import Any

from ci_triage.core.timefmt import parse_iso
from ci_triage.model import ChangedFile, Job, PullRequest, Run, Step


def pull_from_payload(data: dict[str, Any]) -> PullRequest:
    head_repo = data["head"].get("repo")
    return PullRequest(
        number=data["number"],
        title=data["title"],
        state=data["state"],
        author=(data.get("user") or {}).get("login", "ghost"),
        head_sha=data["head"]["sha"],
        head_ref=data["head"]["ref"],
        head_repo=head_repo["full_name"] if head_repo else None,
        base_repo=data["base"]["repo"]["full_name"],
        base_ref=data["base"]["ref"],
        base_sha=data["base"]["sha"],
        html_url=data["html_url"],
        changed_files_count=data.get("changed_files"),
    )


def into_repository(pull: Any, repository: Any) -> bool:
    """Whether a run's `pull_requests` entry is a PR into `repository` (the payload's repository object).

    GitHub lists every open PR whose head matches the run's, in any repository (a fork's own PRs, an
    upstream's): their numbers mean nothing here. An entry or a run that does not say is kept."""
    base = pull.get("base") if isinstance(pull, dict) else None
    base_repo = base.get("repo") if isinstance(base, dict) else None
    if not isinstance(base_repo, dict) or not isinstance(repository, dict):
        return True
    if base_repo.get("id") is not None and repository.get("id") is not None:
        return base_repo["id"] == repository["id"]
    return base_repo.get("url") is None or base_repo.get("url") == repository.get("url")


def run_from_payload(data: dict[str, Any], workflow_names: dict[int, str] | None = None) -> Run:
    head_repo = data.get("head_repository")
    return Run(
        id=data["id"],
        attempt=data.get("run_attempt") or 1,
        workflow_id=data["workflow_id"],
        workflow_name=data.get("name") or (workflow_names or {}).get(data["workflow_id"], ""),
        workflow_path=data.get("path") or "",
        event=data["event"],
        status=data["status"],
        conclusion=data.get("conclusion"),
        head_sha=data["head_sha"],
        head_branch=data.get("head_branch"),
        head_repo=head_repo["full_name"] if head_repo else None,
        pr_numbers=tuple(p["number"] for p in data.get("pull_requests") or ()
                         if into_repository(p, data.get("repository"))),
        created_at=parse_iso(data["created_at"]),
        updated_at=parse_iso(data["updated_at"]),
        html_url=data["html_url"],
    )


def job_from_payload(data: dict[str, Any]) -> Job:
    steps = tuple(
        Step(
            number=s["number"],
            name=s["name"],
            status=s["status"],
            conclusion=s.get("conclusion"),
            started_at=parse_iso(s.get("started_at")),
            completed_at=parse_iso(s.get("completed_at")),
        )
        for s in data.get("steps") or ()
    )
    return Job(
        id=data["id"],
        run_id=data["run_id"],
        run_attempt=data.get("run_attempt") or 1,
        workflow_name=data.get("workflow_name") or "",
        name=data["name"],
        status=data["status"],
        conclusion=data.get("conclusion"),
        created_at=parse_iso(data.get("created_at") or data["started_at"]),
        started_at=parse_iso(data.get("started_at")),
        completed_at=parse_iso(data.get("completed_at")),
        runner_name=data.get("runner_name"),
        runner_group_name=data.get("runner_group_name"),
        labels=tuple(data.get("labels") or ()),
        head_sha=data["head_sha"],
        head_branch=data.get("head_branch"),
        html_url=data.get("html_url") or "",
        steps=steps,
    )


def changed_file_from_payload(data: dict[str, Any]) -> ChangedFile:
    return ChangedFile(
        filename=data["filename"],
        status=data["status"],
        additions=data.get("additions", 0),
        deletions=data.get("deletions", 0),
        previous_filename=data.get("previous_filename"),
    )
