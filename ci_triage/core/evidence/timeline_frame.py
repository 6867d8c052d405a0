"""Jobs -> overlaps on a runner pool and host, PRs in flight, later passes and duration baselines.

The one correlation engine: `report` and `timeline` (through evidence.window, one frame per report)
and `runners` (core.health.analysis) ask it. Every failed job is correlated in one go instead of
O(failed x candidates). Pure: columns of plain numbers in, numpy arrays (and model values on request)
out; numpy (and pandas, imported only for big frames) stay inside. Every answer equals the per-job reading kept as the
test oracle (tests/core/timeline_oracle.py; tests/core/test_timeline_frame.py checks it with hypothesis).

How it stays near O((n + k) log n) for n jobs and k overlapping pairs:
- A job belongs to one runner pool per specific label (hosts.pool_labels: two jobs share a pool when
  they share a specific label, or have the same label set when neither has one). With one pool per
  job (the usual case) no pair can be found twice; otherwise pairs are deduplicated.
- Overlaps: per pool and per duration class (powers of two), jobs sorted by start (one sort of
  packed (pool, class, start, row) int64 keys when they fit; frame_overlaps.py). A job of class b
  lasts less than 2^b ticks, so those overlapping [s, e) started in (s - 2^b, e): two searches of all
  the failed jobs at once give an index range, which is then exploded with numpy and filtered on
  end > s. Every job of the class lasts at least 2^(b-1), so with bounded concurrency per pool most
  of the range does overlap; long jobs only widen the range of their own class.
- PRs in flight without sorting the pairs: for each job j, pm_j is the latest end among the jobs of
  the same PR on the pool that started before it. The jobs before j started before f ended, so one of
  them overlaps f iff pm_j > f.start: j is the first job of its PR overlapping f iff pm_j <= f.start.
  Keeping the pairs that are first gives each PR exactly once.
- Later passes: successful jobs per pool sorted by start; the window [f.end, f.end + w] is counted
  with searchsorted, minus the failed run's own jobs (counted the same way per pool and run).
- Only the top `cap` overlaps per failed job (same host first, then longest overlap, then job id;
  the oracle's order) and the first `cap` later passes are kept; counts are always exact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from ci_triage.core.evidence.frame_arrays import (
    MISSING,  # re-exported: part of the frame's contract
    _window_ticks,
)
from ci_triage.core.evidence.frame_baselines import _baselines, died_early_of
from ci_triage.core.evidence.frame_overlaps import _later, _overlaps
from ci_triage.core.evidence.hosts import host_of, pool_labels
from ci_triage.model import (
    FAILED_CONCLUSIONS,
    DurationBaseline,
    Job,
    OverlappingJob,
    Run,
)

NO_CODE = -1  # no PR, no host, no conclusion
# Codes of the conclusion column; from_jobs appends any conclusion GitHub adds later.
CONCLUSIONS = ("success", "failure", "timed_out", "startup_failure", "cancelled", "skipped", "neutral",
               "action_required", "stale")
SUCCESS = 0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _int64(values: Iterable[int] | np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64))


def _ticks(moment: datetime | None) -> int:
    if moment is None:
        return int(MISSING)
    epoch = _EPOCH if moment.tzinfo is not None else _EPOCH.replace(tzinfo=None)
    return (moment - epoch) // _MICROSECOND


@dataclass(frozen=True, eq=False)
class JobFrame:
    """Jobs as columns. Times are int64 ticks (ticks_per_second of them a second), MISSING if unknown."""

    job_id: np.ndarray
    run_id: np.ndarray
    pr: np.ndarray  # the PR of the job's run, NO_CODE for pushes and schedules
    host: np.ndarray  # host code (hosts.host_of), NO_CODE when the runner is unknown
    start: np.ndarray
    end: np.ndarray
    conclusion: np.ndarray  # index into `conclusions`, NO_CODE while running
    name: np.ndarray  # index into `names` (any int code for array frames); per scope in scoped frames
    member_job: np.ndarray  # one row per (job, pool) membership: the job's position ...
    member_pool: np.ndarray  # ... and the pool code
    ticks_per_second: float = 1.0
    names: tuple[str, ...] = ()
    conclusions: tuple[str, ...] = CONCLUSIONS
    jobs: tuple[Job, ...] = ()  # the model values, when built from them (for OverlappingJob results)
    runs: Mapping[int, Run] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def one_pool_per_job(self) -> bool:
        return len(self.member_job) == len(self.job_id) and bool(
            np.array_equal(self.member_job, np.arange(len(self.job_id))))

    @classmethod
    def from_arrays(cls, *, job_id, run_id, pr, pool, host, start, end, conclusion, name,
                    ticks_per_second: float = 1.0, names: Sequence[str] = ()) -> JobFrame:
        """One pool per job. `conclusion` holds indexes into CONCLUSIONS (SUCCESS is 0), -1 for none."""
        columns = {key: _int64(value) for key, value in dict(
            job_id=job_id, run_id=run_id, pr=pr, host=host, start=start, end=end, conclusion=conclusion,
            name=name).items()}
        pools = _int64(pool)
        if any(len(column) != len(pools) for column in columns.values()):
            raise ValueError("every column needs one value per job")
        return cls(**columns, member_job=np.arange(len(pools), dtype=np.int64), member_pool=pools,
                   ticks_per_second=float(ticks_per_second), names=tuple(names))

    @classmethod
    def from_jobs(cls, jobs: Iterable[Job], runs: Mapping[int, Run],
                  pr_of_run: Mapping[int, int | None] | None = None,
                  host_pattern: re.Pattern[str] | None = None, scopes: Sequence[object] | None = None) -> JobFrame:
        """From model values; a run's PR is pr_of_run's (fork runs name none), else the run's first.
        `scopes` (one key per job, e.g. its workflow) keeps scopes apart: jobs of two scopes never share
        a pool, and a job name has a baseline per scope (`names` may then repeat a name)."""
        jobs = tuple(jobs)
        pools: dict[object, int] = {}
        hosts: dict[str, int] = {}
        names: dict[object, int] = {}
        labels: list[str] = []
        name_codes: list[int] = []
        conclusions = {value: code for code, value in enumerate(CONCLUSIONS)}
        member_job: list[int] = []
        member_pool: list[int] = []
        prs, host_codes = [], []
        for position, job in enumerate(jobs):
            scope = None if scopes is None else scopes[position]
            specific = pool_labels(job)
            keys = [(scope, "label", label) for label in sorted(specific)] if specific else \
                [(scope, "labels", frozenset(job.labels))]
            for key in keys:
                member_job.append(position)
                member_pool.append(pools.setdefault(key, len(pools)))
            if pr_of_run and job.run_id in pr_of_run:
                pr = pr_of_run[job.run_id]
            else:
                run = runs.get(job.run_id)
                pr = run.pr_numbers[0] if run and run.pr_numbers else None
            prs.append(NO_CODE if pr is None else pr)
            host = host_of(job.runner_name, host_pattern)
            host_codes.append(NO_CODE if host is None else hosts.setdefault(host, len(hosts)))
            if (scope, job.name) not in names:
                names[scope, job.name] = len(labels)
                labels.append(job.name)
            name_codes.append(names[scope, job.name])
            if job.conclusion is not None:
                conclusions.setdefault(job.conclusion, len(conclusions))
        return cls(
            job_id=_int64([j.id for j in jobs]), run_id=_int64([j.run_id for j in jobs]), pr=_int64(prs),
            host=_int64(host_codes), start=_int64([_ticks(j.started_at) for j in jobs]),
            end=_int64([_ticks(j.completed_at) for j in jobs]),
            conclusion=_int64([NO_CODE if j.conclusion is None else conclusions[j.conclusion] for j in jobs]),
            name=_int64(name_codes), member_job=_int64(member_job), member_pool=_int64(member_pool),
            ticks_per_second=1e6, names=tuple(labels), conclusions=tuple(conclusions), jobs=jobs, runs=dict(runs))

    def failed_mask(self) -> np.ndarray:
        mask = np.zeros(len(self.conclusion), dtype=bool)
        for code, value in enumerate(self.conclusions):  # a few comparisons beat np.isin's sort or table
            if value in FAILED_CONCLUSIONS:
                mask |= self.conclusion == code
        return mask


@dataclass(frozen=True, eq=False)
class Correlation:
    """Per failed job (in `failed` order) counts, and the kept rows as CSR arrays (offsets into rows).

    Overlap rows are same host first, then the longest overlap, then job id; later-pass rows in start
    order; in-flight PRs unordered. Job references are positions in the frame; `index` below is a
    failed job's place in `failed` (index_of finds it by job id, at_position by frame position).
    """

    frame: JobFrame
    failed: np.ndarray  # positions of the failed jobs, ascending
    overlap_count: np.ndarray  # all overlapping jobs of other runs on the pool, not only the kept ones
    overlap_offsets: np.ndarray
    overlap_job: np.ndarray
    overlap_ticks: np.ndarray
    overlap_same_host: np.ndarray
    in_flight_count: np.ndarray  # distinct other PRs with a job on the pool during the failed job
    in_flight_offsets: np.ndarray
    in_flight_pr: np.ndarray
    later_passed_count: np.ndarray  # successful jobs of other runs that started within the window after
    later_offsets: np.ndarray
    later_job: np.ndarray
    baseline_name: np.ndarray  # name codes with a baseline, ascending
    baseline_samples: np.ndarray
    baseline_median_s: np.ndarray
    baseline_spread_s: np.ndarray

    # --- arrays for one failed job ------------------------------------------------------------
    def index_of(self, job_id: int) -> int:
        positions = np.flatnonzero(self.frame.job_id[self.failed] == job_id)
        if not len(positions):
            raise KeyError(job_id)
        return int(positions[0])

    def at_position(self, position: int) -> int:
        index = int(np.searchsorted(self.failed, position))
        if index == len(self.failed) or self.failed[index] != position:
            raise KeyError(position)
        return index

    def overlaps_of(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lo, hi = self.overlap_offsets[index], self.overlap_offsets[index + 1]
        return self.overlap_job[lo:hi], self.overlap_ticks[lo:hi] / self.frame.ticks_per_second, \
            self.overlap_same_host[lo:hi]

    def in_flight_of(self, index: int) -> tuple[int, ...]:
        lo, hi = self.in_flight_offsets[index], self.in_flight_offsets[index + 1]
        return tuple(sorted(int(pr) for pr in self.in_flight_pr[lo:hi]))

    def later_of(self, index: int) -> np.ndarray:
        return self.later_job[self.later_offsets[index]:self.later_offsets[index + 1]]

    def baseline_of_name(self, name_code: int) -> DurationBaseline | None:
        at = np.searchsorted(self.baseline_name, name_code)
        if at == len(self.baseline_name) or self.baseline_name[at] != name_code:
            return None
        label = self.frame.names[name_code] if name_code < len(self.frame.names) else str(name_code)
        return DurationBaseline(label, int(self.baseline_samples[at]), float(self.baseline_median_s[at]),
                                float(self.baseline_spread_s[at]))

    def died_early(self, ratio: float = 0.85) -> np.ndarray:
        """frame_baselines.died_early for every failed job at once."""
        return died_early_of(self.frame, self.failed, self.baseline_name, self.baseline_samples,
                             self.baseline_median_s, self.baseline_spread_s, ratio)

    # --- model values, for frames built from Job values (what the service hands the policy) ---------
    def overlapping_jobs(self, job_id: int) -> tuple[OverlappingJob, ...]:
        return self.overlapping_at(self.index_of(job_id))

    def in_flight_prs(self, job_id: int) -> tuple[int, ...]:
        return self.in_flight_of(self.index_of(job_id))

    def later_jobs_passed(self, job_id: int) -> tuple[OverlappingJob, ...]:
        return self.later_passed_at(self.index_of(job_id))

    def baseline(self, job_name: str) -> DurationBaseline | None:  # by name: in a frame without scopes
        names = self.frame.names
        return self.baseline_of_name(names.index(job_name)) if job_name in names else None

    def overlapping_at(self, index: int) -> tuple[OverlappingJob, ...]:
        jobs, seconds, same_host = self.overlaps_of(index)
        return tuple(self._overlapping(int(j), float(s), bool(h), branch_from_job=True)
                     for j, s, h in zip(jobs, seconds, same_host))

    def later_passed_at(self, index: int) -> tuple[OverlappingJob, ...]:  # ordered by job id
        found = [self._overlapping(int(j), 0.0, False, branch_from_job=False) for j in self.later_of(index)]
        return tuple(sorted(found, key=lambda o: o.job_id))

    def baseline_at(self, index: int) -> DurationBaseline | None:  # of the failed job's name, in its scope
        return self.baseline_of_name(int(self.frame.name[self.failed[index]]))

    def _overlapping(self, position: int, seconds: float, same_host: bool, branch_from_job: bool) -> OverlappingJob:
        frame = self.frame
        if not frame.jobs:
            raise ValueError("this frame was built from arrays: use overlaps_of() and later_of()")
        other = frame.jobs[position]
        run = frame.runs.get(other.run_id)
        pr = int(frame.pr[position])
        branch = run.head_branch if run else (other.head_branch if branch_from_job else None)
        return OverlappingJob(None if pr == NO_CODE else pr, branch, other.run_id, other.id, other.name,
                              other.runner_name, seconds, other.conclusion, same_host, other.html_url)


# --- the correlation ----------------------------------------------------------------------------
def correlate(frame: JobFrame, *, failed: Iterable[int] | np.ndarray | None = None, window_s: float = 3600.0,
              cap: int | None = 50, chunk_pairs: int = 1 << 18, later: bool = True,
              baselines: bool = True, in_flight: bool = True) -> Correlation:
    """Correlate the failed jobs (positions in the frame; all failed jobs by default) with all jobs.

    `window_s` bounds a later pass's start after the failed job's end (gap_s <= window_s); `cap` bounds
    the overlaps and later passes kept per failed job (None keeps all); `chunk_pairs` bounds the
    candidate pairs held at once. later=False, baselines=False or in_flight=False leave those
    answers empty (runner health reads the overlaps only).
    """
    if failed is None:
        failed = np.flatnonzero(frame.failed_mask())
    else:
        failed = np.sort(_int64(failed if isinstance(failed, np.ndarray) else list(failed)))
        failed = failed[np.concatenate(([True], failed[1:] != failed[:-1]))] if len(failed) else failed
    nf = len(failed)
    member_job, member_pool = frame.member_job, frame.member_pool
    single = frame.one_pool_per_job
    row_start, row_end = (frame.start, frame.end) if single else (frame.start[member_job], frame.end[member_job])

    # The failed jobs' pool memberships ("queries"), in job order.
    if single:
        q_rows = failed
    else:
        q_rows = np.flatnonzero(np.isin(member_job, failed))
        q_rows = q_rows[np.argsort(member_job[q_rows], kind="stable")]
    q_job, q_pool = member_job[q_rows], member_pool[q_rows]
    q_index = np.searchsorted(failed, q_job)
    qs, qe = frame.start[q_job], frame.end[q_job]
    q_run, q_pr, q_host = frame.run_id[q_job], frame.pr[q_job], frame.host[q_job]
    nq = len(q_rows)

    # The one full sort: every membership with a start, by start (made once, when a pass needs it).
    sorted_rows: list[np.ndarray] = []

    def by_start() -> np.ndarray:
        if not sorted_rows:
            present = np.flatnonzero(row_start != MISSING)
            sorted_rows.append(present[np.argsort(row_start[present])])
        return sorted_rows[0]

    overlaps = _overlaps(frame, single, by_start, row_start, row_end, q_index, q_job, q_pool, qs, qe, q_run,
                         q_pr, q_host, nf, cap, chunk_pairs, in_flight)
    passes = _later(frame, single, by_start(), row_start, q_index, q_job, q_pool, qe, q_run, nf, nq,
                    _window_ticks(window_s, frame.ticks_per_second), cap) if later else \
        (np.zeros(nf, dtype=np.int64), np.zeros(nf + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    named = _baselines(frame) if baselines else \
        (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))
    return Correlation(frame, failed, *overlaps, *passes, *named)
