"""Array helpers of the correlation engine (timeline_frame): stable orders,
segments, grouped searches and per-group selections over numpy arrays."""

from __future__ import annotations

import math

import numpy as np

MISSING = np.iinfo(np.int64).min  # a start or end that GitHub did not report
_INT64_MAX = np.iinfo(np.int64).max
FACTORIZE_BY_HASH = 100_000



# --- helpers ------------------------------------------------------------------------------------
def _stable_order(codes: np.ndarray) -> np.ndarray:
    """Permutation sorting by code and keeping the order within a code (radix sort for small codes)."""
    if len(codes) and codes.min() >= 0 and codes.max() < 2**15:
        codes = codes.astype(np.int16)
    return np.argsort(codes, kind="stable")


def _factorize(values: np.ndarray) -> np.ndarray:
    """pandas.factorize's codes (0, 1, ... in order of first appearance) as int64. numpy sorts below
    FACTORIZE_BY_HASH values, so the report (small frames) never imports pandas; pandas hashes above it."""
    if len(values) >= FACTORIZE_BY_HASH:
        import pandas as pd

        return pd.factorize(values)[0].astype(np.int64)
    _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _segments(sorted_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of the runs of equal values in a sorted array."""
    if not len(sorted_codes):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    cuts = np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1
    return np.concatenate(([0], cuts)), np.concatenate((cuts, [len(sorted_codes)]))


def _explode(lo: np.ndarray, hi: np.ndarray, owners: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For ranges [lo, hi): (owner, position) of every position in them; owners default to range numbers."""
    lengths = np.maximum(hi - lo, 0)
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(lo)) if owners is None else owners, lengths)
    first = np.cumsum(lengths) - lengths
    position = np.arange(total, dtype=np.int64) - np.repeat(first - lo, lengths)
    return owner, position


def _grouped_searchsorted(group_sorted: np.ndarray, time_sorted: np.ndarray, query_group: np.ndarray,
                          query_time: np.ndarray, side: str) -> np.ndarray:
    """searchsorted of query_time inside the query's group, for arrays sorted by (group, time)."""
    if not len(time_sorted):
        return np.zeros(len(query_time), dtype=np.int64)
    low, high = int(time_sorted.min()), int(time_sorted.max())
    width = high - low + 3
    groups = int(max(group_sorted.max(), query_group.max() if len(query_group) else 0)) + 1
    if groups * width < 2**62:
        # One composite key: times clamped just outside the known range keep their place.
        key = group_sorted * width + (time_sorted - low + 1)
        clamped = np.clip(query_time, low - 1, high + 1)
        return np.searchsorted(key, query_group * width + (clamped - low + 1), side=side)
    # Too many groups or too long a span to share one int64 key: replace groups and times by ranks.
    groups = np.unique(np.concatenate((group_sorted, query_group)), return_inverse=True)[1]
    ranks = np.unique(np.concatenate((time_sorted, query_time)), return_inverse=True)[1]
    if (int(groups.max()) + 1) * (int(ranks.max()) + 3) >= 2**62:
        raise OverflowError("too many jobs to correlate in one frame")
    known = len(time_sorted)
    return _grouped_searchsorted(groups[:known], ranks[:known], groups[known:], ranks[known:], side)


def _window_ticks(window_s: float, ticks_per_second: float) -> int:
    """The largest gap in ticks that a later pass may start after a failed job ends (gap_s <= window_s)."""
    ticks = math.floor(window_s * ticks_per_second)
    while (ticks + 1) / ticks_per_second <= window_s:
        ticks += 1
    while ticks >= 0 and ticks / ticks_per_second > window_s:
        ticks -= 1
    return ticks


def _top_per_group(group: np.ndarray, key: np.ndarray, cap: int | None) -> np.ndarray:
    """Indexes of the `cap` smallest keys of each group (group non-decreasing), ordered by (group, key).

    Keys must be unique within a group. Groups of similar size are padded to one width and partitioned
    row-wise, which is cheaper than one sort of all pairs.
    """
    if not len(group):
        return np.zeros(0, dtype=np.int64)
    starts, ends = _segments(group)
    counts = ends - starts
    kept = counts if cap is None else np.minimum(counts, cap)
    out_first = np.cumsum(kept) - kept
    selected = np.empty(int(kept.sum()), dtype=np.int64)
    # Few widths (powers of two up to 32, then multiples of 32) and little padding.
    widths = np.where(counts <= 32, np.left_shift(1, np.ceil(np.log2(counts)).astype(np.int64)),
                      (counts + 31) // 32 * 32)
    for width in np.unique(widths):
        rows = np.flatnonzero(widths == width)
        columns = np.arange(width)
        present = columns[None, :] < counts[rows, None]
        where = starts[rows, None] + columns[None, :]
        matrix = np.full((len(rows), width), _INT64_MAX, dtype=np.int64)
        matrix[present] = key[where[present]]
        if cap is not None and width > cap:
            part = np.argpartition(matrix, cap - 1, axis=1)[:, :cap]
            order = np.take_along_axis(part, np.argsort(np.take_along_axis(matrix, part, axis=1), axis=1), axis=1)
        else:
            order = np.argsort(matrix, axis=1)
        take = np.arange(order.shape[1])[None, :] < kept[rows, None]
        destination = out_first[rows, None] + np.arange(order.shape[1])[None, :]
        selected[destination[take]] = (starts[rows, None] + order)[take]
    return selected


def _first_per_group(group: np.ndarray, cap: int | None) -> np.ndarray:
    """Indexes of the first `cap` items of each group (group non-decreasing)."""
    if cap is None or not len(group):
        return np.arange(len(group))
    starts, _ = _segments(group)
    rank = np.arange(len(group)) - np.repeat(starts, np.diff(np.concatenate((starts, [len(group)]))))
    return np.flatnonzero(rank < cap)


def _csr(group: np.ndarray, groups: int) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(np.bincount(group, minlength=groups)))).astype(np.int64)
