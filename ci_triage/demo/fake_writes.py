"""The fake GitHub's writes: reruns, issue comments and reactions, changing the fake's state as GitHub would.

Writes change the fake's state (never the case dict it was given), under a lock, as GitHub would:
- POST .../actions/jobs/{id}/rerun and .../actions/runs/{id}/rerun-failed-jobs start attempt n+1 of the
  run (status "queued", conclusion null, `previous_attempt_url` -> attempt n) and re-queue the rerun
  jobs under new ids; jobs not rerun are carried into the new attempt unchanged. They answer 201 `{}`;
  a run that is not completed gets 403 "This workflow is already running"; unknown ids 404.
- Issue comments: list (a bare array, Link-paginated), create (201 + Location), update (PATCH, 200),
  delete (204, no body; by its author, or anyone with write access);
  reactions to a comment (201, or 200 with the existing one when the same user already reacted so).
- GET .../collaborators/{username}/permission from the case's optional section
  `collaborators: {"login": "admin" | "maintain" | "write" | "triage" | "read"}`; the repository's
  owner is admin; anyone else has read on a public repository, none on a private one. The optional
  section `comments: {"<issue number>": [comment objects]}` seeds existing comments.
Comments and reactions are made by the request's identity: the user of a personal token the fake was
given (`users`), else `bot_login` (default github-actions[bot], GITHUB_TOKEN's user).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from ci_triage.demo import payloads
from ci_triage.demo.fake_http import Response, error, not_found
from ci_triage.github.case import API_BASE

# Conclusions "Re-run failed jobs" picks up (GitHub's UI: "Re-run failed jobs" includes cancelled ones).
RERUN_CONCLUSIONS = ("failure", "cancelled", "timed_out", "startup_failure")


def authenticated_user(simple: dict[str, Any], created: datetime) -> dict[str, Any]:
    """GET /user for a personal access token: the "private-user" object (the simple user plus the
    profile, counts and plan GitHub shows its own owner)."""
    return {**simple, "name": None, "company": None, "blog": "", "location": None, "email": None,
            "hireable": None, "bio": None, "twitter_username": None, "notification_email": None,
            "public_repos": 3, "public_gists": 0, "followers": 1, "following": 0,
            "created_at": payloads.ts(created), "updated_at": payloads.ts(created), "private_gists": 0, "total_private_repos": 0,
            "owned_private_repos": 0, "disk_usage": 1024, "collaborators": 0, "two_factor_authentication": True,
            "plan": {"name": "free", "space": 976562499, "collaborators": 0, "private_repos": 10000}}


class Writes:
    """Mixed into FakeGitHub: every write acts under its lock and raises its answer (a Response); and
    who each request acts as."""

    def _actor(self, headers: dict[str, str]) -> tuple[dict[str, Any], bool]:
        """Who a request acts as, and whether that is an installation (a bot) rather than a personal token."""
        given = headers.get("Authorization") or headers.get("authorization") or ""
        token = given.split(" ", 1)[-1] if given else None
        if token is not None and token in self.users:
            return self.users[token], False
        return self.bot, True

    def _authenticated_user(self, headers: dict[str, str]) -> dict[str, Any]:
        """GET /user: 401 without a token; 403 for an installation token, as GitHub answers (the endpoint
        is not enabled for GitHub Apps); the private-user object for a personal token."""
        if not (headers.get("Authorization") or headers.get("authorization")):
            raise Response(401, {"message": "Requires authentication", "documentation_url":
                                 "https://docs.github.com/rest/users/users#get-the-authenticated-user", "status": "401"})
        user, installation = self._actor(headers)
        if installation:
            raise Response(403, {"message": "Resource not accessible by integration", "documentation_url":
                                 "https://docs.github.com/rest/users/users#get-the-authenticated-user", "status": "403"})
        return authenticated_user(user, datetime(2020, 1, 1, tzinfo=UTC))

    def _graphql(self, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
        """POST /graphql, for the one query ci-triage sends, `{ viewer { login } }`: the token's user, which
        for an installation token is the App's bot (GitHub answers `<slug>[bot]` there, where GET /user is
        403). Any other query gets GraphQL's error shape (HTTP 200 with `errors`)."""
        if not (headers.get("Authorization") or headers.get("authorization")):
            raise Response(401, {"message": "This endpoint requires you to be authenticated.",
                                 "documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql",
                                 "status": "401"})
        try:
            query = json.loads(raw).get("query")
        except (ValueError, AttributeError):
            raise error(400, "Problems parsing JSON") from None
        if not isinstance(query, str) or "".join(query.split()) not in ("query{viewer{login}}", "{viewer{login}}"):
            return {"errors": [{"message": "This fake answers only { viewer { login } }"}]}
        return {"data": {"viewer": {"login": self._actor(headers)[0]["login"]}}}

    def _write(self, method: str, rest: str, raw: bytes, actor: dict[str, Any] | None = None) -> None:
        """Act on a write and raise its answer (_Response), as GitHub answers it."""
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise error(400, "Problems parsing JSON") from None
        actor = actor or self.bot
        if method == "DELETE" and (found := re.fullmatch(r"/issues/comments/(\d+)", rest)):
            self._delete_comment(int(found.group(1)), actor)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise error(400, "Problems parsing JSON")
        if method == "POST" and (found := re.fullmatch(r"/actions/jobs/(\d+)/rerun", rest)):
            job = self.index.jobs.get(int(found.group(1)))
            if job is None:
                raise not_found()
            self._rerun(job["run_id"], job)
        if method == "POST" and (found := re.fullmatch(r"/actions/runs/(\d+)/rerun-failed-jobs", rest)):
            self._rerun(int(found.group(1)), None)
        if method == "POST" and (found := re.fullmatch(r"/issues/(\d+)/comments", rest)):
            number = int(found.group(1))
            if not self._is_issue(number):
                raise not_found()
            text = self._body_text(body)
            comment_id, now = self._next_comment_id, self._now()
            self._next_comment_id += 1
            comment = payloads.issue_comment(self.index.full_name, number, comment_id, text, actor, now,
                                             is_pull=number in self.index.pulls)
            self.comments[comment_id], self.comment_issue[comment_id] = comment, number
            raise Response(201, comment, {"Location": comment["url"].replace(API_BASE, self.base_url)})
        if method == "PATCH" and (found := re.fullmatch(r"/issues/comments/(\d+)", rest)):
            comment_id = int(found.group(1))
            if comment_id not in self.comments:
                raise not_found()
            text = self._body_text(body)
            self.comments[comment_id] = {**self.comments[comment_id], "body": text, "updated_at": payloads.ts(self._now())}
            raise Response(200, self.comments[comment_id])
        if method == "POST" and (found := re.fullmatch(r"/issues/comments/(\d+)/reactions", rest)):
            self._react(int(found.group(1)), body.get("content"), actor)
        raise not_found()

    @staticmethod
    def _body_text(body: dict[str, Any]) -> str:
        text = body.get("body")
        if not isinstance(text, str):
            raise error(422, "Invalid request.\n\n\"body\" wasn't supplied.")
        return text

    def _delete_comment(self, comment_id: int, actor: dict[str, Any]) -> None:
        """DELETE .../issues/comments/{id}: 204 with no body; 404 when there is no such comment. Its author
        may delete it; someone else needs write access (an installation token here always has it)."""
        comment = self.comments.get(comment_id)
        if comment is None:
            raise not_found()
        author = (comment.get("user") or {}).get("login", "").lower()
        if author != actor["login"].lower() and actor["type"] != "Bot" and \
                self._permission(actor["login"])["permission"] not in ("admin", "write"):
            raise error(403, "Must have admin rights to Repository.")
        del self.comments[comment_id], self.comment_issue[comment_id]
        self.reactions.pop(comment_id, None)
        raise Response(204, None)

    def _react(self, comment_id: int, content: Any, actor: dict[str, Any] | None = None) -> None:
        actor = actor or self.bot
        if comment_id not in self.comments:
            raise not_found()
        if content not in payloads.REACTIONS:
            raise error(422, "Validation Failed", errors=[{"resource": "Reaction", "code": "invalid",
                                                           "field": "content"}])
        mine = self.reactions.setdefault(comment_id, [])
        for existing in mine:
            if existing["content"] == content and existing["user"]["login"] == actor["login"]:
                raise Response(200, existing)  # docs: "Reaction exists"
        created = payloads.reaction(self._next_reaction_id, content, actor, self._now())
        self._next_reaction_id += 1
        mine.append(created)
        counts: dict[str, int] = {}
        for one in mine:
            counts[one["content"]] = counts.get(one["content"], 0) + 1
        comment = self.comments[comment_id]
        self.comments[comment_id] = {**comment, "reactions": payloads.reaction_rollup(comment["url"], counts)}
        raise Response(201, created)

    def _rerun(self, run_id: int, job: dict[str, Any] | None) -> None:
        """Start the next attempt of a run, re-queuing `job` (by name) or, when None, its failed jobs."""
        attempts = self.index.attempts.get(run_id)
        if not attempts:
            raise not_found()
        number = max(attempts)
        latest = attempts[number]
        if latest["status"] != "completed":
            raise error(403, "This workflow is already running")
        current = self.index.jobs_by_attempt.get((run_id, number), [])
        if job is not None:
            again = {j["id"] for j in current if j["name"] == job["name"]} or {job["id"]}
        else:
            again = {j["id"] for j in current if j["conclusion"] in RERUN_CONCLUSIONS}
            if not again:
                raise error(403, "There are no failed jobs to re-run")
        now = payloads.ts(self._now())
        run = {**latest, "run_attempt": number + 1, "status": "queued", "conclusion": None, "updated_at": now,
               "run_started_at": now, "previous_attempt_url": f"{latest['url']}/attempts/{number}"}
        jobs = []
        source = current if job is None or job in current else [*current, job]
        for old in source:
            if old["id"] not in again:
                jobs.append(old)  # carried into the new attempt unchanged, as GitHub shows them
                continue
            new_id = self._next_job_id
            self._next_job_id += 1

            def renumber(url: str | None) -> str | None:
                return f"{url.rsplit('/', 1)[0]}/{new_id}" if url else url

            requeued = {**old, "id": new_id, "node_id": payloads.node_id("CR", new_id), "run_attempt": number + 1,
                        "status": "queued", "conclusion": None, "created_at": now, "started_at": now,
                        "completed_at": None, "steps": [], "runner_id": None, "runner_name": None,
                        "runner_group_id": None, "runner_group_name": None, "url": renumber(old.get("url")),
                        "html_url": renumber(old.get("html_url")), "check_run_url": renumber(old.get("check_run_url"))}
            self.index.jobs[new_id] = requeued
            jobs.append(requeued)
        attempts[number + 1] = run
        self.index.jobs_by_attempt[(run_id, number + 1)] = jobs
        raise Response(201, {})

    # --- state for writes (and the permission endpoint) ----------------------------------------
    def _is_issue(self, number: int) -> bool:
        return number in self.index.pulls or number in self.comment_issue.values()

    def _comments_of(self, number: int) -> list[dict[str, Any]]:
        return [self.comments[i] for i in sorted(self.comments) if self.comment_issue[i] == number]

    def _permission(self, login: str) -> dict[str, Any]:
        owner = self.index.repository["owner"]
        role = self.collaborators.get(login.lower())
        if role is None:
            if owner.get("type") == "User" and owner["login"].lower() == login.lower():
                role = "admin"
            else:
                role = "none" if self.index.repository.get("private") else "read"
        return payloads.collaborator_permission(self._known_user(login), role)
