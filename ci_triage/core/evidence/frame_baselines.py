"""Duration baselines: the median duration of each job name's successful runs, and which failures died
well before it.

`frame` is a timeline_frame.JobFrame (not imported: that module imports this one). pandas is imported
only for frames with thousands of job names.
"""

from __future__ import annotations

import numpy as np

from ci_triage.core.evidence.frame_arrays import MISSING, _segments, _stable_order  # noqa: F401
from ci_triage.model import DurationBaseline, Job


def _median(values: np.ndarray) -> float:
    """statistics.median: the middle value, or the mean of the two middle values."""
    middle = len(values) // 2
    if len(values) % 2:
        return float(np.partition(values, middle)[middle])
    pair = np.partition(values, (middle - 1, middle))
    return float((pair[middle - 1] + pair[middle]) / 2)


def _baselines(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The baseline of every job name: median and median absolute deviation (statistics.median's
    arithmetic) of successful runs' durations, zero durations left out."""
    success = frame.conclusions.index("success") if "success" in frame.conclusions else -2
    duration = frame.end - frame.start  # meaningless where a time is missing: masked out below
    done = (frame.conclusion == success) & (frame.start != MISSING) & (frame.end != MISSING) & (duration != 0)
    ticks, names = duration[done], frame.name[done]
    low = int(ticks.min()) if len(ticks) else 0
    width = int(ticks.max()) - low + 1 if len(ticks) else 1
    first_name = int(names.min(initial=0))
    bits = width.bit_length()
    name_bits = (int(names.max(initial=0)) - first_name + 1).bit_length()
    if name_bits + bits <= 63:  # one sort of (name, duration), in an int32 when it fits
        narrow = np.int32 if name_bits + bits <= 31 else np.int64
        key = np.subtract(names, first_name, out=np.empty(len(names), dtype=narrow), casting="unsafe")
        key <<= bits
        key |= np.subtract(ticks, low, out=np.empty(len(ticks), dtype=narrow), casting="unsafe")
        key.sort()
        names = (key >> bits).astype(np.int64) + first_name
        ticks = (key & ((1 << bits) - 1)).astype(np.int64) + low
    else:
        order = np.lexsort((ticks, names))
        names, ticks = names[order], ticks[order]
    seconds = ticks / frame.ticks_per_second  # sorted within each name, as ticks are
    starts, ends = _segments(names)
    if len(starts) > 4096:  # many names: one grouped pass beats a loop of small partitions
        import pandas as pd

        durations = pd.DataFrame({"name": names, "seconds": seconds})
        grouped = durations.groupby("name", sort=True)["seconds"]
        median = grouped.median()
        spread = (durations["seconds"] - grouped.transform("median")).abs().groupby(durations["name"]).median()
        return (median.index.to_numpy(dtype=np.int64), grouped.size().to_numpy(dtype=np.int64),
                median.to_numpy(dtype=np.float64), spread.to_numpy(dtype=np.float64))
    middle = starts + (ends - starts) // 2
    odd = (ends - starts) % 2 == 1
    medians = np.where(odd, seconds[middle], (seconds[np.maximum(middle - 1, 0)] + seconds[middle]) / 2) \
        if len(starts) else np.zeros(0)
    spreads = np.array([_median(np.abs(seconds[a:b] - m)) for a, b, m in zip(starts, ends, medians)],
                       dtype=np.float64)
    return names[starts].astype(np.int64), (ends - starts).astype(np.int64), medians, spreads


def baselines_by_name(frame) -> dict[int, DurationBaseline]:
    """The baseline of every job name that has one, by name code (its label is frame.names[code])."""
    codes, samples, medians, spreads = _baselines(frame)
    return {int(code): DurationBaseline(frame.names[code] if code < len(frame.names) else str(code), int(n),
                                        float(median), float(spread))
            for code, n, median, spread in zip(codes, samples, medians, spreads)}


def died_early(job: Job, baseline: DurationBaseline | None, ratio: float = 0.85) -> bool:
    """A failure well below the usual duration: it died before doing the real work."""
    if baseline is None or baseline.samples < 2 or job.duration_s is None:
        return False
    return job.duration_s < baseline.median_s * ratio and job.duration_s < baseline.median_s - 2 * baseline.spread_s


def died_early_of(frame, failed: np.ndarray, baseline_name: np.ndarray, baseline_samples: np.ndarray,
                  baseline_median_s: np.ndarray, baseline_spread_s: np.ndarray, ratio: float = 0.85) -> np.ndarray:
    """died_early for the failed jobs (positions) against the per-name baselines, at once."""
    if not len(baseline_name):
        return np.zeros(len(failed), dtype=bool)
    start, end, name = frame.start[failed], frame.end[failed], frame.name[failed]
    known = (start != MISSING) & (end != MISSING)
    duration = np.where(known, end - start, 0) / frame.ticks_per_second
    first, span = int(baseline_name[0]), int(baseline_name[-1]) - int(baseline_name[0]) + 1
    if span <= 4 * len(baseline_name) + 4096:  # a table of name codes beats a search per job
        table = np.zeros(span, dtype=np.int64)
        table[baseline_name - first] = np.arange(len(baseline_name))
        at = table[np.clip(name - first, 0, span - 1)]
    else:
        at = np.minimum(np.searchsorted(baseline_name, name), len(baseline_name) - 1)
    found = baseline_name[at] == name
    median, spread = baseline_median_s[at], baseline_spread_s[at]
    return found & known & (baseline_samples[at] >= 2) & (duration < median * ratio) & (
        duration < median - 2 * spread)
