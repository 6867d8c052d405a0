"""Build payloads shaped exactly like GitHub's REST API (version 2022-11-28) from a few facts.

The demo scenario and the tests' own scenarios are written with these, so every object the local
fake serves carries the fields GitHub's OpenAPI description requires (checked by the test suite
against the vendored subset of @octokit/openapi in tests/github_schemas/). URLs use api.github.com
and github.com; the fake rewrites them to its own address when serving.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import datetime
from typing import Any

API = "https://api.github.com"
WEB = "https://github.com"


def ts(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def node_id(kind: str, number: int) -> str:
    return base64.b64encode(f"{kind}:{number}".encode()).decode().rstrip("=")


def sha_of(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def user(login: str, user_id: int, kind: str = "User") -> dict[str, Any]:
    base = f"{API}/users/{login}"
    return {
        "login": login,
        "id": user_id,
        "node_id": node_id("U", user_id),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        "gravatar_id": "",
        "url": base,
        "html_url": f"{WEB}/{login}",
        "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}",
        "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs",
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events",
        "type": kind,
        "user_view_type": "public",
        "site_admin": False,
    }


def repository(full_name: str, repo_id: int, owner: dict[str, Any], *, fork: bool = False,
               created: datetime, pushed: datetime, description: str | None = None,
               language: str | None = "Python") -> dict[str, Any]:
    """A full repository object (GET /repos/{owner}/{repo}); also valid where a smaller one is expected."""
    name = full_name.split("/", 1)[1]
    base = f"{API}/repos/{full_name}"
    return {
        "id": repo_id,
        "node_id": node_id("R", repo_id),
        "name": name,
        "full_name": full_name,
        "private": False,
        "owner": owner,
        "html_url": f"{WEB}/{full_name}",
        "description": description,
        "fork": fork,
        "url": base,
        "forks_url": f"{base}/forks",
        "keys_url": f"{base}/keys{{/key_id}}",
        "collaborators_url": f"{base}/collaborators{{/collaborator}}",
        "teams_url": f"{base}/teams",
        "hooks_url": f"{base}/hooks",
        "issue_events_url": f"{base}/issues/events{{/number}}",
        "events_url": f"{base}/events",
        "assignees_url": f"{base}/assignees{{/user}}",
        "branches_url": f"{base}/branches{{/branch}}",
        "tags_url": f"{base}/tags",
        "blobs_url": f"{base}/git/blobs{{/sha}}",
        "git_tags_url": f"{base}/git/tags{{/sha}}",
        "git_refs_url": f"{base}/git/refs{{/sha}}",
        "trees_url": f"{base}/git/trees{{/sha}}",
        "statuses_url": f"{base}/statuses/{{sha}}",
        "languages_url": f"{base}/languages",
        "stargazers_url": f"{base}/stargazers",
        "contributors_url": f"{base}/contributors",
        "subscribers_url": f"{base}/subscribers",
        "subscription_url": f"{base}/subscription",
        "commits_url": f"{base}/commits{{/sha}}",
        "git_commits_url": f"{base}/git/commits{{/sha}}",
        "comments_url": f"{base}/comments{{/number}}",
        "issue_comment_url": f"{base}/issues/comments{{/number}}",
        "contents_url": f"{base}/contents/{{+path}}",
        "compare_url": f"{base}/compare/{{base}}...{{head}}",
        "merges_url": f"{base}/merges",
        "archive_url": f"{base}/{{archive_format}}{{/ref}}",
        "downloads_url": f"{base}/downloads",
        "issues_url": f"{base}/issues{{/number}}",
        "pulls_url": f"{base}/pulls{{/number}}",
        "milestones_url": f"{base}/milestones{{/number}}",
        "notifications_url": f"{base}/notifications{{?since,all,participating}}",
        "labels_url": f"{base}/labels{{/name}}",
        "releases_url": f"{base}/releases{{/id}}",
        "deployments_url": f"{base}/deployments",
        "created_at": ts(created),
        "updated_at": ts(pushed),
        "pushed_at": ts(pushed),
        "git_url": f"git://github.com/{full_name}.git",
        "ssh_url": f"git@github.com:{full_name}.git",
        "clone_url": f"{WEB}/{full_name}.git",
        "svn_url": f"{WEB}/{full_name}",
        "homepage": None,
        "size": 4096,
        "stargazers_count": 0,
        "watchers_count": 0,
        "language": language,
        "has_issues": not fork,
        "has_projects": True,
        "has_downloads": True,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 0,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 0,
        "license": {
            "key": "apache-2.0",
            "name": "Apache License 2.0",
            "spdx_id": "Apache-2.0",
            "url": f"{API}/licenses/apache-2.0",
            "node_id": "MDc6TGljZW5zZTI=",
        },
        "allow_forking": True,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": [],
        "visibility": "public",
        "forks": 0,
        "open_issues": 0,
        "watchers": 0,
        "default_branch": "main",
        "network_count": 0,
        "subscribers_count": 0,
    }


def pull_request(base_repo: dict[str, Any], number: int, pr_id: int, *, title: str, author: dict[str, Any],
                 head_repo: dict[str, Any], head_ref: str, head_sha: str, base_sha: str,
                 created: datetime, updated: datetime, body: str | None = None,
                 additions: int = 0, deletions: int = 0, changed_files: int = 0) -> dict[str, Any]:
    """A full pull request object (GET /repos/{owner}/{repo}/pulls/{number})."""
    full_name = base_repo["full_name"]
    base = f"{API}/repos/{full_name}"
    url = f"{base}/pulls/{number}"
    html = f"{WEB}/{full_name}/pull/{number}"

    def side(repo: dict[str, Any], ref: str, sha: str) -> dict[str, Any]:
        return {"label": f"{repo['owner']['login']}:{ref}", "ref": ref, "sha": sha,
                "user": repo["owner"], "repo": embedded_repository(repo)}

    return {
        "url": url,
        "id": pr_id,
        "node_id": node_id("PR", pr_id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": f"{base}/issues/{number}",
        "number": number,
        "state": "open",
        "locked": False,
        "title": title,
        "user": author,
        "body": body,
        "created_at": ts(created),
        "updated_at": ts(updated),
        "closed_at": None,
        "merged_at": None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "labels": [],
        "milestone": None,
        "draft": False,
        "commits_url": f"{url}/commits",
        "review_comments_url": f"{url}/comments",
        "review_comment_url": f"{base}/pulls/comments{{/number}}",
        "comments_url": f"{base}/issues/{number}/comments",
        "statuses_url": f"{base}/statuses/{head_sha}",
        "head": side(head_repo, head_ref, head_sha),
        "base": side(base_repo, "main", base_sha),
        "_links": {
            "self": {"href": url},
            "html": {"href": html},
            "issue": {"href": f"{base}/issues/{number}"},
            "comments": {"href": f"{base}/issues/{number}/comments"},
            "review_comments": {"href": f"{url}/comments"},
            "review_comment": {"href": f"{base}/pulls/comments{{/number}}"},
            "commits": {"href": f"{url}/commits"},
            "statuses": {"href": f"{base}/statuses/{head_sha}"},
        },
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "active_lock_reason": None,
        "merged": False,
        "mergeable": True,
        "rebaseable": True,
        "mergeable_state": "unstable",
        "merged_by": None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": True,
        "commits": 1,
        "additions": additions,
        "deletions": deletions,
        "changed_files": changed_files,
    }


def changed_file(repo_full_name: str, head_sha: str, filename: str, *, additions: int, deletions: int,
                 status: str = "modified") -> dict[str, Any]:
    """One entry of GET /repos/{owner}/{repo}/pulls/{number}/files."""
    return {
        "sha": sha_of(f"{head_sha}:{filename}"),
        "filename": filename,
        "status": status,
        "additions": additions,
        "deletions": deletions,
        "changes": additions + deletions,
        "blob_url": f"{WEB}/{repo_full_name}/blob/{head_sha}/{filename}",
        "raw_url": f"{WEB}/{repo_full_name}/raw/{head_sha}/{filename}",
        "contents_url": f"{API}/repos/{repo_full_name}/contents/{filename}?ref={head_sha}",
        "patch": f"@@ -1,{deletions} +1,{additions} @@",
    }


def workflow(repo_full_name: str, workflow_id: int, name: str, path: str, created: datetime) -> dict[str, Any]:
    return {
        "id": workflow_id,
        "node_id": node_id("W", workflow_id),
        "name": name,
        "path": path,
        "state": "active",
        "created_at": ts(created),
        "updated_at": ts(created),
        "url": f"{API}/repos/{repo_full_name}/actions/workflows/{workflow_id}",
        "html_url": f"{WEB}/{repo_full_name}/blob/main/{path}",
        "badge_url": f"{WEB}/{repo_full_name}/workflows/{name}/badge.svg",
    }


# Counters that only GET /repos/{owner}/{repo} computes; a repository nested in another object (a pull
# request's head/base, GitHub's "Repository" schema) does not carry them.
_FULL_REPOSITORY_ONLY = ("network_count", "subscribers_count")


def embedded_repository(full: dict[str, Any]) -> dict[str, Any]:
    """The repository object a pull request's `head.repo` / `base.repo` holds."""
    return {k: v for k, v in full.items() if k not in _FULL_REPOSITORY_ONLY}


def minimal_repository(full: dict[str, Any]) -> dict[str, Any]:
    """The cut-down repository object ("Minimal Repository") that workflow runs embed.

    Its required keys are the identity fields, `url` and every `*_url` template; `url` does not end
    in "_url", so it is named explicitly (GitHub's schema requires it).
    """
    identity = ("id", "node_id", "name", "full_name", "private", "owner", "description", "fork", "url")
    return {k: v for k, v in full.items() if k.endswith("_url") or k in identity}


def workflow_run(repo: dict[str, Any], wf: dict[str, Any], run_id: int, *, run_number: int, attempt: int,
                 event: str, head_branch: str, head_sha: str, head_repo: dict[str, Any],
                 pulls: list[dict[str, Any]], actor: dict[str, Any], title: str,
                 status: str, conclusion: str | None, created: datetime, started: datetime,
                 updated: datetime) -> dict[str, Any]:
    """A workflow run object (one attempt). `pulls` are full PR payloads; pass [] for fork PRs:
    GitHub leaves `pull_requests` empty when the head is in another repository."""
    full_name = repo["full_name"]
    base = f"{API}/repos/{full_name}/actions/runs/{run_id}"
    minimal_pulls = [
        {
            "url": p["url"], "id": p["id"], "number": p["number"],
            "head": {"ref": p["head"]["ref"], "sha": p["head"]["sha"],
                     "repo": {"id": repo["id"], "url": repo["url"], "name": repo["name"]}},
            "base": {"ref": p["base"]["ref"], "sha": p["base"]["sha"],
                     "repo": {"id": repo["id"], "url": repo["url"], "name": repo["name"]}},
        }
        for p in pulls
    ]
    return {
        "id": run_id,
        "name": wf["name"],
        "node_id": node_id("WFR", run_id),
        "head_branch": head_branch,
        "head_sha": head_sha,
        "path": wf["path"],
        "display_title": title,
        "run_number": run_number,
        "event": event,
        "status": status,
        "conclusion": conclusion,
        "workflow_id": wf["id"],
        "check_suite_id": run_id * 10 + attempt,
        "check_suite_node_id": node_id("CS", run_id * 10 + attempt),
        "url": base,
        "html_url": f"{WEB}/{full_name}/actions/runs/{run_id}",
        "pull_requests": minimal_pulls,
        "created_at": ts(created),
        "updated_at": ts(updated),
        "actor": actor,
        "triggering_actor": actor,
        "run_attempt": attempt,
        "referenced_workflows": [],
        "run_started_at": ts(started),
        "jobs_url": f"{base}/jobs",
        "logs_url": f"{base}/logs",
        "check_suite_url": f"{API}/repos/{full_name}/check-suites/{run_id * 10 + attempt}",
        "artifacts_url": f"{base}/artifacts",
        "cancel_url": f"{base}/cancel",
        "rerun_url": f"{base}/rerun",
        "previous_attempt_url": f"{base}/attempts/{attempt - 1}" if attempt > 1 else None,
        "workflow_url": wf["url"],
        "head_commit": {
            "id": head_sha,
            "tree_id": sha_of(f"tree:{head_sha}"),
            "message": title,
            "timestamp": ts(created),
            "author": {"name": actor["login"], "email": f"{actor['login']}@users.noreply.github.com"},
            "committer": {"name": "GitHub", "email": "noreply@github.com"},
        },
        "repository": minimal_repository(repo),
        "head_repository": minimal_repository(head_repo),
    }


def job(run: dict[str, Any], job_id: int, *, name: str, status: str, conclusion: str | None,
        created: datetime, started: datetime, completed: datetime | None, labels: list[str],
        runner_id: int | None, runner_name: str | None, runner_group: str | None,
        steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A workflow job object with its steps (GET .../actions/runs/{id}/attempts/{n}/jobs)."""
    full_name = run["repository"]["full_name"]
    return {
        "id": job_id,
        "run_id": run["id"],
        "workflow_name": run["name"],
        "head_branch": run["head_branch"],
        "run_url": run["url"],
        "run_attempt": run["run_attempt"],
        "node_id": node_id("CR", job_id),
        "head_sha": run["head_sha"],
        "url": f"{API}/repos/{full_name}/actions/jobs/{job_id}",
        "html_url": f"{WEB}/{full_name}/actions/runs/{run['id']}/job/{job_id}",
        "status": status,
        "conclusion": conclusion,
        "created_at": ts(created),
        "started_at": ts(started),
        "completed_at": ts(completed),
        "name": name,
        "steps": steps,
        "check_run_url": f"{API}/repos/{full_name}/check-runs/{job_id}",
        "labels": labels,
        "runner_id": runner_id,
        "runner_name": runner_name,
        "runner_group_id": 1 if runner_group else None,
        "runner_group_name": runner_group,
    }


def step(number: int, name: str, started: datetime, completed: datetime, conclusion: str | None,
         status: str = "completed") -> dict[str, Any]:
    return {"name": name, "status": status, "conclusion": conclusion, "number": number,
            "started_at": ts(started), "completed_at": ts(completed)}


def annotation(repo_full_name: str, head_sha: str, message: str, level: str = "failure", title: str = "",
               path: str = ".github") -> dict[str, Any]:
    """A check run annotation as the runner writes them for a job (GET .../check-runs/{id}/annotations)."""
    return {
        "path": path,
        "blob_href": f"{WEB}/{repo_full_name}/blob/{head_sha}/{path}",
        "start_line": 1,
        "end_line": 1,
        "start_column": None,
        "end_column": None,
        "annotation_level": level,
        "title": title,
        "message": message,
        "raw_details": "",
    }


def content_file(repo_full_name: str, path: str, text: str, ref: str = "main") -> dict[str, Any]:
    """A file as GET /repos/{owner}/{repo}/contents/{path} returns it (base64, wrapped at 60 columns)."""
    raw = text.encode()
    encoded = base64.b64encode(raw).decode()
    wrapped = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)) + "\n"
    blob_sha = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()
    url = f"{API}/repos/{repo_full_name}/contents/{path}?ref={ref}"
    html = f"{WEB}/{repo_full_name}/blob/{ref}/{path}"
    git = f"{API}/repos/{repo_full_name}/git/blobs/{blob_sha}"
    return {
        "type": "file",
        "encoding": "base64",
        "size": len(raw),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": wrapped,
        "sha": blob_sha,
        "url": url,
        "git_url": git,
        "html_url": html,
        "download_url": f"https://raw.githubusercontent.com/{repo_full_name}/{ref}/{path}",
        "_links": {"self": url, "git": git, "html": html},
    }


# --- issue comments, reactions, permissions (the write side) ---------------------------------------

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
# The user behind a workflow's GITHUB_TOKEN; its comments are shown as "github-actions[bot]".
ACTIONS_BOT = ("github-actions[bot]", 41898282)
# Repository roles, finest first, and the coarse `permission` each shows as: the permission endpoint's
# `permission` field only knows admin/write/read/none; `role_name` keeps the role.
ROLE_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read",
                   "none": "none"}


def bot_user(login: str = ACTIONS_BOT[0], user_id: int = ACTIONS_BOT[1]) -> dict[str, Any]:
    return user(login, user_id, kind="Bot")


def reaction_rollup(comment_url: str, counts: dict[str, int] | None = None) -> dict[str, Any]:
    """The `reactions` summary GitHub embeds in an issue comment."""
    counts = counts or {}
    rollup: dict[str, Any] = {"url": f"{comment_url}/reactions", "total_count": sum(counts.values())}
    rollup.update({content: counts.get(content, 0) for content in REACTIONS})
    return rollup


def issue_comment(repo_full_name: str, issue_number: int, comment_id: int, body: str, author: dict[str, Any],
                  created: datetime, updated: datetime | None = None, *, is_pull: bool = True,
                  author_association: str = "NONE", reactions: dict[str, int] | None = None) -> dict[str, Any]:
    """An issue (or pull request conversation) comment: GET/POST .../issues/{n}/comments,
    PATCH .../issues/comments/{id}. A PR's comment links to /pull/{n} on the web, an issue's to /issues/{n}."""
    url = f"{API}/repos/{repo_full_name}/issues/comments/{comment_id}"
    page = "pull" if is_pull else "issues"
    return {
        "id": comment_id,
        "node_id": node_id("IC", comment_id),
        "url": url,
        "html_url": f"{WEB}/{repo_full_name}/{page}/{issue_number}#issuecomment-{comment_id}",
        "body": body,
        "user": author,
        "created_at": ts(created),
        "updated_at": ts(updated or created),
        "issue_url": f"{API}/repos/{repo_full_name}/issues/{issue_number}",
        "author_association": author_association,
        "performed_via_github_app": None,
        "reactions": reaction_rollup(url, reactions),
    }


def reaction(reaction_id: int, content: str, author: dict[str, Any], created: datetime) -> dict[str, Any]:
    """A reaction (POST .../issues/comments/{id}/reactions)."""
    return {
        "id": reaction_id,
        "node_id": node_id("REA", reaction_id),
        "user": author,
        "content": content,
        "created_at": ts(created),
    }


def collaborator_permission(collaborator: dict[str, Any], role: str) -> dict[str, Any]:
    """GET .../collaborators/{username}/permission for a user with repository role `role`
    (admin, maintain, write, triage, read, or none)."""
    permission = ROLE_PERMISSION.get(role, "none")
    flags = {
        "admin": role == "admin",
        "maintain": role in ("admin", "maintain"),
        "push": permission in ("admin", "write"),
        "triage": role in ("admin", "maintain", "write", "triage"),
        "pull": role != "none",
    }
    return {
        "permission": permission,
        "role_name": role,
        "user": {**collaborator, "permissions": flags, "role_name": role},
    }
