"""The sorted indexes timeline_counts answers its counting queries from: dense keys, grouped sorted
columns, counts below a bound and running maxima."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ci_triage.core.evidence.frame_arrays import _INT64_MAX
from ci_triage.core.evidence.timeline_frame import (
    MISSING,
    JobFrame,
    _baselines,
)


def _dense(*columns: np.ndarray) -> tuple[np.ndarray, int]:
    """One code >= 0 per row for the tuple of columns (equal tuples, equal codes) and a bound on them.

    The bound stays below 4 * rows + 4096, so that tables indexed by code grow with the rows.
    """
    code, bound = np.zeros(len(columns[0]), dtype=np.int64), 1
    for column in columns:
        low = int(column.min()) if len(column) else 0
        span = int(column.max()) - low + 1 if len(column) else 1
        if bound * span < 2**31:  # small enough to share an int64 key with a time and a row
            if bound == 1:
                code = column - low
            else:
                code *= span
                code += column
                code -= low
            bound *= span
        else:
            uniques, inverse = np.unique(np.stack((code, column), axis=1), axis=0, return_inverse=True)
            code, bound = inverse.reshape(-1).astype(np.int64), max(len(uniques), 1)
    if bound > 4 * len(code) + 4096:
        uniques, inverse = np.unique(code, return_inverse=True)
        code, bound = inverse.reshape(-1).astype(np.int64), max(len(uniques), 1)
    return code, bound


def _search(sorted_keys: np.ndarray, prekeys: np.ndarray, shift: int) -> np.ndarray:
    """searchsorted(sorted_keys, prekeys << shift) (side="left"), the queries sorted first when they are not:
    sorted queries walk memory in order, several times faster than random ones for 10^5 queries into 10^6
    keys, and one packed sort of the queries costs less than the difference."""
    if len(prekeys) < 4096 or bool(np.all(prekeys[1:] >= prekeys[:-1])):
        return np.searchsorted(sorted_keys, (prekeys << shift).astype(sorted_keys.dtype))
    index_bits = len(prekeys).bit_length()
    low = int(prekeys.min())
    if (int(prekeys.max()) - low).bit_length() + index_bits <= 63:
        packed = prekeys - low
        packed <<= index_bits
        packed |= np.arange(len(prekeys))
        packed.sort()
        order = packed & ((1 << index_bits) - 1)
        packed >>= index_bits
        packed += low
    else:
        order = np.argsort(prekeys)
        packed = prekeys[order]
    found = np.empty(len(prekeys), dtype=np.int64)
    found[order] = np.searchsorted(sorted_keys, (packed << shift).astype(sorted_keys.dtype))
    return found


class _Sorted:
    """Rows sorted by (group, time); counts "rows of group g with time < t (or <= t)" as global positions.

    Two such structures over the same rows per group give positions whose difference is a count within
    the group. When the bits allow, (group, time, row) is packed into one int64 (np.sort is cheaper
    than argsort, and shifts cheaper than division); without rows, into an int32 when it fits.
    `flag_bits` low bits of each row are flags that subset() selects on: one sort serves several subsets.
    """

    def __init__(self, group: np.ndarray, time: np.ndarray, rows: np.ndarray | None, groups: int, n_rows: int,
                 flag_bits: int = 0, mask: np.ndarray | None = None):
        """`mask` (optional) keeps only some of the rows: cheaper than compressing every column first."""
        self.ranks = None
        self.flag_bits = flag_bits
        if mask is not None:  # left-out rows get a time in range now and the largest key below
            time = np.where(mask, time, _INT64_MAX)
            low = int(time.min()) if len(time) else 0
            time[~mask] = low
            high = int(time.max()) if len(time) else 0
            kept = int(np.count_nonzero(mask))
        else:
            low, high = (int(time.min()), int(time.max())) if len(time) else (0, 0)
            kept = len(time)
        self.low, self.high = low, high
        group_bits = max(groups, 1).bit_length()
        self.time_bits = (high - low + 3).bit_length()
        self.row_bits = max(n_rows, 1).bit_length()
        self.dtype = np.int64
        self._rows: np.ndarray | None = None
        self._raw: np.ndarray | None = None  # rows with their flags, when not packed into the keys
        if group_bits + self.time_bits > 62:  # times too far apart for one key: use their ranks
            self.ranks = np.unique(time)
            self.time_bits = (len(self.ranks) + 1).bit_length()
            key = (group << self.time_bits) | np.searchsorted(self.ranks, time)
        elif rows is None and group_bits + self.time_bits <= 31:  # counts only: the narrowest key sorts fastest
            self.dtype = np.int32
            key = np.subtract(time, low - 1, out=np.empty(len(time), dtype=np.int32), casting="unsafe")
            shifted = group.astype(np.int32)
            shifted <<= self.time_bits
            key |= shifted
        else:
            key = time - (low - 1)
            key |= group << self.time_bits
        if rows is not None and group_bits + self.time_bits + self.row_bits <= 63:
            key <<= self.row_bits
            key |= rows
            rows = None
        else:
            self.row_bits = 0
        if mask is not None:
            key[~mask] = np.iinfo(key.dtype).max
        if rows is None:
            key.sort()
            self.keys = key[:kept]
        else:
            order = np.argsort(key, kind="stable")[:kept]
            self.keys, self._raw = key[order], rows[order]

    def rows(self) -> np.ndarray:
        if self._rows is None:
            raw = self.keys & ((1 << self.row_bits) - 1) if self._raw is None else self._raw
            self._rows = raw >> self.flag_bits if self.flag_bits else raw
        return self._rows

    def subset(self, flag: int) -> _Sorted:
        """The rows whose flag number `flag` (0: lowest) is set, in the same order."""
        chosen = copy.copy(self)
        raw = self.keys if self._raw is None else self._raw
        keep = (raw & (1 << flag)) != 0
        chosen.keys, chosen._rows = self.keys[keep], None
        chosen._raw = None if self._raw is None else self._raw[keep]
        return chosen

    def _query(self, group: np.ndarray, time: np.ndarray, inclusive: bool) -> np.ndarray:
        if self.ranks is not None:
            slot = np.searchsorted(self.ranks, time, side="right" if inclusive else "left")
        else:
            slot = np.clip(time, self.low - 1, self.high + 1) - self.low + 1 + int(inclusive)
        return _search(self.keys, (group << self.time_bits) + slot, self.row_bits)

    def count_lt(self, group: np.ndarray, time: np.ndarray) -> np.ndarray:
        return self._query(group, time, False)

    def count_le(self, group: np.ndarray, time: np.ndarray) -> np.ndarray:
        return self._query(group, time, True)


def _count_below(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """#{i in [lo_q, hi_q): values[i] < limit_q} for every query q: a wavelet matrix over value ranks."""
    found = np.zeros(len(lo), dtype=np.int64)
    if not len(values) or not len(lo):
        return found
    ordered = np.sort(values)
    current = np.searchsorted(ordered, values)  # ranks in [0, n); values[i] < limit iff rank < bound
    asked = np.flatnonzero(hi > lo)  # most failed jobs have no gap of their pool inside them
    lo, hi, bound = lo[asked].astype(np.int64), hi[asked].astype(np.int64), np.searchsorted(ordered, limit[asked])
    inside = np.zeros(len(asked), dtype=np.int64)
    for level in range(int(len(values)).bit_length() - 1, -1, -1):
        bit = (current >> level) & 1
        zeros = np.concatenate(([0], np.cumsum(1 - bit)))
        total_zeros = zeros[-1]
        take_zeros = ((bound >> level) & 1) == 1  # bound has a one here: the zero side lies below it
        zero_lo, zero_hi = zeros[lo], zeros[hi]
        inside += np.where(take_zeros, zero_hi - zero_lo, 0)
        lo = np.where(take_zeros, total_zeros + lo - zero_lo, zero_lo)
        hi = np.where(take_zeros, total_zeros + hi - zero_hi, zero_hi)
        current = np.concatenate((current[bit == 0], current[bit == 1]))
    found[asked] = inside
    return found


def _running_max(ends: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Running maximum of ends within each segment (segment ids non-decreasing)."""
    if not len(ends):
        return ends.copy()
    low, width = int(ends.min()), int(ends.max()) - int(ends.min()) + 1
    if (int(segment[-1]) + 1) * width < 2**62:  # lift each segment above the previous: one running max
        lift = segment * width
        return np.maximum.accumulate(ends - low + lift) - lift + low
    return pd.Series(ends).groupby(segment).cummax().to_numpy()


@dataclass
class _Index:
    """Sorted structures shared by the counts pass and details(), built once per frame."""

    frame: JobFrame
    pool: np.ndarray  # dense pool code per membership row
    pools: int
    row_start: np.ndarray
    row_end: np.ndarray
    valid: np.ndarray  # per membership row: start and end known, end > start
    starts: _Sorted  # valid memberships by (pool, start)
    passed: _Sorted  # successful memberships with a start, by (pool, start)
    baselines: tuple[np.ndarray, ...]
    longest: np.ndarray | None = None  # longest valid duration per pool
    failed_ids: tuple[np.ndarray, np.ndarray] | None = None  # failed job ids sorted, and their order

    @classmethod
    def build(cls, frame: JobFrame) -> _Index:
        member_job = frame.member_job
        pool, pools = _dense(frame.member_pool)
        single = frame.one_pool_per_job
        row_start, row_end = (frame.start, frame.end) if single else (frame.start[member_job], frame.end[member_job])
        rows = len(member_job)
        valid_row = (row_start != MISSING) & (row_end != MISSING) & (row_end > row_start)
        success = frame.conclusions.index("success") if "success" in frame.conclusions else -2
        conclusion = frame.conclusion if single else frame.conclusion[member_job]
        passed_row = (conclusion == success) & (row_start != MISSING)
        # One sort serves both: flag 1 marks the valid rows, flag 0 the passes.
        flagged = np.arange(rows, dtype=np.int64) << 2
        flagged |= valid_row.view(np.int8) << 1
        flagged |= passed_row.view(np.int8)
        both = _Sorted(pool, row_start, flagged, pools, rows << 2, flag_bits=2, mask=valid_row | passed_row)
        return cls(frame, pool, pools, row_start, row_end, valid_row, both.subset(1), both.subset(0),
                   _baselines(frame))

    def longest_per_pool(self) -> np.ndarray:
        if self.longest is None:
            rows = self.starts.rows()
            self.longest = np.zeros(self.pools, dtype=np.int64)
            np.maximum.at(self.longest, self.pool[rows], self.row_end[rows] - self.row_start[rows])
        return self.longest
