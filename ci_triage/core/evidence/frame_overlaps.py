"""The engine's two passes over the pairs (timeline_frame.correlate calls them): overlaps of the failed
jobs with every job on their pools, with the PRs in flight and the top overlaps kept, and the later
passes after each failure. timeline_frame's module doc says how each stays near O((n + k) log n).

`frame` is a timeline_frame.JobFrame (not imported: that module imports this one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ci_triage.core.evidence.frame_arrays import (
    _INT64_MAX,
    MISSING,
    _csr,
    _explode,
    _factorize,
    _first_per_group,
    _grouped_searchsorted,
    _segments,
    _stable_order,
    _top_per_group,
)

PACKED_BITS = 62  # (group, start, row) keys sorted as one int64 when their widths add up to this


def _overlaps(frame, single, by_start, row_start, row_end, q_index, q_job, q_pool, qs, qe, q_run, q_pr, q_host,
              nf, cap, chunk_pairs, in_flight=True):
    """`by_start()` gives every membership with a start, by start (computed once, when needed)."""
    member_job, member_pool = frame.member_job, frame.member_pool
    valid = (row_end != MISSING) & (row_end > row_start) & (row_start != MISSING)

    # PRs in flight: pm = latest end among the earlier jobs of the same PR on the pool (see module doc).
    pm_row = None
    if single and in_flight:
        in_time = by_start()
        in_time = in_time[valid[in_time]]  # memberships that can overlap anything, by start
        with_pr = in_time[frame.pr[member_job[in_time]] >= 0]
        pr_code = _factorize(frame.pr[member_job[with_pr]])
        code = member_pool[with_pr] * (int(pr_code.max(initial=0)) + 1) + pr_code
        order = _stable_order(code)
        with_pr, code = with_pr[order], code[order]
        seg_starts, seg_ends = _segments(code)
        ends = row_end[with_pr]
        running = np.empty_like(ends)
        if len(ends):
            seg_id = np.repeat(np.arange(len(seg_starts)), seg_ends - seg_starts)
            low, width = int(ends.min()), int(ends.max() - ends.min()) + 1
            if len(seg_starts) * width < 2**62:  # lift each segment above the previous: one running max
                lift = seg_id * width
                running = np.maximum.accumulate(ends - low + lift) - lift + low
            else:
                import pandas as pd  # a rare fallback: pandas stays off the report's path
                running = pd.Series(ends).groupby(seg_id).cummax().to_numpy()
        pm_sorted = np.empty_like(ends)
        pm_sorted[1:] = running[:-1]
        pm_sorted[seg_starts] = MISSING
        pm_row = np.full(len(member_job), MISSING, dtype=np.int64)
        pm_row[with_pr] = pm_sorted

    # Per pool and duration class, by start.
    rows, search, classes, low_bucket = _by_class(member_pool, row_start, row_end, valid, by_start)
    ov_job = rows if single else member_job[rows]

    nq = len(q_job)
    q_valid = (qs != MISSING) & (qe != MISSING) & (qe > qs)
    lo = np.zeros((nq, classes), dtype=np.int64)
    hi = np.zeros((nq, classes), dtype=np.int64)
    asking = np.flatnonzero(q_valid)
    if len(asking) and len(rows):
        # Every (asking membership, duration class): a job of class c lasts less than 2^(c + low_bucket)
        # ticks (frexp), so those overlapping [s, e) started in (s - 2^(c + low_bucket) + 1, e). A
        # missing (pool, class) group gives an empty range; the jobs of the range that ended before s
        # are dropped with the others below.
        wanted = (q_pool[asking, None] * classes + np.arange(classes)[None, :]).ravel()
        ask_row = np.repeat(asking, classes)
        longest = np.left_shift(1, np.arange(classes) + low_bucket) - 1
        first = search(wanted, qs[ask_row] - np.tile(longest, len(asking)), "right")
        lo[asking] = first.reshape(-1, classes)
        hi[asking] = np.maximum(first, search(wanted, qe[ask_row], "left")).reshape(-1, classes)

    key_of_job, job_bits = _job_keys(frame)
    deficit_bits = int((qe - qs)[q_valid].max(initial=0)).bit_length()
    composite = job_bits is not None and 1 + deficit_bits + job_bits <= 62

    count = np.zeros(nf, dtype=np.int64)
    in_flight_count = np.zeros(nf, dtype=np.int64)
    kept: list[tuple[np.ndarray, ...]] = [(np.zeros(0, dtype=np.int64),) * 4]
    flights: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0, dtype=np.int64),) * 2]
    total = np.cumsum((hi - lo).sum(axis=1))
    job_starts, job_ends = _segments(q_job)
    job_group_end = np.repeat(job_ends, job_ends - job_starts)  # never split one job's pools across chunks
    a = 0
    while a < nq:
        base = int(total[a - 1]) if a else 0
        b = int(np.searchsorted(total, base + chunk_pairs, side="right"))
        b = int(job_group_end[max(b, a + 1) - 1])
        owner, position = _explode(lo[a:b].ravel(), hi[a:b].ravel(), np.repeat(np.arange(a, b), classes))
        keep = (row_end[rows[position]] > qs[owner]) & (frame.run_id[ov_job[position]] != q_run[owner])
        owner, position = owner[keep], position[keep]
        f = q_index[owner]
        if not single:  # a job on several pools is found once per shared pool
            unique = np.unique(f * len(frame) + ov_job[position], return_index=True)[1]
            owner, position, f = owner[unique], position[unique], f[unique]
        jobs = ov_job[position]
        ticks = np.minimum(qe[owner], row_end[rows[position]]) - np.maximum(qs[owner], row_start[rows[position]])
        same_host = (q_host[owner] >= 0) & (frame.host[jobs] == q_host[owner])
        count += np.bincount(f, minlength=nf)

        prs = frame.pr[jobs]
        other_pr = (prs >= 0) & (prs != q_pr[owner])
        if not in_flight:
            flight_f = flight_pr = np.zeros(0, dtype=np.int64)
        elif pm_row is not None:
            first = other_pr & (pm_row[rows[position]] <= qs[owner])
            flight_f, flight_pr = f[first], prs[first]
        else:
            flight_f, flight_pr = f[other_pr], prs[other_pr]
            order = np.lexsort((flight_pr, flight_f))
            flight_f, flight_pr = flight_f[order], flight_pr[order]
            distinct = np.ones(len(flight_f), dtype=bool)
            distinct[1:] = (flight_f[1:] != flight_f[:-1]) | (flight_pr[1:] != flight_pr[:-1])
            flight_f, flight_pr = flight_f[distinct], flight_pr[distinct]
        in_flight_count += np.bincount(flight_f, minlength=nf)
        flights.append((flight_f, flight_pr))

        if composite:
            deficit = (qe[owner] - qs[owner]) - ticks  # >= 0: smaller is a longer overlap
            key = ((~same_host).astype(np.int64) << (deficit_bits + job_bits)) | (deficit << job_bits) | key_of_job[jobs]
            chosen = _top_per_group(f, key, cap)
        else:
            order = np.lexsort((frame.job_id[jobs], -ticks, ~same_host, f))
            chosen = order[_first_per_group(f[order], cap)]
        kept.append((f[chosen], jobs[chosen], ticks[chosen], same_host[chosen]))
        a = b

    kept_f, kept_job, kept_ticks, kept_host = (_concat(parts) for parts in zip(*kept))
    flight_f, flight_pr = (_concat(parts) for parts in zip(*flights))
    return (count, _csr(kept_f, nf), kept_job, kept_ticks, kept_host.astype(bool), in_flight_count,
            _csr(flight_f, nf), flight_pr)


def _by_class(member_pool, row_start, row_end, valid, by_start):
    """The memberships that can overlap anything, ordered by (pool, duration class, start); a search in
    that order (group codes pool * classes + class, a time, a side: searchsorted's meaning within the
    group); the number of classes and the first class's frexp exponent. One sort of packed
    (group, start, row) int64 keys when they fit in 62 bits, else a stable order of by_start()."""
    if valid.all():  # the usual case: no gathers
        candidates, duration, starts = np.arange(len(valid)), row_end - row_start, row_start
    else:
        candidates = np.flatnonzero(valid)
        duration, starts = row_end[candidates] - row_start[candidates], row_start[candidates]
    bucket = np.frexp(duration.astype(np.float64))[1].astype(np.int64)
    low_bucket = int(bucket.min()) if len(bucket) else 0
    classes = int(bucket.max(initial=0)) - low_bucket + 1
    group = (member_pool if len(candidates) == len(valid) else member_pool[candidates]) * classes
    group += bucket - low_bucket
    low = int(starts.min()) if len(starts) else 0
    group_bits = ((int(member_pool.max(initial=0)) + 1) * classes).bit_length()
    start_bits = (int(starts.max(initial=0)) - low + 1).bit_length()
    row_bits = len(valid).bit_length()
    if group_bits + start_bits + row_bits <= PACKED_BITS:
        key = group << (start_bits + row_bits)
        key |= (starts - low) << row_bits
        key |= candidates
        key.sort()
        shift, top = start_bits + row_bits, 1 << start_bits

        def search(groups: np.ndarray, times: np.ndarray, side: str) -> np.ndarray:
            # first index with (group, start) > (g, t) ("right") or >= (g, t) ("left"); sorted
            # queries let searchsorted start each search where the last one ended
            moved = np.clip(times - low + (side == "right"), 0, top)
            queries = (groups << shift) + (moved << row_bits)
            order = np.argsort(queries)
            found = np.empty(len(queries), dtype=np.int64)
            found[order] = np.searchsorted(key, queries[order], side="left")
            return found

        return key & ((1 << row_bits) - 1), search, classes, low_bucket
    in_time = by_start()
    in_time = in_time[valid[in_time]]
    # The group of each membership by row, read in start order; a stable order keeps start order within.
    group_of = np.zeros(len(valid), dtype=np.int64)
    group_of[candidates] = group
    order = _stable_order(group_of[in_time])
    rows = in_time[order]
    ordered_group, ordered_start = group_of[rows], row_start[rows]

    def search(groups: np.ndarray, times: np.ndarray, side: str) -> np.ndarray:
        return _grouped_searchsorted(ordered_group, ordered_start, groups, times, side)

    return rows, search, classes, low_bucket


def _concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _job_keys(frame) -> tuple[np.ndarray, int | None]:
    """An int per job ordered like job ids, and how many bits it takes."""
    if not len(frame):
        return np.zeros(0, dtype=np.int64), 0
    low = int(frame.job_id.min())
    span = int(frame.job_id.max()) - low
    if span < len(frame) * 4:
        return frame.job_id - low, span.bit_length()
    rank = np.empty(len(frame), dtype=np.int64)
    rank[np.argsort(frame.job_id, kind="stable")] = np.arange(len(frame))
    return rank, len(frame).bit_length()


def _later(frame, single, by_start, row_start, q_index, q_job, q_pool, qe, q_run, nf, nq, window, cap):
    member_job, member_pool = frame.member_job, frame.member_pool
    success = frame.conclusions.index("success") if "success" in frame.conclusions else -2
    passed_by_start = by_start[frame.conclusion[member_job[by_start]] == success]
    rows = passed_by_start[_stable_order(member_pool[passed_by_start])]
    l_pool, l_s = member_pool[rows], row_start[rows]
    l_job = member_job[rows]
    l_run = frame.run_id[l_job]

    asks = (qe != MISSING) & (window >= 0)
    ended = np.where(asks, qe, 0)
    until = ended + np.minimum(window if window >= 0 else 0, _INT64_MAX - np.maximum(ended, 0))
    lo = _grouped_searchsorted(l_pool, l_s, q_pool, ended, "left")
    hi = np.where(asks, _grouped_searchsorted(l_pool, l_s, q_pool, until, "right"), lo)

    if single:
        # The failed run's own jobs in the window, counted per (pool, run) the same way.
        run_code = _factorize(frame.run_id)
        runs = int(run_code.max(initial=0)) + 1
        own_code = member_pool[passed_by_start] * runs + run_code[member_job[passed_by_start]]
        order = _stable_order(own_code)
        own_group, own_s = own_code[order], row_start[passed_by_start][order]
        q_code = q_pool * runs + run_code[q_job]
        own = np.where(asks, _grouped_searchsorted(own_group, own_s, q_code, until, "right")
                       - _grouped_searchsorted(own_group, own_s, q_code, ended, "left"), 0)
        count = np.zeros(nf, dtype=np.int64)
        count[q_index] = (hi - lo) - own
        # The first `cap` jobs of other runs lie within the first cap + own of the window.
        take_hi = hi if cap is None else lo + np.minimum(hi - lo, cap + own)
        owner, position = _explode(lo, take_hi)
        keep = l_run[position] != q_run[owner]
        f, jobs = q_index[owner[keep]], l_job[position[keep]]
    else:
        owner, position = _explode(lo, hi)
        keep = l_run[position] != q_run[owner]
        owner, position = owner[keep], position[keep]
        f, jobs = q_index[owner], l_job[position]
        unique = np.unique(f * len(frame) + jobs, return_index=True)[1]
        f, jobs, starts = f[unique], jobs[unique], l_s[position[unique]]
        order = np.lexsort((frame.job_id[jobs], starts, f))
        f, jobs = f[order], jobs[order]
        count = np.bincount(f, minlength=nf).astype(np.int64)
    chosen = _first_per_group(f, cap)
    return count, _csr(f[chosen], nf), jobs[chosen]

