"""Every failed job at once -> exact counts; the few jobs a report shows -> their full lists.

A fleet-wide scan needs, per failed job, only numbers: how many jobs of other runs overlapped it on its
runner pool (and on its host), how many other PRs were in flight, how many jobs passed on the pool soon
after, and whether it died early. Only a displayed job needs the jobs themselves. count_correlations()
computes the numbers for all failed jobs without materialising a single pair; TimelineCounts.details()
expands the pairs (timeline_frame.Correlation) for the jobs asked for. Both equal timeline.py's answers
(tests/core/test_timeline_frame.py compares them with hypothesis).

The counts, for a failed job f = [s, e) on pool p (all intervals half-open, only jobs with s_j < e_j):
- Overlaps. j overlaps f iff s_j < e and e_j > s. A valid j with e_j <= s also has s_j < e_j <= s < e,
  so  #overlapping = #{s_j < e} - #{e_j <= s}: two searchsorted calls into the pool's starts and ends,
  each sorted once by (pool, time). f's own run is counted out by expanding only that run's jobs on
  the pool (cost: the sum of the failed jobs' run sizes). Same host: the same per (pool, host).
- Other PRs in flight, via the previous developer's pm: sort a PR's jobs on the pool by start; pm_j is
  the latest end among the jobs before j. j starts a new *component* iff pm_j < s_j; a component is
  then one interval [a, b) (its first start, its latest end), and PR P's jobs overlap f iff one of
  P's components does (the union of the jobs is the union of the components). Let K_P be the number
  of P's components that overlap f. They are consecutive (components are disjoint and ordered, f is an
  interval), so K_P - 1 (when K_P >= 1) is the number of P's gaps (b_c, a_c+1) between two overlapping
  components, and such a gap is exactly one with s < b_c and a_c+1 < e: "<=" each component of the
  pair overlaps f; "=>" a_c < b_c < a_c+1 < e and b_c+1 > a_c+1 > b_c > s. Hence
      #PRs with a job overlapping f = sum_P [K_P >= 1] = #components overlapping f - #gaps inside (s, e),
  the first term counted like overlaps, the second a 2-D dominance count (gaps of the pool sorted by b,
  those with b in (s, e) form an index range; count those with a < e in it) done with a wavelet matrix
  in O((g + q) log g) for g gaps and q failed jobs. f's own PR is one of them (f overlaps itself), so
  it is subtracted once. This needs the PR to be a property of the run, as it is for model values.
  No interval set can give the distinct count as a plain overlap count: a PR with components [0, 10)
  and [20, 30) must count once for [5, 25), but [5, 8) and [22, 25) would then hit the same interval,
  which [12, 15) (count 0) lies between.
- Later passes: successful jobs on the pool whose start is in [e, e + window], by searchsorted, minus
  the failed run's own (from the same run expansion).
- Died early: timeline.died_early against the per-name baselines (timeline_frame._baselines).

Frames where a job sits in several pools (several specific labels) are counted through details() for
every failed job, which deduplicates pairs: exact, but proportional to the pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ci_triage.core.evidence.count_index import (  # noqa: F401
    _count_below,
    _dense,
    _Index,
    _running_max,
    _Sorted,
)
from ci_triage.core.evidence.frame_arrays import _INT64_MAX
from ci_triage.core.evidence.timeline_frame import (
    MISSING,
    Correlation,
    JobFrame,
    _csr,
    _explode,
    _first_per_group,
    _int64,
    _segments,
    _window_ticks,
    died_early_of,
)
from ci_triage.model import OverlappingJob


@dataclass(frozen=True, eq=False)
class TimelineCounts:
    """Per failed job (positions in `failed`, ascending) the exact counts; lists on request."""

    frame: JobFrame
    failed: np.ndarray
    window_s: float
    overlap_count: np.ndarray  # jobs of other runs on the pool that ran while the failed job ran
    same_host_count: np.ndarray  # ... of which on the failed job's host
    in_flight_count: np.ndarray  # distinct other PRs with such a job
    later_passed_count: np.ndarray  # successful jobs of other runs that started within the window after
    index: _Index = field(repr=False)

    def index_of(self, job_id: int) -> int:
        return int(self._indexes_of([job_id])[0])

    def _indexes_of(self, job_ids: Iterable[int]) -> np.ndarray:
        if self.index.failed_ids is None:  # sorted once, for every later lookup
            ids = self.frame.job_id[self.failed]
            order = np.argsort(ids, kind="stable")
            self.index.failed_ids = (ids[order], order)
        ids, order = self.index.failed_ids
        wanted = _int64(list(job_ids))
        at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
        missing = wanted[(ids[at] != wanted) if len(ids) else np.ones(len(wanted), dtype=bool)]
        if len(missing):
            raise KeyError(int(missing[0]))
        return order[at]

    def died_early(self, ratio: float = 0.85) -> np.ndarray:
        """timeline.died_early for every failed job at once."""
        return died_early_of(self.frame, self.failed, *self.index.baselines, ratio)

    def details(self, job_ids: Iterable[int] | None = None, *, positions: Iterable[int] | None = None,
                cap: int | None = None) -> Correlation:
        """The lists of the given failed jobs (by id, or by position in the frame), in timeline.py's order."""
        wanted = [] if positions is None else list(positions)
        chosen = np.concatenate((_int64(wanted), self.failed[self._indexes_of(job_ids or ())]))
        result, _ = _details(self.index, np.unique(chosen), self.window_s, cap)
        return result

    def overlapping_jobs(self, job_id: int) -> tuple[OverlappingJob, ...]:
        return self.details([job_id]).overlapping_jobs(job_id)

    def in_flight_prs(self, job_id: int) -> tuple[int, ...]:
        return self.details([job_id]).in_flight_prs(job_id)

    def later_jobs_passed(self, job_id: int) -> tuple[OverlappingJob, ...]:
        return self.details([job_id]).later_jobs_passed(job_id)


def count_correlations(frame: JobFrame, *, failed: Iterable[int] | np.ndarray | None = None,
                       window_s: float = 3600.0) -> TimelineCounts:
    """The counts for the failed jobs (positions; all failed jobs by default) against all jobs."""
    failed = np.flatnonzero(frame.failed_mask()) if failed is None else np.unique(_int64(list(failed)))
    index = _Index.build(frame)
    if not frame.one_pool_per_job:
        _, counts = _details(index, failed, window_s, 0)
        return TimelineCounts(frame, failed, window_s, *counts, index)
    # Work in (pool, start) order: every searchsorted below then reads its sorted array front to back.
    order = _query_order(index.pool[failed], frame.start[failed])
    counts = _pool_counts(frame, index, failed[order], window_s)
    for column in counts:
        column[order] = column.copy()
    return TimelineCounts(frame, failed, window_s, *counts, index)


def _query_order(group: np.ndarray, time: np.ndarray) -> np.ndarray:
    """A permutation sorting queries by (group >= 0, time). Only speed depends on it (sorted queries make
    searchsorted walk memory in order), so a missing time simply sorts first."""
    known = time != MISSING
    if not known.any():
        return np.arange(len(time))
    low, high = int(time[known].min()), int(time[known].max())
    time_bits, index_bits = (high - low + 2).bit_length(), len(time).bit_length()
    if int(group.max()).bit_length() + time_bits + index_bits > 63:
        return np.lexsort((time, group))
    slot = np.where(known, time - low + 1, 0)
    packed = np.sort((((group << time_bits) | slot) << index_bits) | np.arange(len(time)))
    return packed & ((1 << index_bits) - 1)


def _compact(code: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """Renumber group codes 0..k-1 (order kept), so that they take fewer bits in a packed key."""
    if not len(code):
        return code, 1
    if bound <= 4 * len(code) + 4096:  # a presence table is cheaper than a sort
        present = np.zeros(bound, dtype=bool)
        present[code] = True
        rank = np.cumsum(present) - 1
        return rank[code], max(int(rank[-1]) + 1, 1)
    uniques, inverse = np.unique(code, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), len(uniques)


def _pool_counts(frame: JobFrame, index: _Index, failed: np.ndarray, window_s: float) -> list[np.ndarray]:
    nf, n = len(failed), len(frame)
    pool, start, end, host = index.pool, frame.start, frame.end, frame.host
    fs, fe = start[failed], end[failed]
    q = np.flatnonzero((fs != MISSING) & (fe != MISSING) & (fe > fs))
    qp, qs, qe = pool[failed[q]], fs[q], fe[q]
    valid = index.valid

    # The failed runs' own jobs on the pool: expanded, they are few.
    own_overlap, own_host, own_later = _own_run(frame, index, failed, valid, window_s)

    # Overlaps on the pool.
    by_end = _Sorted(pool, end, None, index.pools, n, mask=valid)
    by_end_high = by_end.high
    overlap = np.zeros(nf, dtype=np.int64)
    overlap[q] = index.starts.count_lt(qp, qe) - by_end.count_le(qp, qs)
    overlap -= own_overlap

    # Overlaps on the same host of the pool: groups (pool, host), renumbered densely for narrow keys.
    same_host = np.zeros(nf, dtype=np.int64)
    with_host = q[host[failed[q]] >= 0]
    if len(with_host):
        hosted = valid & (host >= 0)
        rows = np.flatnonzero(hosted)
        low_host = int(host[rows].min())
        span = int(host[rows].max()) - low_host + 1
        if index.pools * span < 2**62:  # rows without a host get some code: they are masked out anyway
            code, bound = _compact(pool * span + np.clip(host - low_host, 0, span - 1), index.pools * span)
        else:
            code, bound = _dense(pool, np.clip(host, low_host, low_host + span - 1))
        group, hs, he = code[failed[with_host]], fs[with_host], fe[with_host]
        by_start = _Sorted(code, start, None, bound, n, mask=hosted)
        by_end = _Sorted(code, end, None, bound, n, mask=hosted)
        asked = _query_order(group, hs)
        group, hs, he = group[asked], hs[asked], he[asked]
        same_host[with_host[asked]] = by_start.count_lt(group, he) - by_end.count_le(group, hs)
    same_host -= own_host

    in_flight = np.zeros(nf, dtype=np.int64)
    # Valid starts are among the index's starts and valid ends among by_end's: their ranges bound the times.
    in_flight[q] = _prs_in_flight(frame, index, valid, qp, qs, qe, index.starts.low, by_end_high) - (
        frame.pr[failed[q]] >= 0)

    # Later passes on the pool.
    window = _window_ticks(window_s, frame.ticks_per_second)
    later = np.zeros(nf, dtype=np.int64)
    if window >= 0:
        ended = np.flatnonzero(fe != MISSING)
        until = fe[ended] + np.minimum(window, _INT64_MAX - np.maximum(fe[ended], 0))
        group = pool[failed[ended]]
        later[ended] = index.passed.count_le(group, until) - index.passed.count_lt(group, fe[ended])
    later -= own_later
    return [overlap, same_host, in_flight, later]


def _own_run(frame, index, failed, valid, window_s, chunk_pairs: int = 1 << 20):
    """Per failed job: its own run's jobs on its pool that overlap it, of those on its host, and later passes."""
    nf = len(failed)
    run_pool, bound = _dense(index.pool, frame.run_id)
    # Only the runs with a failed job matter, numbered 1..runs (0: no failed job); a job without a start
    # neither overlaps nor passes, so it is left out.
    failed_run = run_pool[failed]
    marked = np.sort(failed_run)  # np.unique, without its overhead
    marked = marked[np.concatenate(([True], marked[1:] != marked[:-1]))] if len(marked) else marked
    runs = len(marked)
    run_of = np.zeros(bound, dtype=np.int32)
    run_of[marked] = np.arange(1, runs + 1, dtype=np.int32)
    member_run = run_of[run_pool]
    members = np.flatnonzero((member_run > 0) & (frame.start != MISSING))
    member_run = member_run[members].astype(np.int64) - 1
    failed_run = run_of[failed_run] - 1
    members_per_run = np.bincount(member_run, minlength=runs)
    hi = np.cumsum(members_per_run)[failed_run]
    lo = hi - members_per_run[failed_run]
    member_start, member_end, member_host, passed_start = _members_by_run(frame, valid, members, member_run, runs)

    # Sentinels instead of masks: a missing or empty interval can never satisfy the comparisons below.
    low, high = np.iinfo(np.int64).min, _INT64_MAX
    f_valid = valid[failed]
    f_start, f_end = np.where(f_valid, frame.start[failed], high), np.where(f_valid, frame.end[failed], low)
    f_host = np.where(frame.host[failed] >= 0, frame.host[failed], -2)
    window = _window_ticks(window_s, frame.ticks_per_second)
    ended = frame.end[failed]
    asks = (ended != MISSING) & (window >= 0)
    after = np.where(asks, ended, high)
    until = np.where(asks, ended + np.minimum(max(window, 0), high - np.maximum(ended, 0)), low)

    counts = [np.zeros(nf, dtype=np.int64) for _ in range(3)]
    total = np.cumsum(hi - lo)
    a = 0
    while a < nf:
        b = max(a + 1, int(np.searchsorted(total, (total[a - 1] if a else 0) + chunk_pairs, "right")))
        lengths = hi[a:b] - lo[a:b]
        cuts = np.concatenate(([0], np.cumsum(lengths)))  # pairs of failed job a + i: cuts[i]..cuts[i + 1]
        _, position = _explode(lo[a:b], hi[a:b])

        def per_failed(hit: np.ndarray) -> np.ndarray:
            running = np.concatenate(([0], np.cumsum(hit, dtype=np.int32)))  # chunks hold < 2**31 pairs
            return running[cuts[1:]] - running[cuts[:-1]]

        overlaps = (member_start[position] < np.repeat(f_end[a:b], lengths)) & (
            member_end[position] > np.repeat(f_start[a:b], lengths))
        counts[0][a:b] = per_failed(overlaps)
        counts[1][a:b] = per_failed(overlaps & (member_host[position] == np.repeat(f_host[a:b], lengths)))
        passed = passed_start[position]
        counts[2][a:b] = per_failed((passed >= np.repeat(after[a:b], lengths))
                                    & (passed <= np.repeat(until[a:b], lengths)))
        a = b
    return counts


def _members_by_run(frame, valid, members, member_run, runs):
    """The members' start, end, host and passed start, ordered by run, with the sentinels of _own_run.

    When the bits allow, (run, start, duration, host, passed) is packed into one int64 and sorted: the
    columns then come back out of the key instead of through random reads of the frame.
    """
    low, high = np.iinfo(np.int64).min, _INT64_MAX
    start, end, host = frame.start[members], frame.end[members], frame.host[members]
    usable = valid[members]
    success = frame.conclusions.index("success") if "success" in frame.conclusions else -2
    passed = frame.conclusion[members] == success
    if len(members):
        first, duration = int(start.min()), np.where(usable, end - start, 0)
        hosted = host >= 0
        first_host = int(host[hosted].min()) if hosted.any() else 0
        host_code = np.where(hosted, host - first_host + 1, 0)
        widths = [max(runs - 1, 0).bit_length(), (int(start.max()) - first).bit_length(),
                  int(duration.max()).bit_length(), int(host_code.max()).bit_length(), 1]
        if sum(widths) <= 63:
            shifts = np.cumsum(widths[::-1])[::-1] - widths  # where each field starts, from the right
            key = member_run << int(shifts[0])
            for value, shift in zip((start - first, duration, host_code, passed), shifts[1:]):
                key |= value.astype(np.int64) << int(shift)
            key = np.sort(key)
            start = ((key >> int(shifts[1])) & ((1 << widths[1]) - 1)) + first
            duration = (key >> int(shifts[2])) & ((1 << widths[2]) - 1)
            host_code = (key >> int(shifts[3])) & ((1 << widths[3]) - 1)
            passed = (key & 1) == 1
            return (np.where(duration > 0, start, high), np.where(duration > 0, start + duration, low),
                    np.where(host_code > 0, host_code - 1 + first_host, -1), np.where(passed, start, low))
    order = np.argsort(member_run, kind="stable")
    start, end, host, usable, passed = start[order], end[order], host[order], usable[order], passed[order]
    return (np.where(usable, start, high), np.where(usable, end, low), np.where(host >= 0, host, -1),
            np.where(passed, start, low))


def _components(frame, index, with_pr, low, high):
    """The PRs' components on their pools (see the module doc): (group, pool, a, b), by (group, a).

    `with_pr` marks the valid rows with a PR, whose times lie in [low, high]. One sort of (pool, PR,
    start, end) packed into an int64 when the bits allow (left-out rows get the largest key and are cut
    off); then the latest end so far, lifted by the group, is a single running maximum.
    """
    time_bits = (high - low).bit_length()
    pr_bits, pool_bits = int(frame.pr.max()).bit_length(), (index.pools - 1).bit_length()
    if pool_bits + pr_bits + 2 * time_bits <= 63:
        key = index.pool << pr_bits
        key |= frame.pr  # only rows with a PR (>= 0) are kept
        key <<= time_bits
        offset = frame.start - low
        key |= offset
        key <<= time_bits
        np.subtract(frame.end, low, out=offset)
        key |= offset
        key[~with_pr] = _INT64_MAX
        key.sort()
        packed = key[:int(np.count_nonzero(with_pr))]
        mask = (1 << time_bits) - 1
        group_start = packed >> time_bits  # (group, start) and (group, end) compare like the times
        running = group_start >> time_bits
        running <<= time_bits
        running |= packed & mask
        np.maximum.accumulate(running, out=running)
        first = np.flatnonzero(np.concatenate(([True], running[:-1] < group_start[1:])))
        last = np.concatenate((first[1:], [len(packed)])) - 1
        comp_group = group_start[first] >> time_bits
        return comp_group, comp_group >> pr_bits, (group_start[first] & mask) + low, (running[last] & mask) + low
    rows = np.flatnonzero(with_pr)
    pool, pr = index.pool[rows], frame.pr[rows]
    starts, ends = frame.start[rows], frame.end[rows]
    group, bound = _dense(pool, pr)
    ordered = np.lexsort((starts, group))
    group, starts, ends = group[ordered], starts[ordered], ends[ordered]
    seg_first, seg_end = _segments(group)
    segment = np.repeat(np.arange(len(seg_first)), seg_end - seg_first)
    running = _running_max(ends, segment)
    before = np.full(len(rows), MISSING, dtype=np.int64)  # pm: latest end among the PR's earlier jobs
    before[1:] = running[:-1]
    before[seg_first] = MISSING
    first = np.flatnonzero(before < starts)  # components: a job no earlier job of the PR still covers
    last = np.concatenate((first[1:], [len(rows)])) - 1
    return group[first], pool[ordered[first]], starts[first], running[last]


def _prs_in_flight(frame, index, valid, qp, qs, qe, low, high) -> np.ndarray:
    """Distinct PRs (own included) with a job on the pool overlapping [qs, qe): components minus gaps.

    The valid rows' times lie in [low, high]."""
    with_pr = valid & (frame.pr >= 0)
    if not with_pr.any():
        return np.zeros(len(qp), dtype=np.int64)
    comp_group, comp_pool, comp_a, comp_b = _components(frame, index, with_pr, low, high)
    by_a = _Sorted(comp_pool, comp_a, None, index.pools, len(comp_a))
    by_b = _Sorted(comp_pool, comp_b, None, index.pools, len(comp_a))
    hits = by_a.count_lt(qp, qe) - by_b.count_le(qp, qs)

    inner = np.flatnonzero(comp_group[1:] == comp_group[:-1])  # gap between components inner, inner + 1
    gap_b, gap_a, gap_pool = comp_b[inner], comp_a[inner + 1], comp_pool[inner]
    if not len(inner):
        return hits
    by_b = _Sorted(gap_pool, gap_b, np.arange(len(inner)), index.pools, len(inner))
    lo, hi = by_b.count_le(qp, qs), by_b.count_lt(qp, qe)  # gaps with b in (s, e)
    inside = _count_below(gap_a[by_b.rows()], lo, hi, qe)
    return hits - inside


def _first_occurrences(values: np.ndarray) -> np.ndarray:
    """np.unique(values, return_index=True)[1] (first position of each distinct value, by value), cheaper."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.ones(len(values), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return order[first]


def _details(index: _Index, failed: np.ndarray, window_s: float, cap: int | None):
    """The pairs of the given failed jobs, as a Correlation, and (overlap, same-host, in-flight, later) counts."""
    frame = index.frame
    n, nf = len(frame), len(failed)
    member_job = frame.member_job
    if frame.one_pool_per_job:
        q_rows = failed
    else:
        q_rows = np.flatnonzero(np.isin(member_job, failed))
    q_job, q_pool = member_job[q_rows], index.pool[q_rows]
    q_index = np.searchsorted(failed, q_job)
    qs, qe = frame.start[q_job], frame.end[q_job]
    asks = (qs != MISSING) & (qe != MISSING) & (qe > qs)

    # Candidates started after s - (longest job on the pool) and before e.
    earliest = qs - index.longest_per_pool()[q_pool] if len(q_pool) else qs
    lo = np.where(asks, index.starts.count_le(q_pool, earliest), 0)
    hi = np.where(asks, index.starts.count_lt(q_pool, qe), 0)
    owner, position = _explode(lo, np.maximum(lo, hi))
    jobs = member_job[index.starts.rows()[position]]
    keep = (frame.end[jobs] > qs[owner]) & (frame.run_id[jobs] != frame.run_id[q_job[owner]])
    owner, jobs = owner[keep], jobs[keep]
    f = q_index[owner]
    unique = _first_occurrences(f * n + jobs)  # a job sharing several pools counts once
    owner, jobs, f = owner[unique], jobs[unique], f[unique]
    failed_job = q_job[owner]
    ticks = np.minimum(frame.end[failed_job], frame.end[jobs]) - np.maximum(frame.start[failed_job],
                                                                            frame.start[jobs])
    same_host = (frame.host[failed_job] >= 0) & (frame.host[jobs] == frame.host[failed_job])
    order = np.lexsort((frame.job_id[jobs], -ticks, ~same_host, f))
    f, jobs, ticks, same_host = f[order], jobs[order], ticks[order], same_host[order]
    chosen = _first_per_group(f, cap)
    overlap_count = np.bincount(f, minlength=nf)
    same_host_count = np.bincount(f[same_host], minlength=nf)

    prs, own = frame.pr[jobs], frame.pr[failed[f]]
    other = (prs >= 0) & (prs != own)
    flight_f, flight_pr = f[other], prs[other]
    pr_bits = int(flight_pr.max(initial=0)).bit_length()
    if int(flight_f.max(initial=0)).bit_length() + pr_bits <= 63:  # distinct (f, pr), by (f, pr)
        pairs = np.sort((flight_f << pr_bits) | flight_pr)
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))] if len(pairs) else pairs
        flight_f, flight_pr = pairs >> pr_bits, pairs & ((1 << pr_bits) - 1)
    else:
        order = np.lexsort((flight_pr, flight_f))
        flight_f, flight_pr = flight_f[order], flight_pr[order]
        distinct = np.ones(len(flight_f), dtype=bool)
        distinct[1:] = (flight_f[1:] != flight_f[:-1]) | (flight_pr[1:] != flight_pr[:-1])
        flight_f, flight_pr = flight_f[distinct], flight_pr[distinct]

    window = _window_ticks(window_s, frame.ticks_per_second)
    ended = (qe != MISSING) & (window >= 0)
    until = np.where(ended, qe, 0) + np.minimum(max(window, 0), _INT64_MAX - np.maximum(np.where(ended, qe, 0), 0))
    lo = np.where(ended, index.passed.count_lt(q_pool, qe), 0)
    hi = np.where(ended, index.passed.count_le(q_pool, until), 0)
    owner, position = _explode(lo, np.maximum(lo, hi))
    later = member_job[index.passed.rows()[position]]
    keep = frame.run_id[later] != frame.run_id[q_job[owner]]
    later_f, later = q_index[owner[keep]], later[keep]
    unique = _first_occurrences(later_f * n + later)
    later_f, later = later_f[unique], later[unique]
    order = np.lexsort((frame.job_id[later], frame.start[later], later_f))
    later_f, later = later_f[order], later[order]
    later_count = np.bincount(later_f, minlength=nf)
    picked = _first_per_group(later_f, cap)

    result = Correlation(frame, failed, overlap_count, _csr(f[chosen], nf), jobs[chosen], ticks[chosen],
                         same_host[chosen], np.bincount(flight_f, minlength=nf), _csr(flight_f, nf), flight_pr,
                         later_count, _csr(later_f[picked], nf), later[picked], *index.baselines)
    return result, (overlap_count, same_host_count, result.in_flight_count, later_count)
