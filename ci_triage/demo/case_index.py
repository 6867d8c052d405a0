"""A triage case's payloads indexed the ways the GitHub endpoints look them up, and GitHub's filters.

Pure: the local fake (replay.py) answers requests from this index.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ci_triage.core.timefmt import parse_iso


def _parse_when(text: str, end: bool) -> datetime:
    """A date or datetime of GitHub's search syntax; a bare date at an end bound means its last second."""
    if len(text) == 10:
        text += "T23:59:59Z" if end else "T00:00:00Z"
    return parse_iso(text).astimezone(UTC)


def created_filter(spec: str) -> Callable[[datetime], bool]:
    """GitHub's `created` qualifier: `A..B`, `>=A`, `>A`, `<=B`, `<B`, or a single date."""
    if ".." in spec:
        low, high = spec.split("..", 1)
        lo = None if low in ("", "*") else _parse_when(low, False)
        hi = None if high in ("", "*") else _parse_when(high, True)
        return lambda t: (lo is None or t >= lo) and (hi is None or t <= hi)
    for op, test in ((">=", lambda t, v: t >= v), ("<=", lambda t, v: t <= v),
                     (">", lambda t, v: t > v), ("<", lambda t, v: t < v)):
        if spec.startswith(op):
            value = _parse_when(spec[len(op):], op.startswith("<"))
            return lambda t, v=value, f=test: f(t, v)
    day_start, day_end = _parse_when(spec, False), _parse_when(spec, True)
    return lambda t: day_start <= t <= day_end


def parse_time(value: str) -> datetime:
    return parse_iso(value)



class CaseIndex:
    """The case's payloads, indexed the ways the endpoints look them up."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.repository = case["repository"]
        self.full_name = self.repository["full_name"]
        self.repo_id = self.repository["id"]
        self.pulls = {p["number"]: p for p in case["pulls"]}
        self.pull_files = {int(k): v for k, v in case["pull_files"].items()}
        self.workflows = {w["id"]: w for w in case["workflows"]}
        self.attempts: dict[int, dict[int, dict[str, Any]]] = {}
        for run in case["runs"]:
            self.attempts.setdefault(run["id"], {})[run["run_attempt"]] = run
        self.jobs: dict[int, dict[str, Any]] = {job["id"]: job for job in case["jobs"]}
        self.jobs_by_attempt: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for job in case["jobs"]:
            self.jobs_by_attempt.setdefault((job["run_id"], job["run_attempt"]), []).append(job)
        self.logs = {int(k): v for k, v in case["logs"].items()}
        self.files = case.get("files", {})
        # A job is a check run: its id is the check run's id.
        self.annotations = {int(k): v for k, v in case.get("annotations", {}).items()}

    def latest_runs(self) -> list[dict[str, Any]]:
        runs = [attempts[max(attempts)] for attempts in self.attempts.values()]
        # GitHub lists runs newest first.
        return sorted(runs, key=lambda r: (r["created_at"], r["id"]), reverse=True)

    def workflow(self, key: str) -> dict[str, Any] | None:
        if key.isdigit():
            return self.workflows.get(int(key))
        return next((w for w in self.workflows.values() if w["path"].rsplit("/", 1)[-1] == key), None)
