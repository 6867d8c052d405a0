"""Job executions over a window -> runner and host health, contention hotspots, rerun cost, flakes.

Pure: JobRecords in (or their columns), a HealthReport out. pandas and numpy stay inside.

- Health. Per runner (and per host, by `host_pattern` as hosts.host_of reads it): jobs that ran to
  an end, failures by category, infra failures (records.is_infra: not the code's own categories,
  "unknown", or "unclassified", a failure whose log was never read). A runner's pool is the set of its
  jobs' specific labels (hosts.pool_labels; the whole label set when none is specific), the most
  common one when its jobs differ. Its infra failures on that pool are tested against the rest of the
  pool with Fisher's exact test, one-sided (stats.fisher_greater), the p-values of all runners are
  adjusted together by Benjamini-Hochberg (hosts likewise, separately), and a runner is `sick` only
  when its q-value is below `alpha` AND it has at least `min_infra_failures` infra failures: a runner
  with two unlucky jobs is not evidence. (health.entities counts it all.)
- Hotspots. Every failure of a contention category (records.CONTENTION_CATEGORIES) on a known host is
  correlated with the jobs of other runs that ran on that host at the same time, by the one
  vectorised engine (evidence.timeline_frame.correlate, with the host as the pool). Each (host, pair
  of job names, category) counts the failed jobs it explains, with the PRs and the ports or devices
  the classifier captured. (health.hotspots.)
- Reruns. Attempt n > 1 of a run is a rerun; `automatic` when the shell says ci-triage asked for it
  (its audit log, the sticky comment's rerun records, or the attempt's triggering actor being the
  bot), else manual. A rerun rescued its run when no job that ran in it failed while the attempt before
  had a failure. Runner-minutes: the durations of the jobs that ran in attempts after the first.
- Flakes. Per (workflow, job name): head SHAs it ran on, and those where one execution failed and a
  later one passed.

How a million executions stay a few sorts of a million integers: every text column is read as its
category codes (health.columns), groups are counted with bincounts or one sort of a packed key, and
strings are made only per runner, per host and per hotspot, never per execution. The pandas reading
this replaced is the test oracle (tests/core/health_oracle.py; tests/core/test_health_scale.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime

import numpy as np
import pandas as pd

from ci_triage.core.evidence import hosts
from ci_triage.core.health.columns import (
    Codes,
    dense,
    distinct,
    pair_counts,
    segment_starts,
)
from ci_triage.core.health.entities import health
from ci_triage.core.health.hotspots import RECOMMENDATIONS, hotspots_of
from ci_triage.core.health.records import (
    COUNTED_CONCLUSIONS,
    UNCLASSIFIED,
    FlakyJob,
    HealthReport,
    JobRecord,
    RerunSummary,
)
from ci_triage.model import FAILED_CONCLUSIONS

DEFAULT_ALPHA = 0.01
DEFAULT_MIN_INFRA_FAILURES = 3
DEVICE_CAPTURES = ("port", "device", "rank")
MAX_HOTSPOTS = 100  # the most frequent are kept; the count of each is exact

__all__ = ["RECOMMENDATIONS", "UNCLASSIFIED", "analyse", "analyse_frame", "pool_of", "records_frame"]


def pool_of(labels: Iterable[str]) -> str:
    """A runner pool's name: its specific labels (hosts.pool_labels' reading), else all of them."""
    labels = tuple(labels)
    specific = {label for label in labels if label.lower() not in hosts.GENERIC_LABELS}
    return ",".join(sorted(specific or set(labels))) or "(no labels)"


def records_frame(records: Iterable[JobRecord], host_pattern: re.Pattern[str] | None = None) -> pd.DataFrame:
    """The records as columns (one row per execution), with host, pool and the flags analysis reads."""
    rows = list(records)
    pools: dict[tuple[str, ...], str] = {}
    frame = pd.DataFrame({
        "run_id": np.fromiter((r.run_id for r in rows), dtype=np.int64, count=len(rows)),
        "attempt": np.fromiter((r.attempt for r in rows), dtype=np.int64, count=len(rows)),
        "job_id": np.fromiter((r.job_id for r in rows), dtype=np.int64, count=len(rows)),
        "workflow": pd.Categorical([r.workflow for r in rows]),
        "name": pd.Categorical([r.name for r in rows]),
        "pr": np.fromiter((-1 if r.pr is None else r.pr for r in rows), dtype=np.int64, count=len(rows)),
        "branch": pd.Categorical([r.branch or "" for r in rows]),
        "head_sha": pd.Categorical([r.head_sha for r in rows]),
        "runner": pd.Categorical([r.runner_name or "" for r in rows]),
        "host": pd.Categorical([hosts.host_of(r.runner_name, host_pattern) or "" for r in rows]),
        "pool": pd.Categorical([pools.setdefault(r.labels, pool_of(r.labels)) for r in rows]),
        "labels": pd.Categorical([",".join(r.labels) for r in rows]),
        "start": np.fromiter((_seconds(r.started_at) for r in rows), dtype=np.int64, count=len(rows)),
        "end": np.fromiter((_seconds(r.completed_at) for r in rows), dtype=np.int64, count=len(rows)),
        "conclusion": pd.Categorical([r.conclusion or "" for r in rows]),
        "category": pd.Categorical([(r.category or UNCLASSIFIED) if r.failed else "" for r in rows]),
        "ports": [",".join(r.captures[k] for k in DEVICE_CAPTURES if r.captures.get(k)) for r in rows],
    })
    return frame


def _seconds(moment: datetime | None) -> int:
    return -1 if moment is None else int(moment.timestamp())


def analyse(records: Iterable[JobRecord], *, repo: str, since: datetime | None = None,
            until: datetime | None = None, host_pattern: re.Pattern[str] | None = None,
            automatic: Mapping[tuple[int, int], bool] | None = None, alpha: float = DEFAULT_ALPHA,
            min_infra_failures: int = DEFAULT_MIN_INFRA_FAILURES) -> HealthReport:
    """The whole report from the records of the window. `automatic[(run_id, attempt)]` is True when
    ci-triage asked for that attempt (attempt >= 2)."""
    return analyse_frame(records_frame(records, host_pattern), repo=repo, since=since, until=until,
                         automatic=automatic, alpha=alpha, min_infra_failures=min_infra_failures)


def analyse_frame(frame: pd.DataFrame, *, repo: str, since: datetime | None = None,
                  until: datetime | None = None, automatic: Mapping[tuple[int, int], bool] | None = None,
                  alpha: float = DEFAULT_ALPHA, min_infra_failures: int = DEFAULT_MIN_INFRA_FAILURES,
                  hotspots: bool = True) -> HealthReport:
    """The report from records_frame()'s columns (text columns categorical, as it makes them)."""
    conclusion, category = Codes(frame["conclusion"]), Codes(frame["category"])
    counted = conclusion.flags(lambda c: c in COUNTED_CONCLUSIONS)
    failed = conclusion.flags(lambda c: c in FAILED_CONCLUSIONS)
    host = Codes(frame["host"])
    runners, host_health = health(Codes(frame["runner"]), host, counted, failed, Codes(frame["pool"]), category,
                                  Codes(frame["labels"]), alpha, min_infra_failures)
    notes = []
    if (failed & category.flags(lambda c: c == UNCLASSIFIED)).any():
        notes.append("Some failures were not classified (their logs were not read): they count as failures, "
                     "not as infra failures.")
    return HealthReport(
        repo=repo, since=since, until=until, runners=runners, hosts=host_health,
        hotspots=hotspots_of(frame, failed, conclusion, category, host, MAX_HOTSPOTS) if hotspots else (),
        reruns=_reruns(frame, failed, automatic or {}), flaky_jobs=_flaky(frame, failed, counted, conclusion),
        alpha=alpha, min_infra_failures=min_infra_failures, notes=tuple(notes))


def _reruns(frame: pd.DataFrame, failed: np.ndarray, automatic: Mapping[tuple[int, int], bool]) -> RerunSummary:
    attempt = frame["attempt"].to_numpy(np.int64)
    rerun_rows = np.flatnonzero(attempt > 1)
    if not len(rerun_rows):
        return RerunSummary(0, 0, 0, 0, 0.0)
    run_id = frame["run_id"].to_numpy(np.int64)
    start, end = frame["start"].to_numpy(np.int64)[rerun_rows], frame["end"].to_numpy(np.int64)[rerun_rows]
    minutes = np.where((start >= 0) & (end >= start), (end - start) / 60.0, 0.0)
    # Every job of an attempt after the first is in rerun_rows: its sums are pandas' (Kahan summation per
    # attempt, then the sum of the attempts in (run, attempt) order), so the minutes match to the bit.
    per_attempt = pd.DataFrame({"run_id": run_id[rerun_rows], "attempt": attempt[rerun_rows],
                                "failed": failed[rerun_rows], "minutes": minutes}).groupby(
        ["run_id", "attempt"]).agg(failed=("failed", "any"), minutes=("minutes", "sum")).reset_index()
    runs, attempts = per_attempt["run_id"].to_numpy(np.int64), per_attempt["attempt"].to_numpy(np.int64)
    rerun_failed = per_attempt["failed"].to_numpy(bool)
    # The attempt before: among the reruns themselves, or among the first attempts (the bulk, sorted once).
    # It may hold no job of its own in the window (then it is taken to have failed: a rerun is asked for
    # a red run).
    before_failed = np.ones(len(runs), dtype=bool)
    earlier = _lookup(runs, attempts, runs, attempts - 1)
    before_failed[earlier >= 0] = rerun_failed[earlier[earlier >= 0]]
    first = attempts == 2  # the attempt before is the run's first
    if first.any():
        base = attempt == 1
        seen = _member(run_id[base], runs[first])
        seen_failed = _member(run_id[base & failed], runs[first])
        before_failed[first] = ~seen | seen_failed
    rescued = int((before_failed & ~rerun_failed).sum())
    asked = [key for key, value in automatic.items() if value]
    auto = 0
    if asked:
        asked_runs = np.array([int(r) for r, _ in asked], dtype=np.int64)
        asked_attempts = np.array([int(a) for _, a in asked], dtype=np.int64)
        auto = int((_lookup(asked_runs, asked_attempts, runs, attempts) >= 0).sum())
    requested = len(runs)
    return RerunSummary(requested, auto, requested - auto, rescued, round(float(per_attempt["minutes"].sum()), 1))


def _member(values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Whether each query is among the values: a table over their span when it is small, else a sort."""
    if not len(values) or not len(queries):
        return np.zeros(len(queries), dtype=bool)
    low = min(int(values.min()), int(queries.min()))
    span = max(int(values.max()), int(queries.max())) - low + 1
    if dense(span, 8 * len(values)):
        table = np.zeros(span, dtype=bool)
        table[values - low] = True
        return table[queries - low]
    ordered = np.sort(values)
    return ordered[np.minimum(np.searchsorted(ordered, queries), len(ordered) - 1)] == queries


def _lookup(runs: np.ndarray, attempts: np.ndarray, query_runs: np.ndarray, query_attempts: np.ndarray) -> np.ndarray:
    """For each query (run, attempt), the index of a row with that (run, attempt), else -1."""
    if not len(runs) or not len(query_runs):
        return np.full(len(query_runs), -1, dtype=np.int64)
    keys, queries = _pair_keys(runs, attempts, query_runs, query_attempts)
    order = np.argsort(keys)
    sorted_keys = keys[order]
    at = np.minimum(np.searchsorted(sorted_keys, queries), len(keys) - 1)
    return np.where(sorted_keys[at] == queries, order[at], -1)


def _pair_keys(runs, attempts, query_runs, query_attempts) -> tuple[np.ndarray, np.ndarray]:
    """(run, attempt) as one int64 ordered like the pair: offsets and bit widths, or factorized runs
    when run ids span too much."""
    all_runs, all_attempts = np.concatenate((runs, query_runs)), np.concatenate((attempts, query_attempts))
    all_runs, all_attempts = all_runs - all_runs.min(), all_attempts - all_attempts.min()
    width = int(all_attempts.max()).bit_length()
    if int(all_runs.max()).bit_length() + width > 62:
        all_runs = pd.factorize(all_runs)[0].astype(np.int64)
        all_attempts = pd.factorize(all_attempts)[0].astype(np.int64)
        width = int(all_attempts.max()).bit_length()
    key = (all_runs << width) | all_attempts
    return key[:len(runs)], key[len(runs):]


def _flaky(frame: pd.DataFrame, failed: np.ndarray, counted: np.ndarray, conclusion: Codes) -> tuple[FlakyJob, ...]:
    if not counted.any():
        return ()
    counted = None if counted.all() else counted  # no copies when every row counts (the usual case)
    workflow, name, sha = Codes(frame["workflow"]), Codes(frame["name"]), Codes(frame["head_sha"])
    # Per (workflow, name): a dense code; per (workflow, name, sha): one int64 (a missing text is "nan").
    job_workflow, job_name, (_, job) = pair_counts(workflow.wrapped(counted), name.wrapped(counted), len(name) + 1,
                                                   inverse=True)
    shas = len(sha) + 1
    key = job * shas + sha.wrapped(counted)
    runs = np.bincount(distinct(key) // shas, minlength=len(job_workflow))
    # Failed then passed on one SHA: some pass comes after the first failure (order: end, then attempt).
    end, attempt = frame["end"].to_numpy(np.int64), frame["attempt"].to_numpy(np.int64)
    passed = conclusion.flags(lambda c: c == "success")
    if counted is not None:
        failed, passed = failed & counted, passed & counted
    failed_rows, passed_rows = np.flatnonzero(failed), np.flatnonzero(passed)
    if counted is not None:  # key holds the counted rows only
        place = np.cumsum(counted) - 1
        fail_key, pass_key = key[place[failed_rows]], key[place[passed_rows]]
    else:
        fail_key, pass_key = key[failed_rows], key[passed_rows]
    fail_order = end[failed_rows] * 1000 + attempt[failed_rows]
    by_key = np.argsort(fail_key, kind="stable")
    starts = segment_starts(fail_key[by_key])
    failing = fail_key[by_key][starts]
    first_fail = np.minimum.reduceat(fail_order[by_key], starts) if len(starts) else fail_order
    flaky = np.zeros(len(job_workflow), dtype=np.int64)
    if len(failing) and len(pass_key):
        space = len(job_workflow) * shas
        if dense(space, 8 * len(key)):  # a table of the failing keys leaves few passes to search
            has_failure = np.zeros(space, dtype=bool)
            has_failure[failing] = True
            near = np.flatnonzero(has_failure[pass_key])
            pass_key, passed_rows = pass_key[near], passed_rows[near]
        pass_order = end[passed_rows] * 1000 + attempt[passed_rows]
        at = np.minimum(np.searchsorted(failing, pass_key), len(failing) - 1)
        late = (failing[at] == pass_key) & (pass_order > first_fail[at])
        flaky = np.bincount(distinct(pass_key[late]) // shas, minlength=len(job_workflow))
    found = [FlakyJob(w, n, r, f, f / r if r else 0.0) for w, n, r, f in zip(
        workflow.names[job_workflow].tolist(), name.names[job_name].tolist(), runs.tolist(), flaky.tolist())]
    found.sort(key=lambda j: (-j.flaky_runs, -j.rate, j.workflow, j.name))
    return tuple(found)
