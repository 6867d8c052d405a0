"""The store's tables for `sync` and `runners` (schema 6): run attempts with who triggered them, the
category and captures of classified failures, persisted ETags, sync windows. A mixin of store.Store."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ci_triage.core import serialize
from ci_triage.core.timefmt import iso
from ci_triage.model import Classification, Job, Run


def _now() -> str:
    return datetime.now(UTC).isoformat()


class SyncTables:
    _db: Any

    def _write(self, statements: Iterable[tuple[str, tuple[Any, ...]]]) -> None:  # pragma: no cover - Store's
        raise NotImplementedError

    def _job_statements(self, repo: str, run: Run, jobs: Iterable[Job]) -> list[tuple[str, tuple[Any, ...]]]:
        raise NotImplementedError  # pragma: no cover - Store's

    def has_job_set(self, repo: str, run_id: int, attempt: int) -> bool:
        return self._db.execute("SELECT 1 FROM job_sets WHERE repo = ? AND run_id = ? AND run_attempt = ?",
                                (repo, run_id, attempt)).fetchone() is not None

    def jobs_of_all_attempts(self, repo: str, run_id: int) -> list[Job]:
        rows = self._db.execute("SELECT data FROM jobs WHERE repo = ? AND run_id = ? ORDER BY id", (repo, run_id))
        return [serialize.load_job(json.loads(data)) for (data,) in rows]

    def save_run_attempts(self, repo: str, run: Run, actors: dict[int, str | None]) -> None:
        """Attempts 1..run.attempt of a completed run; `actors[n]` triggered attempt n (when known)."""
        pr = run.pr_numbers[0] if run.pr_numbers else None
        self._write([("INSERT OR REPLACE INTO run_attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (repo, run.id, attempt, run.workflow_name, run.event, run.head_sha, run.head_branch, pr,
                       actors.get(attempt), iso(run.created_at), run.conclusion if attempt == run.attempt else None))
                     for attempt in range(1, run.attempt + 1)])

    def save_synced_runs(self, repo: str, batch: Iterable[tuple[Run, dict[int, str | None], list[Job]]]) -> None:
        """Runs, their attempts and every job execution, in one transaction (a commit costs a sync of
        the disk): a sync stopped half-way leaves whole runs only; a job set row is the resume point."""
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for run, actors, jobs in batch:
            pr = run.pr_numbers[0] if run.pr_numbers else None
            statements.append(("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
                               (repo, run.id, run.attempt, run.status, json.dumps(serialize.dump(run)), _now())))
            statements += [("INSERT OR REPLACE INTO run_attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (repo, run.id, attempt, run.workflow_name, run.event, run.head_sha, run.head_branch, pr,
                             actors.get(attempt), iso(run.created_at),
                             run.conclusion if attempt == run.attempt else None))
                           for attempt in range(1, run.attempt + 1)]
            statements += self._job_statements(repo, run, jobs)
        if statements:
            self._write(statements)

    def save_category(self, repo: str, job_id: int, classification: Classification) -> None:
        self._write([("INSERT OR REPLACE INTO job_categories VALUES (?, ?, ?, ?, ?)",
                      (repo, job_id, classification.category, classification.rule_id,
                       json.dumps(dict(classification.captures), sort_keys=True)))])

    def has_category(self, repo: str, job_id: int) -> bool:
        return self._db.execute("SELECT 1 FROM job_categories WHERE repo = ? AND job_id = ?",
                                (repo, job_id)).fetchone() is not None

    def health_rows(self, repo: str, since: str | None = None) -> list[tuple[Any, ...]]:
        """(job data, pr, workflow, category, captures) of every stored execution of a synced run
        that started at or after `since` (ISO 8601, as the store writes it)."""
        return self._db.execute(
            "SELECT j.data, a.pr, a.workflow, c.category, c.captures FROM jobs j "
            "JOIN run_attempts a ON a.repo = j.repo AND a.run_id = j.run_id AND a.attempt = 1 "
            "LEFT JOIN job_categories c ON c.repo = j.repo AND c.job_id = j.id "
            "WHERE j.repo = ? AND (? IS NULL OR j.started_at >= ?) ORDER BY j.started_at, j.id",
            (repo, since, since)).fetchall()

    def attempt_actors(self, repo: str) -> dict[tuple[int, int], str | None]:
        return {(run_id, attempt): actor for run_id, attempt, actor in self._db.execute(
            "SELECT run_id, attempt, triggering_actor FROM run_attempts WHERE repo = ? AND attempt > 1", (repo,))}

    def etag(self, key: str) -> tuple[str, Any] | None:
        row = self._db.execute("SELECT etag, body FROM etags WHERE key = ?", (key,)).fetchone()
        return (row[0], json.loads(row[1])) if row else None

    def save_etag(self, key: str, etag: str, body: Any) -> None:
        self._write([("INSERT OR REPLACE INTO etags VALUES (?, ?, ?, ?)", (key, etag, json.dumps(body), _now()))])

    def start_sync(self, repo: str, since: str) -> None:
        self._write([("INSERT OR REPLACE INTO syncs VALUES (?, ?, ?, NULL)", (repo, since, _now()))])

    def finish_sync(self, repo: str) -> None:
        self._write([("UPDATE syncs SET finished_at = ? WHERE repo = ?", (_now(), repo))])

    def last_sync(self, repo: str) -> dict[str, str | None] | None:
        row = self._db.execute("SELECT since, started_at, finished_at FROM syncs WHERE repo = ?", (repo,)).fetchone()
        return {"since": row[0], "started_at": row[1], "finished_at": row[2]} if row else None

