"""The state a sticky PR comment keeps: reruns taken, attempts seen, the bot's cooldown.

Pure. The shell lists the PR's comments, calls `find_sticky`, `parse_comment` for the state kept in the
comment and updates it (`CommentState.observe`, `with_rerun`, `with_bot_rerun`); `core.render.comment`
writes the body. The body starts with two hidden lines, in this order (GitHub renders HTML comments as
nothing):

    <!-- ci-triage:sticky -->
    <!-- ci-triage:state {"v":1,...} -->

Only that position is read, so log text, job names or a quoted copy of the comment further down cannot
pose as the state. The JSON has `<`, `>` and `--` escaped (as `\\u003c`, `\\u003e`, `-\\u002d`), so no
string in it can close the HTML comment. A state that does not validate reads as an empty state.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from ci_triage.core.text import clip
from ci_triage.core.timefmt import parse_iso_aware
from ci_triage.model import JobVerdict, PullReport

MARKER = "<!-- ci-triage:sticky -->"
STATE_PREFIX = "<!-- ci-triage:state "
STATE_SUFFIX = " -->"
VOLATILE = "<!-- ci-triage:volatile -->"  # ends lines that may differ without the triage having changed
SCHEMA_VERSION = 1
MAX_COMMENT_CHARS = 65_536
MAX_STATE_CHARS = 12_000  # the state is never dropped for size; it is kept small instead
DEFAULT_BOT_LOGIN = "github-actions[bot]"  # who writes comments with the workflow's GITHUB_TOKEN

# Per-item caps of the state, so a long-lived PR cannot grow it without bound.
MAX_RUNS = 20
MAX_ATTEMPTS_PER_RUN = 10
MAX_RERUNS_PER_RUN = 10
MAX_JOBS_PER_ATTEMPT = 20
MAX_JOB_IDS = 50
MAX_TEXT = 200

RERUN_MODES = ("jobs", "failed")  # rerun the listed jobs, or the run's failed jobs (and their dependents)


# --- the state ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RerunRecord:
    run_id: int
    attempt: int  # the attempt that was rerun; the rerun itself becomes attempt + 1
    job_ids: tuple[int, ...]
    mode: str  # "jobs" | "failed"
    at: str  # ISO 8601 with a UTC offset
    by: str  # "auto" | "bot:<login>"
    reason: str


@dataclass(frozen=True)
class JobOutcome:
    """How a failed job of one attempt was judged, for the history of later attempts."""

    job_id: int
    name: str
    verdict: str
    category: str


@dataclass(frozen=True)
class AttemptRecord:
    attempt: int
    seen_at: str  # when ci-triage first saw this attempt completed
    failed_jobs: tuple[JobOutcome, ...] = ()


@dataclass(frozen=True)
class RunState:
    run_id: int
    attempts: tuple[AttemptRecord, ...] = ()
    reruns: tuple[RerunRecord, ...] = ()

    @property
    def attempts_seen(self) -> tuple[int, ...]:
        return tuple(a.attempt for a in self.attempts)

    def attempt(self, number: int) -> AttemptRecord | None:
        return next((a for a in self.attempts if a.attempt == number), None)


@dataclass(frozen=True)
class CommentState:
    version: int = SCHEMA_VERSION
    runs: tuple[RunState, ...] = ()  # ordered by run id
    last_bot_rerun_at: str | None = None  # per PR (one comment per PR): the /rerun cooldown

    def run(self, run_id: int) -> RunState | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def attempts_seen(self, run_id: int) -> tuple[int, ...]:
        run = self.run(run_id)
        return run.attempts_seen if run else ()

    def reruns(self, run_id: int, by: str | None = None) -> tuple[RerunRecord, ...]:
        """The reruns of a run, optionally only those by "auto" or by one "bot:<login>"."""
        run = self.run(run_id)
        found = run.reruns if run else ()
        return tuple(r for r in found if by is None or r.by == by)

    def in_cooldown(self, now: datetime, cooldown: timedelta) -> bool:
        last = parse_iso_aware(self.last_bot_rerun_at) if self.last_bot_rerun_at else None
        return last is not None and now < last + cooldown

    def _with_run(self, run: RunState) -> CommentState:
        others = [r for r in self.runs if r.run_id != run.run_id]
        return replace(self, runs=tuple(sorted([*others, run], key=lambda r: r.run_id))).compacted()

    def with_rerun(self, record: RerunRecord) -> CommentState:
        _check_rerun(record)
        run = self.run(record.run_id) or RunState(record.run_id)
        return self._with_run(replace(run, reruns=(*run.reruns, record)))

    def with_bot_rerun(self, at: str) -> CommentState:
        if parse_iso_aware(at) is None:
            raise ValueError(f"not an ISO 8601 time with a UTC offset: {at!r}")
        return replace(self, last_bot_rerun_at=at)

    def observe(self, report: PullReport, at: str) -> CommentState:
        """Record every run attempt the report shows, with its failed jobs' verdicts.

        Idempotent: an attempt seen before keeps its first `seen_at`, so observing the same report twice
        gives the same state (and `needs_update` then says no edit).
        """
        if parse_iso_aware(at) is None:
            raise ValueError(f"not an ISO 8601 time with a UTC offset: {at!r}")
        outcomes: dict[tuple[int, int], list[JobOutcome]] = {}
        attempts = {(run.id, run.attempt) for run in report.runs if run.is_completed}
        for verdict in report.failed_jobs:
            run = verdict.facts.run
            attempts.add((run.id, run.attempt))
            outcomes.setdefault((run.id, run.attempt), []).append(_outcome(verdict))
        state = self
        for run_id, number in sorted(attempts):
            run = state.run(run_id) or RunState(run_id)
            earlier = run.attempt(number)
            record = AttemptRecord(number, earlier.seen_at if earlier else at,
                                   tuple(outcomes.get((run_id, number), ())))
            kept = [a for a in run.attempts if a.attempt != number]
            state = state._with_run(replace(run, attempts=tuple(sorted([*kept, record], key=lambda a: a.attempt))))
        return state

    def compacted(self, max_chars: int = MAX_STATE_CHARS) -> CommentState:
        """Within the per-item caps, then within max_chars serialized, dropping the oldest runs first."""
        runs = [RunState(r.run_id,
                         tuple(AttemptRecord(a.attempt, a.seen_at,
                                             tuple(JobOutcome(j.job_id, clip(j.name, MAX_TEXT), j.verdict,
                                                              clip(j.category, MAX_TEXT))
                                                   for j in a.failed_jobs[:MAX_JOBS_PER_ATTEMPT]))
                               for a in r.attempts[-MAX_ATTEMPTS_PER_RUN:]),
                         tuple(replace(x, job_ids=x.job_ids[:MAX_JOB_IDS], reason=clip(x.reason, MAX_TEXT))
                               for x in r.reruns[-MAX_RERUNS_PER_RUN:]))
                for r in sorted(self.runs, key=lambda r: r.run_id)[-MAX_RUNS:]]
        state = replace(self, runs=tuple(runs))
        while len(serialize_state(state)) > max_chars and len(state.runs) > 1:
            state = replace(state, runs=state.runs[1:])
        if len(serialize_state(state)) > max_chars and state.runs:  # one huge run: keep its verdicts only
            only = state.runs[0]
            state = replace(state, runs=(replace(only, attempts=tuple(replace(a, failed_jobs=a.failed_jobs[:3])
                                                                      for a in only.attempts[-3:])),))
        return state


def _outcome(verdict: JobVerdict) -> JobOutcome:
    job = verdict.facts.job
    return JobOutcome(job.id, job.name, verdict.verdict.value, verdict.facts.classification.category)


# --- serialization ----------------------------------------------------------------------------------
def serialize_state(state: CommentState) -> str:
    """The state as the hidden line that follows the marker."""
    payload = {
        "v": state.version,
        "last_bot_rerun_at": state.last_bot_rerun_at,
        "runs": [{"run_id": r.run_id,
                  "attempts": [{"attempt": a.attempt, "seen_at": a.seen_at,
                                "failed_jobs": [[j.job_id, j.name, j.verdict, j.category] for j in a.failed_jobs]}
                               for a in r.attempts],
                  "reruns": [{"attempt": x.attempt, "job_ids": list(x.job_ids), "mode": x.mode, "at": x.at,
                              "by": x.by, "reason": x.reason} for x in r.reruns]}
                 for r in state.runs],
    }
    text = json.dumps(payload, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    # `<`, `>` and `--` only ever occur inside JSON strings, where these escapes mean the same characters.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("--", "-\\u002d")
    return STATE_PREFIX + text + STATE_SUFFIX


class _Invalid(ValueError):
    pass


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Invalid(f"not a non-negative integer: {value!r}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"not a string: {value!r}")
    return value


def _time(value: Any) -> str:
    if parse_iso_aware(_str(value)) is None:
        raise _Invalid(f"not a time: {value!r}")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _Invalid(f"not a list: {value!r}")
    return value


def _check_rerun(record: RerunRecord) -> RerunRecord:
    _int(record.run_id)
    _int(record.attempt)
    for job_id in record.job_ids:
        _int(job_id)
    if record.mode not in RERUN_MODES:
        raise _Invalid(f"unknown rerun mode {record.mode!r}")
    if not (record.by == "auto" or (record.by.startswith("bot:") and len(record.by) > 4)):
        raise _Invalid(f"unknown rerun origin {record.by!r}")
    _time(record.at)
    _str(record.reason)
    return record


def _state_from_payload(payload: Any) -> CommentState:
    if not isinstance(payload, dict) or payload.get("v") != SCHEMA_VERSION:
        raise _Invalid("not a state of this schema version")
    last = payload.get("last_bot_rerun_at")
    runs = []
    for entry in _list(payload.get("runs")):
        if not isinstance(entry, dict):
            raise _Invalid("run entry is not an object")
        run_id = _int(entry.get("run_id"))
        attempts = []
        for a in _list(entry.get("attempts")):
            if not isinstance(a, dict):
                raise _Invalid("attempt entry is not an object")
            jobs = []
            for j in _list(a.get("failed_jobs")):
                if not (isinstance(j, list) and len(j) == 4):
                    raise _Invalid("failed job entry is not [id, name, verdict, category]")
                jobs.append(JobOutcome(_int(j[0]), _str(j[1]), _str(j[2]), _str(j[3])))
            attempts.append(AttemptRecord(_int(a.get("attempt")), _time(a.get("seen_at")), tuple(jobs)))
        reruns = []
        for x in _list(entry.get("reruns")):
            if not isinstance(x, dict):
                raise _Invalid("rerun entry is not an object")
            reruns.append(_check_rerun(RerunRecord(
                run_id, _int(x.get("attempt")), tuple(_int(i) for i in _list(x.get("job_ids"))),
                _str(x.get("mode")), _str(x.get("at")), _str(x.get("by")), _str(x.get("reason")))))
        runs.append(RunState(run_id, tuple(sorted(attempts, key=lambda a: a.attempt)), tuple(reruns)))
    if len({r.run_id for r in runs}) != len(runs):
        raise _Invalid("a run appears twice")
    return CommentState(SCHEMA_VERSION, tuple(sorted(runs, key=lambda r: r.run_id)),
                        None if last is None else _time(last))


def parse_state(line: str) -> CommentState:
    """The state from its hidden line; anything that does not validate is the empty state."""
    line = line.strip()
    if not (line.startswith(STATE_PREFIX) and line.endswith(STATE_SUFFIX)):
        return CommentState()
    text = line[len(STATE_PREFIX) : -len(STATE_SUFFIX)]
    if "-->" in text:  # our own serialization never contains it
        return CommentState()
    try:
        return _state_from_payload(json.loads(text))
    except (ValueError, RecursionError):  # json.JSONDecodeError and _Invalid are ValueErrors
        return CommentState()


def _lines(body: str) -> list[str]:
    return body.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def is_sticky(body: str | None) -> bool:
    """Whether a comment body is a ci-triage sticky comment: the marker is its first line."""
    if not body:
        return False
    first = next((line for line in _lines(body.lstrip("\ufeff")) if line.strip()), "")
    return first.strip() == MARKER


def parse_comment(body: str | None) -> CommentState | None:
    """None when the body is not a sticky comment; else its state (empty when missing or garbled)."""
    if not is_sticky(body):
        return None
    lines = [line for line in _lines(body.lstrip("\ufeff")) if line.strip()]  # type: ignore[union-attr]
    return parse_state(lines[1]) if len(lines) > 1 else CommentState()


def find_sticky(comments: Iterable[Mapping[str, Any]], bot_login: str | None = DEFAULT_BOT_LOGIN
                ) -> dict | None:
    """The sticky comment among a PR's comments (REST `GET /repos/{o}/{r}/issues/{n}/comments` items).

    Only a comment written by `bot_login` counts: anyone may post a comment that starts with the marker,
    and its "state" must not steer reruns or the cooldown. Pass the login the token comments as
    (`github-actions[bot]` for the workflow's GITHUB_TOKEN); None accepts any author. When a race left
    two, the oldest is the sticky one.
    """
    found = [c for c in comments
             if isinstance(c, Mapping) and is_sticky(c.get("body") if isinstance(c.get("body"), str) else None)
             and (bot_login is None or ((c.get("user") or {}).get("login") == bot_login))]
    if not found:
        return None
    return dict(min(found, key=lambda c: (str(c.get("created_at") or ""), int(c.get("id") or 0))))
