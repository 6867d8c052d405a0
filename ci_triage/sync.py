"""`sync`: bring a window of completed workflow runs and all their jobs (every attempt) into the store.

Incremental and resumable: a run attempt whose jobs are all stored (a `job_sets` row) is never asked
for again, and each run is written in its own transaction, so an interrupted sync resumes where it
stopped. Listings are conditional: their ETags and bodies live in the store, so re-listing an
unchanged window is answered 304, which GitHub does not count against the primary rate limit ("Best
practices for using the REST API", Use conditional requests). The `created` qualifier is a date, not
a moment, so the listing's URL (and so its ETag) stays the same all day.

With `logs="failed"`, each failed job's log is read once and classified; its category and captures
are what `runners` counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ci_triage.github.client import GitHubClient
from ci_triage.store import Store

Progress = Callable[[str, int, int], None]
BATCH_RUNS = 50  # runs written per transaction


class StoreETags:
    """The client's ETag cache, kept in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.store.etag(key) is not None

    def __getitem__(self, key: str) -> tuple[str, Any]:
        found = self.store.etag(key)
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: str, value: tuple[str, Any]) -> None:
        self.store.save_etag(key, value[0], value[1])


@dataclass
class SyncResult:
    runs_listed: int = 0
    runs_fetched: int = 0
    jobs_stored: int = 0
    logs_classified: int = 0


def parse_since(text: str, now: datetime) -> datetime:
    """`14d`, `36h`, `2w`, or an ISO date: the start of the window (a day boundary for relative ones)."""
    from ci_triage.errors import UsageError

    text = text.strip().lower()
    units = {"h": 3600, "d": 86400, "w": 7 * 86400}
    if text[:-1].isdigit() and text[-1:] in units:
        start = now - timedelta(seconds=int(text[:-1]) * units[text[-1]])
        return start.replace(hour=0, minute=0, second=0, microsecond=0) if text[-1] != "h" else start
    try:
        from ci_triage.core.timefmt import parse_iso

        return parse_iso(text if "t" in text else text + "T00:00:00Z")
    except ValueError:
        raise UsageError(f"--since {text!r}: give a duration (14d, 36h, 2w) or a date (2026-05-01)") from None


def sync(client: GitHubClient, store: Store, repo: str, since: datetime, *, logs: str = "failed",
         triage: Any = None, progress: Progress = lambda what, done, total: None) -> SyncResult:
    """Fetch what the window lacks. `triage` (a service.Triage) classifies logs when `logs == "failed"`."""
    store.start_sync(repo, since.isoformat())
    result = SyncResult()
    # Only the run listing is asked again next time: its ETags outlive the process. A completed run's
    # jobs are asked once (then its job set is stored), so their ETags stay in memory.
    client.use_etag_cache(StoreETags(store))
    try:
        runs = client.completed_runs(repo, f">={since:%Y-%m-%d}")
    finally:
        client.use_etag_cache({})
    result.runs_listed = len(runs)
    batch: list[tuple[Any, dict[int, str | None], list[Any]]] = []
    for done, (run, actor) in enumerate(runs):
        progress("runs", done, len(runs))
        if run.created_at < since or store.has_job_set(repo, run.id, run.attempt):
            continue
        actors = {run.attempt: actor}
        for attempt in range(2, run.attempt):
            actors[attempt] = client.attempt_actor(repo, run.id, attempt)
        jobs = client.job_executions(repo, run.id)
        batch.append((run, actors, jobs))
        result.runs_fetched += 1
        result.jobs_stored += len(jobs)
        if len(batch) >= BATCH_RUNS:
            store.save_synced_runs(repo, batch)
            batch = []
    store.save_synced_runs(repo, batch)
    if logs == "failed" and triage is not None:
        failed = [job for run, _ in runs if run.created_at >= since
                  for job in store.jobs_of_all_attempts(repo, run.id) if job.failed]
        for done, job in enumerate(failed):
            progress("logs", done, len(failed))
            if not store.has_category(repo, job.id):
                _, classification, _ = triage.classify_job(repo, job)
                store.save_category(repo, job.id, classification)
                result.logs_classified += 1
    store.finish_sync(repo)
    return result


def automatic_attempts(store: Store, repo: str, bot_logins: tuple[str, ...]) -> dict[tuple[int, int], bool]:
    """(run, attempt) -> whether ci-triage asked for it: its audit log's reruns (attempt n rerun makes
    n + 1), or the attempt's triggering actor being the bot."""
    found = {key: actor in bot_logins for key, actor in store.attempt_actors(repo).items()}
    for entry in store.audit_log(repo):
        if entry["action"] == "rerun" and entry["target"].startswith("run:"):
            try:
                run_id, attempt = int(entry["target"][4:]), int(entry["detail"]["attempt"])
            except (KeyError, TypeError, ValueError):
                continue
            found[(run_id, attempt + 1)] = True
    return found


def health_records(store: Store, repo: str, since: datetime | None) -> list[Any]:
    from ci_triage.core import serialize
    from ci_triage.core.health.records import JobRecord
    from ci_triage.core.timefmt import iso

    records = []
    for data, pr, workflow, category, captures in store.health_rows(repo, iso(since) if since else None):
        job = serialize.load_job(json.loads(data))
        records.append(JobRecord(
            run_id=job.run_id, attempt=job.run_attempt, job_id=job.id, workflow=workflow, name=job.name, pr=pr,
            branch=job.head_branch, head_sha=job.head_sha, runner_name=job.runner_name,
            runner_group=job.runner_group_name, labels=job.labels, started_at=job.started_at,
            completed_at=job.completed_at, conclusion=job.conclusion, category=category,
            captures=json.loads(captures) if captures else {}))
    return records
